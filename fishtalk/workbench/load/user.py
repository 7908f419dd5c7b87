"""The Locust user that runs a fishtalk test file's conversation, and its command-line
options (``--fishtalk-*``, which a Locust master hands to its workers).

Each user loops: open a session on the engine's thread (:mod:`.bridge`), run the file's
turns through :func:`~fishtalk.workbench.agenttest.runner.run_test` (the same runner and
engine as ``fishtalk test`` and ``chat``), then report the session start, each turn and the
whole session as Locust requests (:mod:`.requests`). A user starts a session at most once
every ``--fishtalk-pace`` seconds, and a process opens at most ``--fishtalk-max-sessions``.

The master (or a lone process) reads the test file and passes its text on in the options,
so workers on other machines need only the locustfile (spoken turns' WAV files excepted:
they must sit at the same path on the workers).

With ``--fishtalk-livekit-url`` the users join LiveKit rooms directly, with no session API
(:meth:`~fishtalk.engine.parts.LiveKitTarget.one_of_many`): minting with
``$LIVEKIT_API_KEY`` / ``$LIVEKIT_API_SECRET``, every session joins a room of its own,
``--fishtalk-livekit-room`` and a suffix, as a participant of its own; a token (in the
environment, one participant) allows one user. Secrets stay in each process's environment:
the master never sends them to its workers.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from locust import User, events
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from fishtalk.core.errors import FishtalkError
from fishtalk.engine.parts import ENV_LIVEKIT_TOKEN
from fishtalk.workbench.load.bridge import EngineThread, hub_poster, wait_green
from fishtalk.workbench.load.csvfinal import write_before_closing
from fishtalk.workbench.load.plan import DEFAULT_PACE, MAX_SESSIONS_AGENT, LoadPlan
from fishtalk.workbench.load.requests import Request, failed_start, start_request, turn_requests

if TYPE_CHECKING:
    from locust.env import Environment

    from fishtalk.agent_session import AgentSession
    from fishtalk.engine.parts import LiveKitTarget
    from fishtalk.workbench.agenttest.results import TestResult
    from fishtalk.workbench.agenttest.runner import Target
    from fishtalk.workbench.agenttest.spec import TestFile

_log = logging.getLogger(__name__)

ENGINE: Final = EngineThread()
"""This process's engine thread (started by the first session)."""


class LoadFailure(Exception):
    """Why a request failed (Locust groups failures by it)."""


