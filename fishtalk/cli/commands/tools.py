"""``fishtalk tools list|run``: the client tools this machine offers the agent."""

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from fishtalk.cli.exits import EXIT_ERROR, EXIT_USAGE
from fishtalk.cli.shared import load, run_async

if TYPE_CHECKING:
    pass


# --- tools --------------------------------------------------------------------------------

app = typer.Typer(help="List and try the client tools this machine offers the agent.")


@app.command("list")
def tools_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Show every declared, built-in and plugin tool with its source and validity.

    Exits with 2 when a tool is misconfigured (a session would refuse to start).
    """
    from dataclasses import asdict

    from fishtalk.core.text import strip
    from fishtalk.engine.tools.build import describe_tools

    infos = describe_tools(load())
    if as_json:
        typer.echo(json.dumps([asdict(i) for i in infos], indent=2))
    elif not infos:
        typer.echo("no client tools enabled: declare them as [tools.NAME] in the config")
    for info in [] if as_json else infos:
        status = "ok" if info.problem is None else ("ERROR" if info.fatal else "warning")
        timeout = f"{info.timeout:g}s" if info.timeout is not None else "default"
        typer.echo(
            f"{info.name}  [{info.source}]  approve={info.approve}  timeout={timeout}  {status}"
        )
        for text in (info.description, info.detail, info.problem):
            if text:
                typer.echo(f"    {strip(text)}")
    if any(i.fatal for i in infos):
        raise typer.Exit(EXIT_USAGE)


@app.command("run")
def tools_run(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The tool to run.")],
    params: Annotated[
        str,
        typer.Option("--params", "-p", metavar="JSON", help="The call's params as a JSON object."),
    ] = "{}",
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            "-y",
            help='Approve the call in advance (tools with approve = "ask"; "never" still '
            "refuses). Without it only an answer typed at a terminal approves: piped input "
            "never does.",
        ),
    ] = False,
) -> None:
    """Run one tool locally exactly as a call from the agent would (same limits, same
    approval, asked on this terminal). Prints the result as JSON.

    Exit codes: 0 the tool ran and returned a result; 1 the tool failed, timed out or was
    declined; 2 bad usage (unknown tool, bad --params, bad config).
    """
    try:
        parsed = json.loads(params)
    except ValueError as exc:
        raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--params") from None
    if not isinstance(parsed, dict):
        raise typer.BadParameter("must be a JSON object", param_hint="--params")
    settings = load()

    import secrets

    from fishtalk.core.protocol import ClientToolCall
    from fishtalk.core.text import json_escape, strip
    from fishtalk.engine.tools.approval import choose_approver, terminal_approver
    from fishtalk.engine.tools.build import build_runner
    from fishtalk.engine.tools.registry import unknown_tool_message

    approver = choose_approver(
        terminal_approver(), answers_from=sys.stdin, question_to=sys.stderr, assume_yes=yes
    )
    runner = build_runner(
        settings, default_timeout=settings.session.client_tool_timeout, approver=approver
    )
    if name not in runner.registry:
        typer.echo(
            f"fishtalk: {strip(unknown_tool_message(name, runner.registry.names()))}", err=True
        )
        raise typer.Exit(EXIT_USAGE)
    call = ClientToolCall(
        call_id=f"local-{secrets.token_hex(4)}",
        tool_name=name,
        params=parsed,
        expects_response=True,
    )
    outcome = run_async(runner.run(call))
    if outcome.ok:
        typer.echo(json_escape(json.dumps(outcome.result, indent=2, ensure_ascii=False)))
        return
    detail = outcome.error or ""
    if outcome.status == "declined" and approver is None:
        detail = (
            "nobody at a terminal to approve it (piped input never approves; "
            "pass --yes to approve it in advance)"
        )
    typer.echo(f"fishtalk: tool {name!r} {outcome.status}: {strip(detail)}", err=True)
    raise typer.Exit(EXIT_ERROR)
