"""``fishtalk devices``, ``agents`` and ``doctor``: what this machine and config offer."""

import json
from typing import Annotated

import typer

from fishtalk.cli.exits import EXIT_ERROR
from fishtalk.cli.options import ProfileArgument
from fishtalk.cli.shared import load, state, target_config_path

commands = typer.Typer()
"""This module's top-level commands (app.py registers them on the one app)."""


@commands.command("devices", short_help="List audio input and output devices.")
def devices() -> None:
    """List audio devices: index, name, host API, channels, default rate (< > mark defaults)."""
    from fishtalk.engine.audio.devices import AudioUnavailable, format_device_table, list_devices

    try:
        found = list_devices()
    except AudioUnavailable as exc:
        typer.echo(f"fishtalk: {str(exc).removeprefix('text-only: ')}", err=True)
        raise typer.Exit(EXIT_ERROR) from None
    typer.echo(format_device_table(found))
    if found:
        typer.echo(
            "choose with [audio] input_device / output_device in the config, or "
            "FISHTALK_AUDIO__INPUT_DEVICE / FISHTALK_AUDIO__OUTPUT_DEVICE (an index or part "
            "of a name)"
        )


@commands.command("agents", short_help="List the agent profiles in the config.")
def agents(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List the agent profiles ([agents.NAME] in the config): `fishtalk chat NAME` uses one."""
    from fishtalk.core.text import strip

    profiles = load().agents
    if as_json:
        typer.echo(
            json.dumps(
                {
                    name: p.model_dump(mode="json", exclude_none=True, exclude_unset=True)
                    for name, p in sorted(profiles.items())
                },
                indent=2,
            )
        )
        return
    if not profiles:
        typer.echo(
            "no agent profiles: declare them as [agents.NAME] with an agent_id in "
            f"{target_config_path()}"
        )
        return
    width = max(len(name) for name in profiles)
    for name, p in sorted(profiles.items()):
        details = [f"agent {p.agent_id}"]
        if p.public:
            details.append(f"public, origin {p.origin}" if p.origin else "public")
        if p.talk_mode:
            details.append(f"talk {p.talk_mode}")
        if p.tools is not None:
            details.append(f"tools: {', '.join(p.tools) or 'none'}")
        overrides = sorted(p.session.model_dump(exclude_unset=True))
        if overrides:
            details.append(f"sets {', '.join('session.' + k for k in overrides)}")
        typer.echo(strip(f"{name:<{width}}  {' · '.join(details)}"))
        if p.description:
            typer.echo(strip(f"{'':<{width}}  {p.description}"))


@commands.command("doctor", short_help="Check config, API key, audio, network and terminal.")
def doctor(
    name: ProfileArgument = None,
    online: Annotated[
        bool,
        typer.Option(
            "--online",
            help="Also check the API key against the service (creates a session and ends it).",
        ),
    ] = False,
    mic_seconds: Annotated[
        float,
        typer.Option(
            "--mic-seconds", metavar="SECONDS", min=0, max=30, help="Microphone level check length."
        ),
    ] = 2.0,
) -> None:
    """Check everything fishtalk needs, one line each: ok, warn or fail, with the fix.

    Exits 0 when nothing fails (warnings allowed), 1 otherwise. With PROFILE (an
    [agents.NAME] profile) the key, agent and --online checks use that profile.
    """
    from fishtalk.cli.doctor import Status, run_checks
    from fishtalk.core.text import strip

    if online:
        typer.echo("--online: creating a session with your key and ending it at once")
    failed = False
    checks = run_checks(
        config_path=state.config_path, online=online, mic_seconds=mic_seconds, profile=name
    )
    for check in checks:
        failed = failed or check.status is Status.FAIL
        typer.echo(strip(f"{check.status.value:<4}  {check.name}: {check.detail}"))
        if check.fix and check.status is not Status.OK:
            typer.echo(strip(f"      fix: {check.fix}"))
    if failed:
        raise typer.Exit(EXIT_ERROR)
