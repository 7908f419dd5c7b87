"""``fishtalk session create|end``: agent sessions without joining them."""

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fishtalk.cli.options import (
    NO_AGENT_TARGET,
    NO_SESSION_FLAGS,
    AgentTarget,
    ApiUrlOption,
    OriginOption,
    PublicOption,
    SessionFlags,
    with_agent_target,
    with_session_flags,
)
from fishtalk.cli.shared import load, run_async

if TYPE_CHECKING:
    from fishtalk.engine.api import LiveKitGrant


app = typer.Typer(help="Create and end agent sessions (without joining them).")

# --- session ------------------------------------------------------------------------------


@app.command("create")
@with_agent_target
@with_session_flags
def session_create(
    target: AgentTarget = NO_AGENT_TARGET,
    as_json: Annotated[bool, typer.Option("--json", help="Print the grant as JSON.")] = False,
    show_token: Annotated[
        bool, typer.Option("--show-token", help="Print the join token (it is a credential).")
    ] = False,
    flags: SessionFlags = NO_SESSION_FLAGS,
) -> None:
    """Create a session and print its grant (the token is hidden unless --show-token).

    PROFILE names an agent profile from the config ([agents.NAME]; `fishtalk agents` lists
    them). --agent takes a profile name or an agent id.
    """
    settings = target.load(flags.overrides())
    from fishtalk.cli.launch import session_client, session_request

    request = session_request(settings)

    async def create() -> "LiveKitGrant":
        async with session_client(settings) as client:
            return await client.create_session(request)

    grant = run_async(create())
    token = grant.token.get_secret_value() if show_token else None
    fields: dict[str, Any] = {
        "session_id": grant.session_id,
        "transport": grant.transport,
        "livekit_url": grant.livekit_url,
        "expires_at": grant.expires_at.isoformat(),
        "max_duration_seconds": grant.max_duration_seconds,
        "token": token if token is not None else "<hidden: use --show-token>",
    }
    if as_json:
        typer.echo(json.dumps(fields, indent=2))
    else:
        from fishtalk.core.text import strip

        width = max(len(k) for k in fields)
        for key, value in fields.items():
            typer.echo(f"{key:<{width}}  {strip(str(value))}")


@app.command("end")
def session_end(
    session_id: Annotated[str, typer.Argument(metavar="SESSION_ID", help="The session to end.")],
    api_url: ApiUrlOption = None,
    public: PublicOption = None,
    origin: OriginOption = None,
) -> None:
    """End a session by id."""
    settings = load({"api.url": api_url, "api.public": public, "api.origin": origin})
    from fishtalk.cli.launch import session_client

    async def end() -> None:
        async with session_client(settings) as client:
            await client.end_session(session_id)

    run_async(end())
    typer.echo(f"ended session {session_id}")
