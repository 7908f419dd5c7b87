"""Entry points that put a session on screen: ``fishtalk chat`` (TUI) and ``fishtalk demo``.

The CLI imports this module inside its command bodies (it pulls in textual and livekit).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import socket
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from fishtalk.errors import EXIT_CONNECTION

if TYPE_CHECKING:
    from fishtalk.config import Settings
    from fishtalk.tools.registry import ApprovalRequest
    from fishtalk.tools.runner import ToolRunner
    from fishtalk.tui.app import FishtalkApp

DEMO_AGENT: Final = "demo"
"""The sim's built-in demo scenario (also its agent id)."""

NO_WEBRTC_NETWORK: Final = (
    "fishtalk demo needs a network interface other than loopback: WebRTC ignores 127.0.0.1, "
    "and this host has no other IPv4 address (inside a sandbox, run it through "
    "`python -m fishtalk.sim.netns -- fishtalk demo`)."
)

_SIOCGIFADDR: Final = 0x8915


def has_webrtc_network() -> bool:
    """Whether any non-loopback interface has an IPv4 address (Linux; True elsewhere).

    libwebrtc never gathers candidates on loopback, so without such an interface a local
    connection can only time out. Asks the kernel only: no packet is sent.
    """
    if not sys.platform.startswith("linux"):
        return True
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return True
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for name in names:
            if name == "lo":
                continue
            request = struct.pack("256s", name.encode()[:15])
            try:
                answer = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, request)
            except OSError:
                continue  # no IPv4 address on this interface
            address = socket.inet_ntoa(answer[20:24])
            if not address.startswith("127."):
                return True
    return False


def wants_tui(
    plain: bool | None, *, stdin: TextIO | None = None, stdout: TextIO | None = None
) -> bool:
    """Whether ``fishtalk chat`` opens the TUI: not asked for plain mode, and both ends of
    the conversation are a terminal (pipes and redirects keep the line mode)."""
    if plain:
        return False
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    try:
        return stdin.isatty() and stdout.isatty()
    except ValueError:  # a closed stream
        return False


class _AppLink:
    """Lets tools built before the app reach it once it runs (toasts, approval, clipboard)."""

    def __init__(self) -> None:
        self.app: FishtalkApp | None = None

    def notify(self, title: str, message: str) -> None:
        if self.app is not None:
            from fishtalk.tui.safe import clean

            self.app.notify(clean(message), title=clean(title), markup=False)

    def copy(self, text: str) -> None:
        if self.app is None:
            raise RuntimeError("no terminal to copy to")
        self.app.copy_to_clipboard(text)

    async def approve(self, request: ApprovalRequest) -> bool:
        if self.app is None:
            return False
        from fishtalk.tui.screens.approve import ApprovalScreen

        app = self.app
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def settle(value: bool | None) -> None:
            if not answer.done():
                answer.set_result(bool(value))

        screen = ApprovalScreen(request)
        app.push_screen(screen, callback=settle)
        try:
            return await answer
        finally:
            # Timed out or cancelled (which cancels ``answer`` too): take the question away.
            # (Under another screen it stays; a late y/n there is ignored.)
            unanswered = not answer.done() or answer.cancelled()
            if unanswered and app.screen is screen:
                screen.dismiss(False)


def _tool_runner(settings: Settings, link: _AppLink) -> ToolRunner:
    from fishtalk.tools.build import build_runner
    from fishtalk.tools.builtins import BuiltinOptions

    options = BuiltinOptions(on_notify=link.notify, clipboard=link.copy)
    return build_runner(settings, approver=link.approve, options=options)


def run_tui(settings: Settings, *, title: str = "") -> int:
    """Run one session in the full-screen TUI; return the process exit code."""
    from fishtalk.config import ConfigError
    from fishtalk.session import Session
    from fishtalk.tui import keys
    from fishtalk.tui.app import FishtalkApp

    try:
        keys.keymap(settings.ui.keys)
    except ValueError as exc:
        raise ConfigError(f"[ui.keys]: {exc}") from None
    link = _AppLink()
    session = Session(settings, tools=_tool_runner(settings, link))
    app = FishtalkApp(
        session,
        title=title or (settings.session.agent_id or ""),
        keymap=settings.ui.keys,
    )
    link.app = app
    from fishtalk.native import stderr_to_log

    # C libraries (PortAudio, ALSA, WebRTC) write to fd 2 on device trouble; on the drawn
    # screen that is garbage, so it goes to a log while the app runs (report_end's line
    # below reaches the real stderr again).
    with stderr_to_log("tui"):
        app.run()
    code = app.return_code
    report_end(app)
    return code if code is not None else EXIT_CONNECTION


