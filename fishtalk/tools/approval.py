"""Asking the user before a client tool acts, and a y/n approver for plain terminals.

Each tool has an approval mode: ``ask`` (confirm every call through the
:class:`~fishtalk.tools.registry.ToolContext`'s approver), ``always`` (run without asking)
or ``never`` (refuse every call). A refusal raises
:class:`~fishtalk.tools.registry.ToolDeclined`, which the runner turns into an error result
telling the agent the user declined. With ``ask`` and no approver (nobody to ask), the
call is declined: a tool never runs unconfirmed by accident.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Mapping
from typing import IO, Final, Literal, TypeAlias, TypeVar

from pydantic import JsonValue

from fishtalk.aio import in_daemon_thread
from fishtalk.tools.registry import ApprovalRequest, Approver, ToolContext, ToolDeclined

ApproveMode: TypeAlias = Literal["ask", "always", "never"]

_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
T = TypeVar("T")


def printable(text: str, limit: int = 500) -> str:
    """One terminal-safe line: control characters (escape sequences!) become spaces."""
    text = _CONTROL.sub(" ", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def params_preview(params: Mapping[str, JsonValue], limit: int = 500) -> str:
    """Params as compact JSON, ASCII-escaped so nothing in them can drive the terminal."""
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


def terminal_approver(stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> Approver:
    """An approver for line-oriented front ends: prints the call and reads y/N.

    Anything but ``y``/``yes`` (including end of input) declines. Prompts are serialised:
    two calls arriving together are asked one after the other.
    """
    lock = asyncio.Lock()

    async def approve(request: ApprovalRequest) -> bool:
        source = stdin if stdin is not None else sys.stdin
        sink = stdout if stdout is not None else sys.stderr
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
