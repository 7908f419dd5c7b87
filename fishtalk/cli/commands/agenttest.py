"""``fishtalk test``: run agent tests written in TOML."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fishtalk.cli.completion import complete_scenarios
from fishtalk.cli.exits import EXIT_USAGE
from fishtalk.cli.livekit_options import NO_LIVEKIT_FLAGS, LiveKitFlags, with_livekit_flags
from fishtalk.cli.options import ApiUrlOption, OriginOption, PublicOption
from fishtalk.cli.shared import fail, load, state

if TYPE_CHECKING:
    pass


commands = typer.Typer()
"""This module's top-level commands (app.py registers them on the one app)."""


@commands.command(
    "test",
    short_help="Run agent tests written in TOML (against an agent, or --sim offline).",
    help=(
        "Run conversations written in TOML against an agent and check what it says and "
        "which tools it calls (see the README, 'Testing your agent').\n\n"
        "--sim runs them against the built-in simulated agent, offline (--scenario picks "
        "what it plays). --init PATH writes a commented starter file."
    ),
    epilog=(
        "Exit codes: 0 all passed; 1 any failed; 2 a bad test file or flags; 3-6 the session "
        "API refused or failed (as for chat; 6 also an expired grant or LiveKit token); 7 a "
        "session could not connect (a LiveKit server unreachable or refusing the token, or no "
        "usable network for --sim); 130 interrupted (the reports still hold what finished)."
    ),
)
@with_livekit_flags
def run_agent_tests(
    files: Annotated[
        list[Path] | None, typer.Argument(metavar="FILE...", help="Test files (TOML).")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", metavar="ID", help="The agent id (wins over the files')."),
    ] = None,
    sim: Annotated[
        bool,
        typer.Option("--sim", help="Run against the built-in simulated agent, offline."),
    ] = False,
    scenario: Annotated[
        str | None,
        typer.Option(
            "--scenario",
            metavar="NAME|FILE",
            help="With --sim: what the simulated agent plays (built-in converse, demo, tools, "
            "or a scenario file; default: the built-in named like the agent id, else converse).",
            autocompletion=complete_scenarios,
        ),
    ] = None,
    agent_setting: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-setting",
            metavar="KEY=VALUE",
            help="With --sim: replace an [agent] setting of the simulated agent, e.g. "
            "think_seconds=0.8 (repeatable; as for `fishtalk sim serve`).",
        ),
    ] = None,
    init: Annotated[
        Path | None,
        typer.Option("--init", metavar="PATH", help="Write a commented starter file and exit."),
    ] = None,
    repeat: Annotated[
        int, typer.Option("--repeat", min=1, help="Run each file N times (a pass rate).")
    ] = 1,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Sessions at once (bounded).")
    ] = 1,
    max_sessions: Annotated[
        int,
        typer.Option("--max-sessions", min=1, help="Refuse a run that would open more sessions."),
    ] = 100,
    junit: Annotated[
        Path | None, typer.Option("--junit", metavar="PATH", help="Write a JUnit XML report.")
    ] = None,
    json_report: Annotated[
        Path | None, typer.Option("--json", metavar="PATH", help="Write a JSON report.")
    ] = None,
    html_report: Annotated[
        Path | None, typer.Option("--html", metavar="PATH", help="Write an HTML report page.")
    ] = None,
    no_journal: Annotated[
        bool,
        typer.Option(
            "--no-journal",
            help="Write no session journals (by default each session has one, and a failure "
            "report names it).",
        ),
    ] = False,
    api_url: ApiUrlOption = None,
    public: PublicOption = None,
    origin: OriginOption = None,
    livekit: LiveKitFlags = NO_LIVEKIT_FLAGS,
) -> None:
    """Run agent tests written in TOML."""
    from fishtalk.workbench.agenttest.command import TestCommand, run_command
    from fishtalk.workbench.agenttest.runner import RunOptions, Target

    if init is not None:
        from fishtalk.workbench.agenttest.spec import STARTER

        if init.exists():
            fail(f"{init} exists; not overwriting it", EXIT_USAGE)
        init.write_text(STARTER, "utf-8")
        typer.echo(f"wrote {init}; run it with: fishtalk test {init} --sim")
        return
    paths = list(files or [])
    if not paths:
        fail("no test files given (fishtalk test FILE... ; --init PATH writes one)", EXIT_USAGE)
    options = RunOptions(repeat=repeat, concurrency=concurrency, max_sessions=max_sessions)
    if scenario is not None and not sim:
        fail("--scenario needs --sim", EXIT_USAGE)
    if agent_setting and not sim:
        fail("--agent-setting needs --sim", EXIT_USAGE)
    agent_settings: dict[str, object] = {}
    if agent_setting:
        from fishtalk.sim.fish.scenario import check_agent_overrides, parse_agent_setting

        agent_settings = check_agent_overrides(dict(parse_agent_setting(a) for a in agent_setting))
    if sim:
        from fishtalk.cli.demo import has_webrtc_network
        from fishtalk.cli.exits import EXIT_CONNECTION

        if not has_webrtc_network():
            fail(
                "fishtalk test --sim needs a network interface other than loopback: WebRTC "
                "ignores 127.0.0.1 and this host has no other IPv4 address (inside a sandbox, "
                f"run it through `{sys.executable} -m fishtalk.sim.netns -- {sys.executable} "
                "-m fishtalk test ...`)",
                EXIT_CONNECTION,
            )
        target = Target(agent, config_path=state.config_path, journal=not no_journal)
    else:
        from fishtalk.cli.launch import livekit_target

        settings = load(
            {"api.url": api_url, "api.public": public, "api.origin": origin, **livekit.overrides()}
        )
        key = settings.api.api_key
        direct = livekit_target(settings)
        if direct is not None:
            direct.check_at_once(concurrency)
        target = Target(
            agent,
            api_url=settings.api.url,
            api_key=key.get_secret_value() if key is not None else None,
            public=settings.api.public,
            origin=settings.api.origin,
            fallback_agent=settings.session.agent_id,
            config_path=state.config_path,
            journal=not no_journal,
            livekit=direct,
        )
    command = TestCommand(
        paths, target, sim=sim, scenario=scenario, agent_settings=agent_settings,
        options=options,
        junit=junit, json_path=json_report, html=html_report,
    )  # fmt: skip
    from fishtalk.cli.exits import exit_code_of, exit_code_of_run
    from fishtalk.core.text import strip
    from fishtalk.engine.native import exit_process

    console = None
    if sys.stdout.isatty():
        from rich.console import Console

        console = Console(highlight=False)
    outcome = run_command(
        command, lambda line: typer.echo(strip(line)), code_for_error=exit_code_of, console=console
    )
    sys.stdout.flush()
    exit_process(exit_code_of_run(outcome))
