"""Asking the user before a client tool acts, and a y/n approver for plain terminals.

Each tool has an approval mode: ``ask`` (confirm every call through the
:class:`~fishtalk.engine.tools.registry.ToolContext`'s approver), ``always`` (run without asking)
or ``never`` (refuse every call). A refusal raises
:class:`~fishtalk.engine.tools.registry.ToolDeclined`, which the runner turns into an error result
telling the agent the user declined. With ``ask`` and no approver (nobody to ask), the
call is declined: a tool never runs unconfirmed by accident.

The one approval policy, used by every front end (the TUI, line mode, ``fishtalk tools
run``) through :func:`choose_approver`: an answer counts only when a person gives it at a
terminal (the input it is read from and the output the question is written to are both
terminals), or when the user said so in advance with an explicit flag (``--yes``). Piped
input never approves: ``echo y | fishtalk tools run X`` declines an ``ask`` tool.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from typing import IO, Literal, TypeAlias

from pydantic import JsonValue

from fishtalk.core.text import strip
from fishtalk.engine.aio import in_daemon_thread
from fishtalk.engine.tools.registry import ApprovalRequest, Approver, ToolContext, ToolDeclined

ApproveMode: TypeAlias = Literal["ask", "always", "never"]


def printable(text: str, limit: int = 500) -> str:
    """One terminal-safe line, bounded (the rules are :func:`fishtalk.core.text.strip`'s)."""
    text = strip(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def params_preview(params: Mapping[str, JsonValue], limit: int = 500) -> str:
    """Params as compact JSON, ASCII-escaped so nothing in them can drive the terminal
    (and stripped all the same, should a caller's limit cut an escape in half)."""
    return printable(json.dumps(params, ensure_ascii=True, sort_keys=True), limit)


async def require_approval(
    mode: ApproveMode,
    ctx: ToolContext,
    params: Mapping[str, JsonValue],
    summary: str = "",
) -> None:
    """Return if the call may go ahead; raise ToolDeclined (with the reason) if not."""
    if mode == "always":
        return
    if mode == "never":
        raise ToolDeclined(
            f"The user declined: tool {ctx.tool_name!r} is disabled on this client "
            '(approve = "never")'
        )
    if ctx.approver is None:
        raise ToolDeclined(
            f"The user declined: nobody is available to approve tool {ctx.tool_name!r}"
        )
    request = ApprovalRequest(
        call_id=ctx.call_id, tool_name=ctx.tool_name, params=dict(params), summary=summary
    )
    if not await ctx.approver(request):
        raise ToolDeclined(f"The user declined to run tool {ctx.tool_name!r}")


def is_terminal(stream: IO[str] | None) -> bool:
    """Whether ``stream`` is an interactive terminal (False for pipes, files, None)."""
    if stream is None:
        return False
    try:
        return stream.isatty()
    except (ValueError, OSError):  # closed or detached
        return False


async def approve_all(request: ApprovalRequest) -> bool:
    """The approver behind an explicit ``--yes``: every ``ask`` call goes ahead
    (``approve = "never"`` tools are still refused, before any approver is asked)."""
    return True


def choose_approver(
    ask: Approver,
    *,
    answers_from: IO[str] | None,
    question_to: IO[str] | None,
    assume_yes: bool = False,
) -> Approver | None:
    """The approval policy: ``ask`` when a person can answer it at a terminal, every call
    approved with ``assume_yes``, otherwise nobody (so ``ask`` tools are declined).

    ``answers_from`` is where the answer would be read, ``question_to`` where the question
    is shown; both must be terminals. The TUI passes its own terminal's streams.
    """
    if assume_yes:
        return approve_all
    if is_terminal(answers_from) and is_terminal(question_to):
        return ask
    return None


def terminal_approver(stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> Approver:
    """An approver for line-oriented front ends: prints the call and reads y/N.

    Anything but ``y``/``yes`` (including end of input) declines, and so does every call
    when the streams are not both terminals at the time of asking (see
    :func:`choose_approver`). Prompts are serialised: two calls arriving together are asked
    one after the other.
    """
    lock = asyncio.Lock()

    async def approve(request: ApprovalRequest) -> bool:
        source = stdin if stdin is not None else sys.stdin
        sink = stdout if stdout is not None else sys.stderr
        if not (is_terminal(source) and is_terminal(sink)):
            return False  # piped input never approves
        async with lock:
            lines = [f"The agent wants to run client tool {request.tool_name!r}"]
            if request.summary:
                lines.append(f"  {printable(request.summary)}")
            lines.append(f"  params: {params_preview(request.params)}")
            sink.write("\n".join(lines) + "\nAllow? [y/N] ")
            sink.flush()
            answer = await in_daemon_thread(source.readline, name="fishtalk-tool-io")
            if not answer.endswith("\n"):
                sink.write("\n")
                sink.flush()
            return answer.strip().lower() in ("y", "yes")

    return approve
