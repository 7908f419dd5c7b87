"""Talk modes: when the microphone is open (sans-IO: no asyncio, livekit or textual).

* ``always``: the microphone is open for the whole call (echo-cancelled); today's default.
* ``toggle``: the call starts with the microphone closed; one key opens it, the same key
  closes it.
* ``push``: the microphone is open while a key is held. That needs the terminal to report
  key releases (the kitty keyboard protocol's event types); where it cannot, the front end
  says so once and the mode works as ``toggle``.

Opening the microphone unmutes it and sends ``user.activity``; closing it mutes the
published track, as the web SDK's ``setMicMuted(true)`` does (livekit's track mute: the
track stays published, the server is told it is muted and the sender goes silent), so the
agent's voice-activity detector hears the end of speech and ends the user's turn.

:class:`TalkControl` is driven by a front end's key presses and releases and drives a
session through :class:`MicControl`; :class:`KittyKeys` is the pure part of reading key
releases off the terminal's input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal, Protocol

TalkMode = Literal["always", "toggle", "push"]
"""When the microphone is open: the whole call, toggled by a key, or while a key is held."""


TALK_MODES: Final[tuple[TalkMode, ...]] = ("always", "toggle", "push")
"""Every talk mode, in the order the help lists them."""

NO_MIC: Final = "There is no microphone: nothing to mute (type your messages)."
"""What mute says when there is no microphone (the TUI's toast, line mode's /mute)."""
NO_MIC_TALK: Final = "There is no microphone to talk into (type your messages)."
"""What the talk key (``/talk``) says when there is no microphone."""
NO_RELEASE: Final = (
    "This terminal does not report key releases, so push-to-talk cannot work here: "
    "{key} now toggles the microphone instead (press to talk, press again to stop)."
)
"""The one notice when push-to-talk falls back to toggle (``{key}``: the talk key)."""


class _Muted(Protocol):
    @property
    def muted(self) -> bool: ...


class MicControl(Protocol):
    """What :class:`TalkControl` needs of a session (:class:`fishtalk.engine.session.Session`)."""

    @property
    def state(self) -> _Muted:
        """The conversation snapshot (only ``muted`` is read)."""
        ...

    def set_muted(self, muted: bool) -> None:
        """Mute or unmute the microphone."""
        ...

    def activity(self) -> None:
        """Send ``user.activity`` (throttled by the session)."""
        ...


@dataclass(frozen=True, slots=True)
class MicLook:
    """How the microphone's state reads in a status bar or a line."""

    open: bool
    text: str


class TalkControl:
    """Opens and closes a session's microphone as the talk mode says.

    Construct it before the session runs: in ``toggle`` and ``push`` the call starts with
    the microphone closed. ``key`` is the talk key's display name (for the hints).
    """

    def __init__(self, session: MicControl, mode: TalkMode = "always", *, key: str = "F5") -> None:
        self._session = session
        self.mode: TalkMode = mode
        """The mode asked for."""
        self.key = key
        self._effective: TalkMode = mode
        self._releases: bool | None = None
        self._fell_back = False
        if mode != "always":
            session.set_muted(True)

    @property
    def effective(self) -> TalkMode:
        """The mode in force: ``push`` becomes ``toggle`` without key releases."""
        return self._effective

    @property
    def keyed(self) -> bool:
        """Whether the talk key means anything (not in ``always``)."""
        return self._effective != "always"

    @property
    def is_open(self) -> bool:
        """Whether the microphone is open now."""
        return not self._session.state.muted

    @property
    def releases(self) -> bool | None:
        """Whether the terminal reports key releases (None: not known yet)."""
        return self._releases

    def open(self) -> None:
        """Open the microphone and tell the agent the user is active."""
        if not self.is_open:
            self._session.set_muted(False)
            self._session.activity()

    def close(self) -> None:
        """Close the microphone (the agent hears the end of speech)."""
        if self.is_open:
            self._session.set_muted(True)

    def toggle(self) -> None:
        """Open a closed microphone, close an open one (``/talk``, the toggle key)."""
        if self.is_open:
            self.close()
        else:
            self.open()

    def press(self) -> None:
        """The talk key went down (a key repeat must not come here)."""
        if self._effective == "push":
            self.open()
        elif self._effective == "toggle":
            self.toggle()

    def release(self) -> None:
        """The talk key came up (only terminals that report releases send this)."""
        if self._effective == "push":
            self.close()

    def releases_known(self, supported: bool) -> str | None:
        """Record whether the terminal reports key releases; the notice to show once when
        push-to-talk falls back to toggle, else None."""
        self._releases = supported
        if supported or self.mode != "push" or self._fell_back:
            return None
        self._fell_back = True
        self._effective = "toggle"
        return NO_RELEASE.format(key=self.key)

    def look(self, *, line_mode: bool = False) -> MicLook:
        """The microphone's state, big and clear: ``● TALKING`` or how to start."""
        if self.is_open:
            if line_mode:
                return MicLook(True, "● TALKING — /talk to stop")
            if self._effective == "push":
                return MicLook(True, "● TALKING")
            if self._effective == "toggle":
                return MicLook(True, f"● TALKING ({self.key} stops)")
            return MicLook(True, "● mic open")
        if line_mode:
            return MicLook(False, "mic closed — /talk to talk")
        if self._effective == "push":
            return MicLook(False, f"mic closed — hold {self.key} to talk")
        if self._effective == "toggle":
            return MicLook(False, f"mic closed — press {self.key} to talk")
        return MicLook(False, "mic muted")


