"""``fishtalk load``: load-test an agent with many real clients, on Locust."""

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from fishtalk.cli.completion import complete_scenarios
from fishtalk.cli.exits import EXIT_CONNECTION, EXIT_ERROR, EXIT_USAGE
from fishtalk.cli.livekit_options import NO_LIVEKIT_FLAGS, LiveKitFlags, with_livekit_flags
from fishtalk.cli.options import ApiUrlOption
from fishtalk.cli.shared import fail, load

if TYPE_CHECKING:
    from fishtalk.engine.parts import LiveKitTarget

commands = typer.Typer()
"""This module's top-level commands (app.py registers them on the one app)."""

INSTALL_EXTRA = "pip install 'fishtalk[load]'"


def _locust_argv(
    *,
    file: Path | None,
    agent: str | None,
    api_url: str | None,
    livekit: "LiveKitTarget | None",
    users: int,
    spawn_rate: float,
    run_time: str | None,
    pace: float,
    cap: int,
    web: bool,
    csv: str | None,
    html: Path | None,
    master: bool,
    worker: bool,
    master_host: str | None,
    processes: int | None,
    expect_workers: int | None,
    extra: list[str],
) -> list[str]:
    # Its path only: importing it would import Locust before _run_locust says how.
    spec = importlib.util.find_spec("fishtalk.workbench.load.locustfile")
    assert spec is not None
    assert spec.origin is not None
    argv = ["locust", "-f", spec.origin]
    if worker:
        argv += ["--worker", "--master-host", master_host or "127.0.0.1"]
        return [*argv, *(["--processes", str(processes)] if processes else []), *extra]
    argv += ["--fishtalk-test", str(file), "--fishtalk-pace", f"{pace:g}"]
    argv += ["--fishtalk-max-sessions", str(cap), "-u", str(users), "-r", f"{spawn_rate:g}"]
    argv += ["--fishtalk-agent", agent] if agent else []
    argv += ["--fishtalk-api-url", api_url] if api_url else []
    if livekit is not None:  # its secrets go through the environment (see load_agent)
        argv += ["--fishtalk-livekit-url", livekit.url]
        argv += ["--fishtalk-livekit-room", livekit.room] if livekit.room else []
        argv += ["--fishtalk-livekit-protocol", livekit.protocol] if livekit.protocol else []
    argv += ["-t", run_time] if run_time else []
    argv += [] if web else ["--headless"]
    argv += ["--csv", csv] if csv else []
    argv += ["--html", str(html)] if html else []
    argv += ["--master"] if master else []
    argv += ["--expect-workers", str(expect_workers)] if expect_workers else []
    argv += ["--processes", str(processes)] if processes else []
    return [*argv, *extra]