class _Budget:
    """This process's sessions, against ``--fishtalk-max-sessions``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.opened = 0

    def take(self, cap: int) -> bool:
        with self._lock:
            if self.opened >= cap:
                return False
            self.opened += 1
            return True


BUDGET: Final = _Budget()


def _options(parser: Any) -> None:
    # Locust's own parser (not a group): only it knows include_in_web_ui.
    group = parser
    group.add_argument("--fishtalk-test", metavar="FILE", default="", help="The test file.")
    group.add_argument(
        "--fishtalk-test-text", default="", include_in_web_ui=False, help="(set by the master)"
    )
    group.add_argument("--fishtalk-agent", metavar="ID", default="", help="The agent id.")
    group.add_argument(
        "--fishtalk-api-url", metavar="URL", default="", help="The session API's base URL."
    )
    group.add_argument(
        "--fishtalk-livekit-url",
        metavar="URL",
        default="",
        help="Join rooms of this LiveKit server directly (no session API; key and secret "
        "from $LIVEKIT_API_KEY / $LIVEKIT_API_SECRET, or a token from $"
        f"{ENV_LIVEKIT_TOKEN}).",
    )
    group.add_argument(
        "--fishtalk-livekit-room",
        metavar="NAME",
        default="",
        help="Minting, each session joins a room of its own: NAME- and 8 hex digits.",
    )
    group.add_argument(
        "--fishtalk-livekit-protocol",
        metavar="fish|livekit-agents",
        default="",
        help="What the agent speaks (default: told from the agent participant).",
    )
    group.add_argument(
        "--fishtalk-pace",
        type=float,
        default=DEFAULT_PACE,
        help="Seconds between the starts of one user's sessions, at the least.",
    )
    group.add_argument(
        "--fishtalk-max-sessions",
        type=int,
        default=MAX_SESSIONS_AGENT,
        help="Refuse a run that could open more sessions (and stop opening them past it).",
    )


def _init(environment: Environment, **_kwargs: object) -> None:
    options = environment.parsed_options
    if options is None or isinstance(environment.runner, WorkerRunner):
        return
    from fishtalk.workbench.agenttest.spec import load_test

    try:
        if not options.fishtalk_test:
            raise FishtalkError("no test file: pass --fishtalk-test FILE")
        options.fishtalk_test_text = Path(options.fishtalk_test).read_text("utf-8")
        load_test(options.fishtalk_test)
        livekit = _livekit(options)
        if livekit is not None:
            livekit.check_at_once(options.num_users or 1)
        if options.run_time and options.num_users:
            plan = LoadPlan(
                options.fishtalk_agent or "?",
                options.num_users,
                options.run_time,
                options.fishtalk_pace,
                options.fishtalk_max_sessions,
                sim=True,  # the real-agent guards are fishtalk load's
            )
            plan.check()
    except (OSError, FishtalkError) as exc:
        sys.stderr.write(f"fishtalk: {exc}\n")
        sys.exit(2)


def _quit(exit_code: int = 0, **_kwargs: object) -> None:
    # After Locust stopped the users: give their sessions time to hang up.
    ENGINE.close()
    _exit_code.append(exit_code)


_exit_code: list[int] = []


def _leave_without_finalizing() -> None:
    """The last exit handler (registered at import, so Locust's own run first): once the
    engine ran here, leave as ``fishtalk`` does (:func:`~fishtalk.engine.native.exit_process`),
    since livekit's native threads can abort a finalizing interpreter."""
    if ENGINE.used and _exit_code:
        from fishtalk.engine.native import exit_process

        exit_process(_exit_code[-1])


atexit.register(_leave_without_finalizing)


events.init_command_line_parser.add_listener(_options)
events.init.add_listener(_init)
events.quit.add_listener(_quit)


def _graceful_master(environment: Environment, **_kwargs: object) -> None:
    """A master's quit (run time over, Ctrl-C) first stops the test as the web UI's Stop
    does: the workers finish their sessions (within ``--stop-timeout``) and report them, so
    the master's totals hold every session (its plain quit waits half a second)."""
    runner = environment.runner
    if not isinstance(runner, MasterRunner):
        return
    quit_now = runner.quit

    def quit_gracefully() -> None:
        from locust.rpc import Message

        workers = [client.id for client in runner.clients.all]
        runner.stop()
        # A worker that reported it stopped is no longer the master's client, so Locust's
        # quit would not tell it: tell each one here, or it lingers until its heartbeat
        # timeout.
        for worker in workers:
            runner.server.send_to_client(Message("quit", None, worker))
        quit_now()

    object.__setattr__(runner, "quit", quit_gracefully)  # this runner only


def _report_now(environment: Environment, **_kwargs: object) -> None:
    """A worker whose users stopped reports at once, ahead of its ``client_stopped``
    (else the last sessions wait for the next periodic report, which may come too late)."""
    runner = environment.runner
    send = getattr(runner, "_send_stats", None)
    if isinstance(runner, WorkerRunner) and send is not None:
        send()


events.init.add_listener(_graceful_master)
events.test_stop.add_listener(_report_now)
write_before_closing()


def _livekit(options: Any) -> LiveKitTarget | None:
    """The LiveKit room the options join directly (None: the session API), built as
    ``chat`` and ``test`` build theirs; the token, key and secret come from the
    environment (:data:`~fishtalk.engine.parts.ENV_LIVEKIT_TOKEN`, ``$LIVEKIT_API_KEY``,
    ``$LIVEKIT_API_SECRET``). Raises ConfigError for options that cannot join."""
    from fishtalk.engine import parts

    protocol = options.fishtalk_livekit_protocol or None
    return parts.livekit_target(
        options.fishtalk_livekit_url or None,
        token=os.environ.get(ENV_LIVEKIT_TOKEN) or None,
        room=options.fishtalk_livekit_room or None,
        protocol=protocol,
    )


@lru_cache(maxsize=4)
def _parse(text: str, path: str) -> TestFile:
    from fishtalk.workbench.agenttest.spec import parse_test

    return parse_test(text, source=path or "<test>")


async def _one_session(
    test: TestFile, target: Target, on_connected: Callable[[float], None]
) -> tuple[TestResult, bool]:
    """Run ``test`` once; ``on_connected(seconds)`` as the session connects (on this, the
    engine's thread). Returns the result and whether the session started."""
    from fishtalk.workbench.agenttest.runner import run_test

    began = time.monotonic()
    started: list[bool] = []

    def on_session(_session: AgentSession) -> None:
        started.append(True)
        on_connected(time.monotonic() - began)

    result = await run_test(test, target, on_session=on_session)
    return result, bool(started)


class FishtalkUser(User):
    """A fishtalk client running the test file's conversation in a loop."""

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self._started = 0.0

    def wait_time(self) -> float:
        pace = float(getattr(self.environment.parsed_options, "fishtalk_pace", DEFAULT_PACE))
        return max(0.0, pace - (time.monotonic() - self._started))

    def conversation(self) -> None:
        """One session: the file's turns, reported as requests."""
        from fishtalk.workbench.agenttest.runner import Target

        options = self.environment.parsed_options
        if options is None or not options.fishtalk_test_text:
            raise StopUser()
        if not BUDGET.take(options.fishtalk_max_sessions):
            _log.warning("--fishtalk-max-sessions reached in this process: stopping a user")
            raise StopUser()
        test = _parse(options.fishtalk_test_text, options.fishtalk_test)
        try:
            livekit = _livekit(options)
        except FishtalkError as exc:  # a worker's environment, checked here first
            _log.error("fishtalk: %s", exc)
            raise StopUser() from None
        target = Target(
            options.fishtalk_agent or None,
            api_url=options.fishtalk_api_url or None,
            fallback_agent=None,
            livekit=livekit.one_of_many() if livekit is not None else None,
        )
        self._started = time.monotonic()
        at = time.time()
        post = hub_poster()

        def connected(seconds: float) -> None:
            # Reported as it happens: a session Locust stops mid-way still counts as started.
            post(lambda: self._fire(start_request(test, seconds), at))

        try:
            result, started = wait_green(ENGINE.submit(_one_session(test, target, connected)))
        except Exception as exc:  # a bug in a session must not end the user
            self._fire(Request("session", f"{test.name}: whole session", 0.0, repr(exc)), at)
            return
        if not started:
            self._fire(failed_start(test, result), at)
            return
        for request in turn_requests(test, result):
            self._fire(request, at)

    tasks = [conversation]  # noqa: RUF012 (Locust reads the class attribute)

    def _fire(self, request: Request, at: float) -> None:
        self.environment.events.request.fire(
            request_type=request.kind,
            name=request.name,
            response_time=request.ms,
            response_length=0,
            response=None,
            context={},
            exception=LoadFailure(request.error) if request.error is not None else None,
            start_time=at,
            url=None,
        )
