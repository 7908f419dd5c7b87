"""``fishtalk chat`` and ``fishtalk demo``: talk to an agent, or to the simulated one."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from fishtalk.cli.completion import complete_scenarios
from fishtalk.cli.livekit_options import (
    LiveKitApiKeyOption,
    LiveKitApiSecretOption,
    LiveKitFlags,
    LiveKitUrlOption,
    ProtocolOption,
    RoomOption,
    TokenOption,
)
from fishtalk.cli.options import (
    PROFILE_HELP,
    AgentOption,
    ApiUrlOption,
    EndUserOption,
    EventsOption,
    FirstMessageOption,
    FirstMessagePromptOption,
    InputDeviceOption,
    JournalOption,
    LanguageOption,
    LatencyOption,
    MetadataOption,
    MetricsJsonOption,
    NoAudioOption,
    NoJournalOption,
    OriginOption,
    OutputDeviceOption,
    PlainOption,
    ProfileArgument,
    PublicOption,
    RecordAudioOption,
    ServerRecordingOption,
    SessionFlags,
    SessionNameOption,
    SystemPromptOption,
    TalkModeOption,
    TextOnlyOption,
    TimezoneOption,
    ToolEventsOption,
    VarOption,
    VoiceOption,
    WorldContextOption,
    audio_overrides,
    journal_choice,
    metrics_file,
)
from fishtalk.cli.shared import load, resolve_agent, run_async, state

if TYPE_CHECKING:
    from fishtalk.cli.settings import Settings


commands = typer.Typer()
"""This module's top-level commands (app.py registers them on the one app)."""


@commands.command(
    "demo",
    short_help="Talk to a simulated agent on this machine (no account needed).",
    help=(
        "Talk to a simulated agent running on this machine (no account needed).\n\n"
        "The built-in demo is a one-minute tour of what a Fish agent can send a client "
        "(speech and transcripts, tool calls, client tools, states, errors, a dropped "
        "connection), then free conversation. Type at any time; F1 lists the keys, Ctrl+X "
        "hangs up."
    ),
)
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
    input_device: InputDeviceOption = None,
    output_device: OutputDeviceOption = None,
    no_audio: NoAudioOption = False,
    talk_mode: TalkModeOption = None,
    no_journal: NoJournalOption = False,
    journal: JournalOption = None,
    events: EventsOption = False,
    record_audio: RecordAudioOption = False,
    latency: LatencyOption = False,
    metrics_json: MetricsJsonOption = None,
) -> None:
    """Talk to a simulated agent running on this machine (no account needed)."""
    from fishtalk.engine.audio.preflight import check_named_devices

    audio: dict[str, Any] = {
        "session.text_only": True if text_only else None,
        "ui.plain": True if plain else None,
        **audio_overrides(input_device, output_device, no_audio, talk_mode),
    }
    check_named_devices(load(audio))  # a device that matches nothing: exit 2 before the sim

    def load_with_audio(overrides: dict[str, Any]) -> "Settings":
        return load({**overrides, **audio})

    from fishtalk.cli.demo import run_demo
    from fishtalk.engine.native import exit_process

    # Leave without finalization, as chat does: the SDK's native threads outlive the call.
    choice = journal_choice(no_journal, journal, events, record_audio)
    metrics = metrics_file(metrics_json)
    code = run_demo(
        load_with_audio, scenario=scenario, journal=choice, metrics=metrics, latency=latency
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
def chat(
    name: ProfileArgument = None,
    agent: AgentOption = None,
    api_url: ApiUrlOption = None,
    public: PublicOption = None,
    origin: OriginOption = None,
    text_only: TextOnlyOption = False,
    input_device: InputDeviceOption = None,
    output_device: OutputDeviceOption = None,
    no_audio: NoAudioOption = False,
    talk_mode: TalkModeOption = None,
    plain: PlainOption = False,
    language: LanguageOption = None,
    timezone: TimezoneOption = None,
    voice: VoiceOption = None,
    first_message: FirstMessageOption = None,
    first_message_prompt: FirstMessagePromptOption = None,
    system_prompt: SystemPromptOption = None,
    session_name: SessionNameOption = None,
    end_user_id: EndUserOption = None,
    var: VarOption = None,
    metadata: MetadataOption = None,
    server_recording: ServerRecordingOption = None,
    world_context: WorldContextOption = None,
    tool_events: ToolEventsOption = None,
    no_journal: NoJournalOption = False,
    journal: JournalOption = None,
    events: EventsOption = False,
    record_audio: RecordAudioOption = False,
    latency: LatencyOption = False,
    metrics_json: MetricsJsonOption = None,
    livekit_url: LiveKitUrlOption = None,
    token: TokenOption = None,
    api_key: LiveKitApiKeyOption = None,
    api_secret: LiveKitApiSecretOption = None,
    room: RoomOption = None,
    protocol: ProtocolOption = None,
) -> None:
    """Talk to an agent: the full-screen TUI on a terminal, line mode otherwise."""
    flags = SessionFlags(
        language, timezone, voice, first_message, first_message_prompt, system_prompt,
        session_name, end_user_id, var, metadata, server_recording, world_context, tool_events,
    )  # fmt: skip
    profile, agent_id = resolve_agent(name, agent)
    settings = load(
        {
            **flags.overrides(),
            "session.agent_id": agent_id,
            "api.url": api_url,
            "api.public": public,
            "api.origin": origin,
            "session.text_only": True if text_only else None,
            "ui.plain": True if plain else None,
            **audio_overrides(input_device, output_device, no_audio, talk_mode),
            **LiveKitFlags(livekit_url, token, api_key, api_secret, room, protocol).overrides(),
        },
        profile=profile,
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
    choice = journal_choice(no_journal, journal, events, record_audio)
    metrics = metrics_file(metrics_json)
    code = run_chat(settings, debug=state.debug, journal=choice, metrics=metrics, latency=latency)
    exit_process(code)