@commands.command(
    "load",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    short_help="Load-test an agent: a test file as many Locust users (extra 'load').",
    help=(
        "Run a test file's conversation (see 'fishtalk test') as the task of each Locust "
        "user, in a loop: every user is a real fishtalk client. Each turn is a Locust "
        "request (its heard latency, or first text when text-only), and so is each session's "
        "start. --web shows Locust's live charts; without it the run is headless (--csv, "
        "--html write reports). --master / --worker --master-host HOST spread it over "
        "machines, --processes over cores. Other Locust flags pass through as they are "
        "(see the README, 'Load testing').\n\n"
        "Guards: --max-sessions refuses a run that could open more sessions (default 50 "
        "against an agent, 100000 with --sim); an agent run asks before it starts (--yes, "
        "required without a terminal) and needs --run-time.\n\n"
        "--livekit-url joins LiveKit rooms directly, as chat and test do: minting (--api-key/"
        "--api-secret, --room NAME), every session joins a room of its own, NAME- and 8 hex "
        "digits, as a participant of its own (a LiveKit deployment dispatches an agent into "
        "each new room); a --token is one participant, so one user. Workers read the key "
        "and secret from $LIVEKIT_API_KEY / $LIVEKIT_API_SECRET."
    ),
    epilog=(
        "Exit codes: 0 every request passed; 1 any failed (or the run was declined); 2 a bad "
        f"test file or flags, or Locust missing ({INSTALL_EXTRA}); 7 no usable network for "
        "--sim."
    ),
)
@with_livekit_flags
def load_agent(
    ctx: typer.Context,
    file: Annotated[
        Path | None, typer.Argument(metavar="FILE.toml", help="The test file (TOML).")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", metavar="ID", help="The agent id (wins over the file's)."),
    ] = None,
    sim: Annotated[
        bool, typer.Option("--sim", help="Load the built-in simulated agent, offline.")
    ] = False,
    scenario: Annotated[
        str | None,
        typer.Option(
            "--scenario",
            metavar="NAME|FILE",
            help="With --sim: what the simulated agent plays.",
            autocompletion=complete_scenarios,
        ),
    ] = None,
    users: Annotated[int, typer.Option("--users", "-u", min=1, help="Users at once.")] = 1,
    spawn_rate: Annotated[
        float, typer.Option("--spawn-rate", "-r", min=0.001, help="Users started per second.")
    ] = 1.0,
    run_time: Annotated[
        str | None,
        typer.Option("--run-time", "-t", metavar="TIME", help="Stop after e.g. 90s, 5m, 1h30m."),
    ] = None,
    pace: Annotated[
        float,
        typer.Option(
            "--pace",
            min=0.1,
            help="Seconds between the starts of one user's sessions, at the least.",
        ),
    ] = 5.0,
    max_sessions: Annotated[
        int | None,
        typer.Option("--max-sessions", min=1, help="Refuse a run that could open more sessions."),
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Start an agent run without asking.")
    ] = False,
    web: Annotated[bool, typer.Option("--web", help="Locust's web UI (live charts).")] = False,
    csv: Annotated[
        str | None, typer.Option("--csv", metavar="PREFIX", help="Write Locust's CSV reports.")
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", metavar="PATH", help="Write Locust's HTML report.")
    ] = None,
    master: Annotated[bool, typer.Option("--master", help="Run as Locust's master.")] = False,
    expect_workers: Annotated[
        int | None,
        typer.Option("--expect-workers", min=1, help="Headless master: wait for N workers."),
    ] = None,
    worker: Annotated[
        bool, typer.Option("--worker", help="Run as a Locust worker (the master has the file).")
    ] = False,
    master_host: Annotated[
        str | None, typer.Option("--master-host", metavar="HOST", help="The master to join.")
    ] = None,
    processes: Annotated[
        int | None,
        typer.Option(
            "--processes", metavar="N", help="Fork N worker processes (-1: one per core)."
        ),
    ] = None,
    api_url: ApiUrlOption = None,
    livekit: LiveKitFlags = NO_LIVEKIT_FLAGS,
) -> None:
    """Load-test an agent with real clients, on Locust."""
    if any(importlib.util.find_spec(name) is None for name in ("locust", "gevent")):
        fail(f"fishtalk load needs Locust, in the 'load' extra: {INSTALL_EXTRA}", EXIT_USAGE)
    from fishtalk.engine.tools.secret_env import ENV_API_KEY
    from fishtalk.workbench.agenttest.command import SIM_DEFAULT_AGENT
    from fishtalk.workbench.agenttest.spec import load_test
    from fishtalk.workbench.load.plan import LoadPlan, parse_run_time

    if worker:
        if file is not None:
            fail("a worker takes no test file: the master passes it on", EXIT_USAGE)
        if master_host is None:
            fail("--worker needs --master-host HOST", EXIT_USAGE)
    elif file is None:
        fail("no test file given (fishtalk load FILE.toml ...)", EXIT_USAGE)
    if scenario is not None and not sim:
        fail("--scenario needs --sim", EXIT_USAGE)
    if sim and agent is None and worker:
        fail("--sim goes with the master (it runs the sim); workers take no --sim", EXIT_USAGE)
    if any(value is not None for value in livekit.overrides().values()) and (sim or worker):
        fail(
            "the LiveKit options go with an agent run's master, not with "
            + ("--sim" if sim else "--worker (it reads $LIVEKIT_API_KEY / $LIVEKIT_API_SECRET)"),
            EXIT_USAGE,
        )
    url = api_url
    cap = 0
    sim_thread = None
    direct = None
    if not worker:
        assert file is not None
        test = load_test(file)
        seconds = parse_run_time(run_time) if run_time is not None else None
        settings = None if sim else load({"api.url": api_url, **livekit.overrides()})
        if settings is not None:
            from fishtalk.cli.launch import livekit_target

            direct = livekit_target(settings)  # as chat and test: one line, exit 2
        if direct is not None:
            direct.check_at_once(users)
            agent = f"{direct.room}-* at {direct.url}" if direct.room else direct.url
        fallback = SIM_DEFAULT_AGENT if sim else settings.session.agent_id if settings else None
        agent = agent or test.agent or fallback
        if not agent:
            fail("no agent id: pass --agent or set agent = ... in the file", EXIT_USAGE)
        plan = LoadPlan(agent, users, seconds, pace, max_sessions, sim=sim)
        plan.check()  # RunLimitError: one line, exit 2
        cap = plan.cap
        if not sim and not yes:
            if not sys.stdin.isatty():
                fail(
                    f"{plan.confirmation()[: -len(' Go on?')]}: pass --yes to start it "
                    "(there is no terminal to ask on)",
                    EXIT_USAGE,
                )
            if not typer.confirm(plan.confirmation(), default=False):
                fail("not started", EXIT_ERROR)
        if sim:
            from fishtalk.cli.demo import has_webrtc_network

            if not has_webrtc_network():
                fail(
                    "fishtalk load --sim needs a network interface other than loopback "
                    f"(inside a sandbox, run it through `{sys.executable} -m "
                    "fishtalk.sim.netns -- ...`)",
                    EXIT_CONNECTION,
                )
            from fishtalk.sim.runner import SimThread

            sim_thread = SimThread(scenario)
            info = sim_thread.start()
            url = info.api_url
            os.environ[ENV_API_KEY] = info.dev_key
        elif direct is not None:
            _pass_on_livekit_secrets(direct)
        elif settings is not None:
            url = settings.api.url
            key = settings.api.api_key
            if key is not None:
                # The key reaches the users through the environment, never argv.
                os.environ[ENV_API_KEY] = key.get_secret_value()
    argv = _locust_argv(
        file=file, agent=None if direct is not None else agent, api_url=url, livekit=direct,
        users=users, spawn_rate=spawn_rate,
        run_time=run_time, pace=pace, cap=cap, web=web, csv=csv, html=html, master=master,
        worker=worker, master_host=master_host, processes=processes,
        expect_workers=expect_workers, extra=list(ctx.args),
    )  # fmt: skip
    code = _run_locust(argv)
    if sim_thread is not None:
        sim_thread.stop()
    from fishtalk.engine.native import exit_process

    sys.stdout.flush()
    exit_process(code)


def _pass_on_livekit_secrets(direct: "LiveKitTarget") -> None:
    """The users read the token, key and secret from the environment (never argv; the
    master keeps them from its workers): set them there, and only the way to join given."""
    from fishtalk.engine.parts import (
        ENV_LIVEKIT_API_KEY,
        ENV_LIVEKIT_API_SECRET,
        ENV_LIVEKIT_TOKEN,
        reveal,
    )

    for name, secret in (
        (ENV_LIVEKIT_TOKEN, direct.token),
        (ENV_LIVEKIT_API_KEY, direct.api_key),
        (ENV_LIVEKIT_API_SECRET, direct.api_secret),
    ):
        value = reveal(secret)
        if value:
            os.environ[name] = value
        else:
            os.environ.pop(name, None)


def _run_locust(argv: list[str]) -> int:
    """Locust's own main with ``argv``, unpatched (see fishtalk.workbench.load.bridge)."""
    os.environ["LOCUST_SKIP_MONKEY_PATCH"] = "1"
    sys.argv = argv
    import locust.main

    run = cast("Callable[[], object]", locust.main.main)
    try:
        run()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    return 0
