"""``fishtalk demo``: the simulator in a background thread and a call to its agent.

Checks that WebRTC has a network (:func:`has_webrtc_network`), starts the sim
(:class:`SimStartError` when it cannot) and runs the chosen front end against it.
"""

from __future__ import annotations

import contextlib
import gc
import socket
import struct
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from fishtalk.cli.exits import EXIT_CONNECTION
from fishtalk.core.errors import SimStartError

if TYPE_CHECKING:
    from fishtalk.cli.settings import Settings
    from fishtalk.engine.api import LiveKitGrant
    from fishtalk.engine.metrics import MetricsFile
    from fishtalk.sim.fish.scenario import Scenario
    from fishtalk.sim.runner import SimInfo, SimThread
from fishtalk.cli.front_ends import run_plain, run_tui, wants_tui
from fishtalk.cli.launch import JournalChoice, session_request

DEMO_AGENT: Final = "demo"
"""The sim's built-in demo scenario (also its agent id)."""

DEMO_BUILTINS: Final = ("get_local_context", "notify")
"""Built-in tools the demo enables unless the user's config declares that name itself."""

NO_WEBRTC_NETWORK: Final = (
    "fishtalk demo needs a network interface other than loopback: WebRTC ignores 127.0.0.1, "
    "and this host has no other IPv4 address (inside a sandbox, run it through "
    f"`{sys.executable} -m fishtalk.sim.netns -- {sys.executable} -m fishtalk demo`)."
)
"""The no-network hint; the command names this interpreter by its full path, so it works
from a venv that was never activated."""

_SIOCGIFADDR: Final = 0x8915


def has_webrtc_network() -> bool:
    """Whether any non-loopback interface has an IPv4 address (Linux; True elsewhere).

    libwebrtc never gathers candidates on loopback, so without such an interface a local
    connection can only time out. Asks the kernel only: no packet is sent.
    """
    if not sys.platform.startswith("linux"):
        return True
    import fcntl  # POSIX only: never imported at module level (Windows has none)

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


STARTING_SIM: Final = "Starting the simulated agent…"
"""What the demo's TUI shows while the sim starts behind it."""


class _BackgroundSim:
    """The demo's simulator, started on a worker thread when the session asks for a grant,
    so the TUI draws its first frame before the sim's heavy imports (aiortc...)."""

    def __init__(self, scenario: Scenario | str) -> None:
        self._scenario = scenario
        self._sim: SimThread | None = None
        self._settled = threading.Event()

    def start(self) -> SimInfo:
        """Import and start the sim (blocking); raises SimStartError."""
        try:
            from fishtalk.sim.runner import SimThread

            scenario = self._scenario
            if isinstance(scenario, str):  # a built-in, loaded behind the first frame
                from fishtalk.sim.fish.scenario import builtin_scenario

                scenario = builtin_scenario(scenario)
            self._sim = SimThread(scenario)
            try:
                return self._sim.start()
            except (OSError, TimeoutError) as exc:
                raise SimStartError(f"the simulator could not start: {exc}") from None
        finally:
            self._settled.set()

    def stop(self) -> None:
        """Stop the sim, once a start under way has settled."""
        if self._sim is None and not self._settled.is_set():
            return  # never asked to start
        self._settled.wait(30)
        if self._sim is not None:
            with contextlib.suppress(Exception):
                self._sim.stop()


FIRST_FRAME_WAIT: Final = 5.0
"""The longest the sim start waits for the TUI's first frame."""


@dataclass(frozen=True, slots=True)
class _DemoGrant:
    """A grant source that starts the sim once the TUI's first frame is drawn (``after``,
    if given), then creates the session on it."""

    sim: _BackgroundSim
    settings: Settings
    after: threading.Event | None = None

    async def obtain(self) -> LiveKitGrant:
        from fishtalk.engine.aio import in_daemon_thread

        after = self.after
        if after is not None and not after.is_set():
            await in_daemon_thread(lambda: after.wait(FIRST_FRAME_WAIT), name="fishtalk-frame")
        gc.enable()  # held off by run_demo until the first frame
        info = await in_daemon_thread(self.sim.start, name="fishtalk-sim-start")
        # Imported behind the first frame too (httpx).
        from fishtalk.engine.api import SessionClient
        from fishtalk.engine.session import CreateSession

        timeout = self.settings.api.timeout
        client = SessionClient(info.api_url, api_key=info.dev_key, timeout=timeout)
        return await CreateSession(client, session_request(self.settings)).obtain()


def run_demo(
    load: Callable[[dict[str, object]], Settings],
    *,
    scenario: str | Path = DEMO_AGENT,
    journal: JournalChoice | None = None,
    metrics: MetricsFile | None = None,
    latency: bool = False,
) -> int:
    """Start the sim in-process with its demo scenario and open the TUI on it (line mode
    when stdin/stdout are not a terminal or ``ui.plain`` is set); the exit code.

    ``load`` builds settings from dotted overrides (the CLI's ``load``), so the user's
    config still applies (keys, audio devices) while the API points at the sim.
    ``scenario`` is a built-in name (``demo``, ``converse``) or a scenario TOML file; a bad
    one raises :class:`~fishtalk.core.errors.ScenarioError` (one line, exit 2) before
    anything starts. In the TUI the sim starts behind the first frame, which says so.
    """
    chosen: Scenario | str = DEMO_AGENT
    if scenario != DEMO_AGENT:
        # Anything but the built-in demo is read and checked now (a bad file: exit 2 before
        # anything starts). The demo itself ships with fishtalk and is parsed on the sim's
        # worker thread, behind the first frame (its module stands on the sim package).
        from fishtalk.sim.fish.scenario import load_scenario

        chosen = load_scenario(scenario)
    if not has_webrtc_network():
        sys.stderr.write(f"fishtalk: {NO_WEBRTC_NETWORK}\n")
        return EXIT_CONNECTION
    sim = _BackgroundSim(chosen)
    # Until the first frame (the TUI, textual's imports) Python allocates a great deal and
    # frees little: cyclic collections then only cost time (about a tenth of it).
    gc.disable()
    try:
        # The API settings are the sim's, known once it runs; everything else is the user's.
        settings = demo_settings(load, "http://127.0.0.1", "sim")
        events = journal is not None and journal.events is not None
        if not wants_tui(settings.ui.plain) or events:
            # Piped or --plain in the config: the same tour in line mode, sim first.
            gc.enable()
            try:
                info = sim.start()
            except SimStartError as exc:
                sys.stderr.write(f"fishtalk: {exc}\n")
                return EXIT_CONNECTION
            return run_plain(
                demo_settings(load, info.api_url, info.dev_key),
                journal=journal,
                metrics=metrics,
                latency=latency,
            )
        name = chosen if isinstance(chosen, str) else chosen.name
        title = f"{name} (simulated agent)"
        drawn = threading.Event()
        grant = _DemoGrant(sim, settings, after=drawn)
        return run_tui(
            settings,
            title=title,
            grant=grant,
            note=STARTING_SIM,
            first_frame=drawn,
            journal=journal,
            metrics=metrics,
        )
    finally:
        gc.enable()
        sim.stop()
