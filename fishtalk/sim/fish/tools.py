"""The simulated agent's tools: client tool calls, and the tool events it emits.

:class:`Tools` calls client tools (``client_tool.call``), waits for ``client_tool.result``
up to a server-side deadline (30 s unless the scenario says otherwise), ignores late,
unknown and fire-and-forget results, and emits ``tool.started`` / ``tool.completed`` /
``tool.failed`` for client tools and for the agent's own webhook / mcp / builtin tools
(payloads over 4 KB truncated and flagged), unless the session was created with
``tool_events: false``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass
from typing import Any

from fishtalk.core import protocol as p
from fishtalk.sim.fish.core import AgentCore
from fishtalk.sim.fish.scenario import ToolRun


@dataclass(frozen=True)
class ToolReply:
    """How a client tool call came out."""

    ok: bool
    result: Any
    reason: str
    """"result", "error", "timeout" or "fire_and_forget"."""

    def describe(self, name: str) -> str:
        """What the agent says about it."""
        if self.reason == "fire_and_forget":
            return f"I asked your client to run {name}; I don't need an answer."
        if self.reason == "timeout":
            return f"Your client did not answer my {name} call in time, so I moved on."
        if self.reason == "error":
            return f"Your {name} tool failed: {short(self.result)}"
        return f"Your {name} tool returned {short(self.result)}"


def preview(value: Any, pad_to: int = 0) -> tuple[str, bool | None]:
    """A tool payload as sent on the wire: JSON text, truncated at 4 KB and flagged."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if pad_to > len(text.encode("utf-8")):
        if isinstance(value, dict):
            missing = pad_to - len(text.encode("utf-8")) - len(',"padding":""')
            padded = {**value, "padding": "x" * max(missing, 0)}
            text = json.dumps(padded, separators=(",", ":"))
        else:
            text += " " * (pad_to - len(text.encode("utf-8")))
    raw = text.encode("utf-8")
    if len(raw) <= p.MAX_PAYLOAD_PREVIEW:
        return text, None
    return raw[: p.MAX_PAYLOAD_PREVIEW].decode("utf-8", errors="ignore"), True


def short(value: Any, limit: int = 100) -> str:
    """``value`` as one short line of text."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Tools:
    """Client tool calls in flight, and the tool events the session asked for."""

    def __init__(self, core: AgentCore) -> None:
        self._core = core
        self._pending: dict[str, asyncio.Future[p.ClientToolResult]] = {}

    def result(self, event: p.ClientToolResult) -> None:
        """Settle the call ``event`` answers (late, unknown and settled ones are ignored)."""
        pending = self._pending.get(event.call_id)
        if pending is None or pending.done():
            self._core.note(f"ignored result for unknown or settled call {event.call_id}")
        else:
            pending.set_result(event)

    def cancel_all(self) -> None:
        """Give up on every call still waiting (the agent is leaving)."""
        for fut in self._pending.values():
            fut.cancel()

    async def _event(self, event: p.ToolEvent) -> None:
        if self._core.session.body.tool_events:
            await self._core.send(event)

    async def run_own(self, step: ToolRun) -> None:
        """Emit the events of one of the agent's own (webhook, mcp, builtin) tool runs."""
        call_id = "tool_" + secrets.token_hex(6)
        source = step.source
        text_in, in_cut = preview(
            step.input if step.input is not None else {}, step.pad_input_bytes
        )
        await self._event(
            p.ToolStarted(
                call_id=call_id,
                tool_name=step.name,
                tool_source=source,
                input=text_in,
                input_truncated=in_cut,
                node_id=step.node_id,
            )
        )
        self._core.note(f"tool {step.name} started")
        await asyncio.sleep(step.duration)
        output, out_cut = (None, None)
        if step.output is not None or step.pad_output_bytes:
            output, out_cut = preview(step.output, step.pad_output_bytes)
        common: dict[str, Any] = {
            "call_id": call_id,
            "tool_name": step.name,
            "tool_source": source,
            "input": text_in,
            "input_truncated": in_cut,
            "output": output,
            "output_truncated": out_cut,
            "node_id": step.node_id,
        }
        if step.error is not None:
            await self._event(p.ToolFailed(error=step.error, **common))
            self._core.note(f"tool {step.name} failed")
        else:
            await self._event(p.ToolCompleted(**common))
            self._core.note(f"tool {step.name} completed")

    async def call_client(
        self,
        name: str,
        params: dict[str, Any],
        *,
        expects_response: bool = True,
        deadline: float | None = None,
        call_id: str | None = None,
    ) -> ToolReply:
        """Ask the client to run ``name``; wait for its result up to the deadline."""
        core = self._core
        call_id = call_id or "call_" + secrets.token_hex(6)
        if deadline is None:
            deadline = core.settings.tool_deadline_seconds
        text_in, in_cut = preview(params)
        await self._event(
            p.ToolStarted(
                call_id=call_id,
                tool_name=name,
                tool_source="client",
                input=text_in,
                input_truncated=in_cut,
            )
        )
        fut: asyncio.Future[p.ClientToolResult] = asyncio.get_running_loop().create_future()
        if expects_response:
            self._pending[call_id] = fut
        await core.set_state("thinking")
        await core.send(
            p.ClientToolCall(
                call_id=call_id, tool_name=name, params=params, expects_response=expects_response
            )
        )
        core.note(f"called client tool {name} ({call_id}, expects_response={expects_response})")
        common: dict[str, Any] = {
            "call_id": call_id,
            "tool_name": name,
            "tool_source": "client",
            "input": text_in,
            "input_truncated": in_cut,
        }
        if not expects_response:
            await self._event(p.ToolCompleted(**common))
            return ToolReply(True, None, "fire_and_forget")
        try:
            result = await asyncio.wait_for(fut, deadline)
        except TimeoutError:
            core.note(f"client tool {name} timed out after {deadline:g} s")
            await self._event(p.ToolFailed(error=f"no result within {deadline:g} s", **common))
            return ToolReply(False, None, "timeout")
        finally:
            # Settled or timed out: any later result for this call id is ignored.
            if not fut.done():
                fut.cancel()
        output, out_cut = preview(result.result)
        if result.is_error:
            core.note(f"client tool {name} failed: {short(result.result)}")
            await self._event(
                p.ToolFailed(
                    error=short(result.result, 200),
                    output=output,
                    output_truncated=out_cut,
                    **common,
                )
            )
            return ToolReply(False, result.result, "error")
        core.note(f"client tool {name} returned {short(result.result)}")
        await self._event(p.ToolCompleted(output=output, output_truncated=out_cut, **common))
        return ToolReply(True, result.result, "result")


__all__ = ["ToolReply", "Tools", "preview", "short"]
