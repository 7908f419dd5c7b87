"""``fishtalk chat`` and ``fishtalk demo``: talk to an agent, or to the simulated one."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from fishtalk.cli.completion import complete_scenarios
from fishtalk.cli.livekit_options import NO_LIVEKIT_FLAGS, LiveKitFlags, with_livekit_flags
from fishtalk.cli.options import (
    NO_AGENT_TARGET,
    NO_AUDIO_CHOICE,
    NO_CALL_RECORDS,
    NO_SESSION_FLAGS,
    PROFILE_HELP,
    AgentTarget,
    AudioChoice,
    CallRecords,
    PlainOption,
    SessionFlags,
    TextOnlyOption,
    with_agent_target,
    with_audio_choice,
    with_call_records,
    with_session_flags,
)
from fishtalk.cli.shared import load, run_async, state

if TYPE_CHECKING:
    from fishtalk.cli.settings import Settings


commands = typer.Typer()
"""This module's top-level commands (app.py registers them on the one app)."""


@commands.command(
    "demo",
    short_help="Talk to a simulated agent on this machine (no account needed).",
    help=(
        "Talk to a simulated agent running on this machine (no account needed).\n\n"
        "The built-in demo is a two-minute tour of what a Fish agent can send a client "
        "(speech and transcripts, tool calls, client tools, states, errors, a dropped "
        "connection), then free conversation. Type at any time; F1 lists the keys, Ctrl+X "
        "hangs up."
    ),
)
@with_audio_choice
@with_call_records
def demo(
    scenario: Annotated[
        str,
        typer.Option(
            "--scenario",
            metavar="NAME|FILE",
            help="What the simulated agent plays: built-in demo, converse, tools, or a TOML file.",
            autocompletion=complete_scenarios,
        ),
    ] = "demo",
    text_only: TextOnlyOption = False,
    plain: PlainOption = False,
    audio: AudioChoice = NO_AUDIO_CHOICE,
    records: CallRecords = NO_CALL_RECORDS,
) -> None:
    """Talk to a simulated agent running on this machine (no account needed)."""
    from fishtalk.engine.audio.preflight import check_named_devices

    flags: dict[str, Any] = {
        "session.text_only": True if text_only else None,
        "ui.plain": True if plain else None,
        **audio.overrides(),
    }
    check_named_devices(load(flags))  # a device that matches nothing: exit 2 before the sim

    def load_with_audio(overrides: dict[str, Any]) -> "Settings":
        return load({**overrides, **flags})

    from fishtalk.cli.demo import run_demo
    from fishtalk.engine.native import exit_process

    # Leave without finalization, as chat does: the SDK's native threads outlive the call.
    code = run_demo(
        load_with_audio,
        scenario=scenario,
        journal=records.journal_choice(),
        metrics=records.metrics_file(),
        latency=records.latency,
    )
    exit_process(code)


@commands.command(
    "chat",
    short_help="Talk to an agent (TUI on a terminal, line mode otherwise).",
    help=(
        "Talk to an agent: the full-screen TUI on a terminal, line mode otherwise.\n\n"
        "In the TUI, F1 lists the keys (Ctrl+X hangs up; Ctrl+C hangs up and exits with "
        "130). In line mode (--plain, or when piped) each input line is a typed turn; /help "
        "lists the commands (/interrupt, /hangup, /mute, /unmute, /talk, /spoken on|off); end of "
        "input hangs up once the agent has answered.\n\n" + PROFILE_HELP
    ),
    epilog=(
        "Exit codes: 0 the call ended normally (you or the agent hung up, the conversation "
        "timed out, or it was escalated); 2 bad flags or config; 3 refused (401/402/403); "
        "4 agent not found or not published; 5 API unavailable or unreachable; 6 request "
        "rejected, unsupported transport or session expired; 7 connection lost or could not "
        "be established; 130 interrupted (Ctrl-C)."
    ),
)
@with_agent_target
@with_session_flags
@with_audio_choice
@with_call_records
@with_livekit_flags
def chat(
    target: AgentTarget = NO_AGENT_TARGET,
    text_only: TextOnlyOption = False,
    audio: AudioChoice = NO_AUDIO_CHOICE,
    plain: PlainOption = False,
    flags: SessionFlags = NO_SESSION_FLAGS,
    records: CallRecords = NO_CALL_RECORDS,
    livekit: LiveKitFlags = NO_LIVEKIT_FLAGS,
) -> None:
    """Talk to an agent: the full-screen TUI on a terminal, line mode otherwise."""
    settings = target.load(
        {
            **flags.overrides(),
            "session.text_only": True if text_only else None,
            "ui.plain": True if plain else None,
            **audio.overrides(),
            **livekit.overrides(),
        },
    )
    from fishtalk.cli.front_ends import run_chat
    from fishtalk.cli.launch import livekit_target, require_agent, session_client

    if livekit_target(settings) is None:  # else any LiveKit room: no agent id, no Fish key
        require_agent(settings)
        run_async(session_client(settings).aclose())  # same key / public-origin checks
    from fishtalk.engine.audio.preflight import check_named_devices

    check_named_devices(settings)  # a device that matches nothing: exit 2 before connecting
    from fishtalk.engine.native import exit_process

    # Both front ends leave without finalization (see exit_process).
    journal, metrics = records.journal_choice(), records.metrics_file()
    code = run_chat(
        settings, debug=state.debug, journal=journal, metrics=metrics, latency=records.latency
    )
    exit_process(code)