# --- key releases from the terminal (the kitty keyboard protocol) -------------------------

REPORT_EVENT_TYPES: Final = 0b10
"""The kitty keyboard protocol's "report event types" flag (presses, repeats, releases)."""
ASK_FOR_RELEASES: Final = f"\x1b[={REPORT_EVENT_TYPES};2u\x1b[?u\x1b[c"
"""Add the event-types flag to the terminal's current kitty flags (mode 2: set these bits,
keep the others), ask for the flags now in force, then for the primary device attributes.
A terminal without the protocol answers only the last; the next pop of the flags (Textual's
on exit) takes ours away too."""

KeyKind = Literal["press", "repeat", "release"]

_KITTY_KEY: Final = re.compile(r"\x1b\[([\d:]*)(?:;([\d:]*))?(?:;([\d:]*))?([u~ABCDEFHPQRS])")
_KINDS: Final[dict[str, KeyKind]] = {"2": "repeat", "3": "release"}
_FLAGS_REPLY: Final = re.compile(r"\x1b\[\?(\d+)u")
_DEVICE_REPLY: Final = re.compile(r"\x1b\[\?[\d;]*c")
_PARTIAL: Final = re.compile(r"\x1b(\[[\d:;?]*)?$")
"""A sequence cut off at the end of a chunk (kept for the next one, or :meth:`flush`)."""


@dataclass(frozen=True, slots=True)
class KeyEvent:
    """A key the terminal reported with its event type; ``press`` is the sequence to hand
    on as a key press (the event type taken out)."""

    kind: KeyKind
    press: str


@dataclass(frozen=True, slots=True)
class Support:
    """The terminal's answer: whether it reports key releases."""

    releases: bool


class KittyKeys:
    """Splits terminal input into what the key parser should see and what is ours.

    Feed it decoded input; it returns the text for the key parser (presses and repeats as
    plain presses: repeats type characters too) and the events: every key with its kind,
    and one :class:`Support` once the terminal has answered :data:`ASK_FOR_RELEASES`.
    Releases never reach the key parser (Textual's does not know the event-type field).
    """

    def __init__(self) -> None:
        self._buffer = ""
        self._flags: int | None = None
        self._answered = False

    @property
    def answered(self) -> bool:
        """Whether the terminal has answered the question yet."""
        return self._answered

    def feed(self, text: str) -> tuple[str, list[KeyEvent | Support]]:
        """Process ``text``; an escape sequence cut at the end waits for the next chunk."""
        data = self._buffer + text
        self._buffer = ""
        partial = _PARTIAL.search(data)
        if partial is not None:
            self._buffer = data[partial.start() :]
            data = data[: partial.start()]
        out: list[str] = []
        found: list[KeyEvent | Support] = []
        index = 0
        while True:
            start = data.find("\x1b[", index)
            if start < 0:
                out.append(data[index:])
                break
            out.append(data[index:start])
            index = self._one(data, start, out, found)
        return "".join(out), found

    def flush(self) -> str:
        """What is held back, when no more input came (a lone Esc is the Esc key)."""
        held, self._buffer = self._buffer, ""
        return held

    def _one(self, data: str, start: int, out: list[str], found: list[KeyEvent | Support]) -> int:
        """Handle the sequence at ``start``; return where to go on."""
        if (match := _FLAGS_REPLY.match(data, start)) is not None:
            self._flags = int(match.group(1))
            return match.end()
        if (match := _DEVICE_REPLY.match(data, start)) is not None:
            if not self._answered:
                self._answered = True
                flags = self._flags
                found.append(Support(flags is not None and bool(flags & REPORT_EVENT_TYPES)))
            return match.end()
        match = _KITTY_KEY.match(data, start)
        if match is None:
            out.append("\x1b[")
            return start + 2
        code, modifiers, text, end = match.group(1), match.group(2), match.group(3), match[4]
        kind: KeyKind = "press"
        if modifiers is not None and ":" in modifiers:
            modifiers, _, event = modifiers.partition(":")
            kind = _KINDS.get(event, "press")
        fields = [code]
        if modifiers is not None or text is not None:
            fields.append(modifiers or "1")
        if text is not None:
            fields.append(text)
        press = "\x1b[" + ";".join(fields) + end
        if kind != "release":
            out.append(press)
        found.append(KeyEvent(kind, press))
        return match.end()


__all__ = [
    "ASK_FOR_RELEASES",
    "NO_MIC",
    "NO_MIC_TALK",
    "NO_RELEASE",
    "REPORT_EVENT_TYPES",
    "TALK_MODES",
    "KeyEvent",
    "KittyKeys",
    "MicControl",
    "MicLook",
    "Support",
    "TalkControl",
    "TalkMode",
]
