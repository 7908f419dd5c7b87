"""Key releases for push-to-talk: a Textual driver that asks the terminal for them.

Textual (8.x) turns on the kitty keyboard protocol but not its event types, and its key
parser does not read the event-type field. :func:`driver_class` gives a driver (Linux and
macOS) that adds the event-types flag, asks whether the terminal took it, hands key
presses and repeats to Textual's own parser as presses, and posts :class:`KeyReleased`
and, once, :class:`ReleaseSupport` to the app. The pure part is
:class:`fishtalk.core.talk.KittyKeys`. On Windows, or wherever this driver is not used, no
:class:`ReleaseSupport` arrives and the app decides after :data:`ANSWER_WAIT` seconds.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final

from textual.message import Message

from fishtalk.core.talk import ASK_FOR_RELEASES, KeyEvent, KittyKeys, Support

if TYPE_CHECKING:
    from textual.driver import Driver

ANSWER_WAIT: Final = 2.0
"""Seconds the app waits for the terminal's answer before taking it as "no releases"."""


class KeyReleased(Message):
    """A key came up (``key``: Textual's name for it, e.g. ``f2``)."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key


class ReleaseSupport(Message):
    """Whether the terminal reports key releases (its answer, or the lack of one)."""

    def __init__(self, supported: bool) -> None:
        super().__init__()
        self.supported = supported


def key_name(press: str) -> str | None:
    """Textual's name for the key a press sequence stands for."""
    from textual._xterm_parser import XTermParser

    for event in XTermParser().feed(press):
        key = getattr(event, "key", None)
        if isinstance(key, str):
            return key
    return None


def driver_class() -> type[Driver] | None:
    """The release-reporting driver for this platform (None on Windows)."""
    if sys.platform == "win32":
        return None
    return _linux_driver()


def _linux_driver() -> type[Driver]:
    import os
    import selectors
    from codecs import getincrementaldecoder

    from textual._xterm_parser import XTermParser
    from textual.drivers.linux_driver import LinuxDriver

    class ReleaseDriver(LinuxDriver):
        """Textual's Linux driver, plus the kitty protocol's key event types."""

        def start_application_mode(self) -> None:
            super().start_application_mode()  # type: ignore[no-untyped-call]  # Textual leaves it untyped
            self.write(ASK_FOR_RELEASES)
            self.flush()

        def run_input_thread(self) -> None:
            keys = KittyKeys()
            parser = XTermParser(self._debug)
            decode = getincrementaldecoder("utf-8")().decode
            selector = selectors.SelectSelector()
            selector.register(self.fileno, selectors.EVENT_READ)

            def parse(text: str) -> None:
                if not text:
                    return  # an empty feed is the parser's end of file
                for event in parser.feed(text):
                    self.process_message(event)

            def ours(found: list[KeyEvent | Support]) -> None:
                for item in found:
                    if isinstance(item, Support):
                        self._app.post_message(ReleaseSupport(item.releases))
                    elif item.kind == "release":
                        name = key_name(item.press)
                        if name is not None:
                            self._app.post_message(KeyReleased(name))

            try:
                while not self.exit_event.is_set():
                    ready = selector.select(0.1)
                    if not ready:
                        parse(keys.flush())
                    for _key, mask in ready:
                        if not mask & selectors.EVENT_READ:
                            continue
                        data = decode(os.read(self.fileno, 4096))
                        if not data:
                            continue
                        text, found = keys.feed(data)
                        parse(text)
                        ours(found)
                    for event in parser.tick():
                        self.process_message(event)
            finally:
                selector.close()

    return ReleaseDriver


__all__ = ["ANSWER_WAIT", "KeyReleased", "ReleaseSupport", "driver_class", "key_name"]