def report_end(
    app: FishtalkApp, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> None:
    """Leave one plain line on the normal screen once the app has exited.

    The full-screen summary went away with the alternate screen, so the terminal's
    scrollback says how the call went: stdout when it ended well, stderr when it failed
    or was interrupted (as the line mode does).
    """
    from fishtalk.tui.safe import clean

    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    summary = app.summary
    finished = app.finished
    if app.interrupted:
        detail = f" · {summary.stats()}" if summary and summary.connected else ""
        stderr.write(f"fishtalk: interrupted; hung up{detail}\n")
    elif summary is not None:
        out = stdout if summary.exit_code == 0 else stderr
        out.write(f"fishtalk: {summary.line()}\n")
    elif finished is not None:
        text = finished.error or finished.message or finished.reason
        (stdout if finished.exit_code == 0 else stderr).write(f"fishtalk: {clean(text)}\n")
    else:
        return
    stdout.flush()
    stderr.flush()


DEMO_BUILTINS: Final = ("get_local_context", "notify")
"""Built-in tools the demo enables unless the user's config declares that name itself."""


def demo_settings(
    load: Callable[[dict[str, object]], Settings], api_url: str, dev_key: str
) -> Settings:
    """The user's settings (config file, environment, flags: keys, audio, declared tools)
    pointed at the sim, plus the harmless built-ins the tour calls.

    A name the user declared (say their own ``notify`` command) keeps their declaration:
    forcing ``builtin = true`` onto a command would be a config error.
    """
    base: dict[str, object] = {
        "api.url": api_url,
        "api.api_key": dev_key,
        "api.public": False,
        "session.agent_id": DEMO_AGENT,
    }
    settings = load(base)
    missing = {
        f"tools.{name}.builtin": True for name in DEMO_BUILTINS if name not in settings.tools
    }
    return load({**base, **missing}) if missing else settings


def run_demo(
    load: Callable[[dict[str, object]], Settings], *, scenario: str | Path = DEMO_AGENT
) -> int:
    """Start the sim in-process with its demo scenario and open the TUI on it (line mode
    when stdin/stdout are not a terminal or ``ui.plain`` is set).

    ``load`` builds settings from dotted overrides (the CLI's ``load``), so the user's
    config still applies (keys, audio devices) while the API points at the sim.
    ``scenario`` is a built-in name (``demo``, ``converse``) or a scenario TOML file; a bad
    one raises :class:`~fishtalk.sim.fish.scenario.ScenarioError` (one line, exit 2) before
    anything starts.
    """
    from fishtalk.sim.fish.scenario import load_scenario

    chosen = load_scenario(scenario)
    if not has_webrtc_network():
        sys.stderr.write(f"fishtalk: {NO_WEBRTC_NETWORK}\n")
        return EXIT_CONNECTION
    from fishtalk.sim import SimThread

    sim = SimThread(chosen)
    try:
        info = sim.start()
    except (OSError, TimeoutError) as exc:
        sys.stderr.write(f"fishtalk: the simulator could not start: {exc}\n")
        return EXIT_CONNECTION
    try:
        settings = demo_settings(load, info.api_url, info.dev_key)
        if not wants_tui(settings.ui.plain):
            # Piped or --plain in the config: the same tour in line mode.
            from fishtalk.plain import run_plain

            return run_plain(settings)
        title = "demo (simulated agent)"
        if chosen.name != DEMO_AGENT:
            title = f"{chosen.name} (simulated agent)"
        return run_tui(settings, title=title)
    finally:
        with contextlib.suppress(Exception):
            sim.stop()


__all__ = [
    "DEMO_AGENT",
    "DEMO_BUILTINS",
    "NO_WEBRTC_NETWORK",
    "demo_settings",
    "has_webrtc_network",
    "report_end",
    "run_demo",
    "run_tui",
    "wants_tui",
]
