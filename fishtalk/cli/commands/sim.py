"""``fishtalk sim serve``: the offline stand-in for Fish in the foreground."""

from typing import Annotated

import typer

from fishtalk.cli.completion import complete_scenarios
from fishtalk.cli.exits import EXIT_OK

app = typer.Typer(
    help="The offline stand-in for Fish: LiveKit server + simulated agent "
    "(or, with --openlive, an OpenLive server)."
)


@app.command(
    "serve",
    help=(
        "Run the simulator in the foreground; prints the API URL and key. Ctrl-C stops it.\n\n"
        "WebRTC needs a non-loopback network interface; any normal machine has one.\n\n"
        "With --openlive it serves the OpenLive stand-in instead: one WebSocket at "
        "ws://HOST:PORT/live, answering typed turns from its own script."
    ),
    # The command list would stop at the first full stop.
    short_help="Run the simulator in the foreground; prints the API URL and key. Ctrl-C stops it.",
)
def sim_serve(
    host: Annotated[
        str, typer.Option("--host", metavar="HOST", help="Address to listen on.")
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port", metavar="PORT", min=0, max=65535, help="Port, 0-65535 (0 picks a free one)."
        ),
    ] = 7880,
    scenario: Annotated[
        str | None,
        typer.Option(
            "--scenario",
            metavar="NAME|FILE",
            help="Scenario TOML file, or built-in demo, converse, tools.",
            autocompletion=complete_scenarios,
        ),
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            metavar="ORIGIN",
            help="Also accept keyless (public) session requests from this origin, e.g. a "
            "web app's dev server http://localhost:5173 (repeatable).",
        ),
    ] = None,
    agent_setting: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-setting",
            metavar="KEY=VALUE",
            help="Replace an [agent] setting of every scenario played, e.g. "
            "think_seconds=0.8 or first_audio_delay_seconds=0.2 (repeatable).",
        ),
    ] = None,
    openlive: Annotated[
        bool,
        typer.Option(
            "--openlive",
            help="Serve the OpenLive stand-in (ws://HOST:PORT/live) instead of Fish's "
            "LiveKit sim; --scenario, --allow-origin and --agent-setting do not apply.",
        ),
    ] = False,
) -> None:
    """Run the simulator in the foreground; prints the API URL and key. Ctrl-C stops it."""
    from fishtalk.sim.cli import serve

    serve(
        host=host,
        port=port,
        scenario=scenario,
        allowed_origins=allow_origin or (),
        agent_settings=agent_setting or (),
        openlive=openlive,
    )
    # Stopped (Ctrl-C, SIGTERM, or its reader went away): a clean end, exit 0. A bad
    # scenario, port or address raises, and the CLI edge picks that code.
    raise typer.Exit(EXIT_OK)
