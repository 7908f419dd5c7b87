"""Running client-tool calls: timeouts, result limits, concurrency and cancellation.

:meth:`ToolRunner.run` never raises for anything a handler does (only when the task
running it is itself cancelled). Every call ends in a :class:`ToolOutcome`, which carries
the ``client_tool.result`` to publish when the call expects a response, and converts into
the reducer's :class:`~fishtalk.core.conversation.ClientToolFinished` input.

Sync handlers run in a daemon thread: a thread cannot be stopped, so one that hangs past
its timeout is abandoned (its eventual result is dropped) and, being a daemon, never keeps
the process alive or blocks event-loop shutdown.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from pydantic import JsonValue, ValidationError

from fishtalk.core.conversation import ClientToolFinished
from fishtalk.core.protocol import (
    ClientToolCall,
    ClientToolResult,
    ProtocolError,
    encode_client_event,
)
from fishtalk.engine.aio import in_daemon_thread
from fishtalk.engine.tools.registry import (
    Approver,
    ToolContext,
    ToolDeclined,
    ToolError,
    ToolHandler,
    ToolRegistry,
    check_timeout,
)

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT: Final = 15.0
"""Client-side handler timeout in seconds (the web SDK's default)."""
MAX_RESULT_BYTES: Final = 60_000
"""Serialised results above this size are replaced by an error result (data packets on the
LiveKit reliable channel must stay well under 64 KiB)."""
PREVIEW_CHARS: Final = 200

OutcomeStatus: TypeAlias = Literal["ok", "error", "timeout", "declined", "unknown"]
"""``unknown``: no handler is registered for the tool name."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """How one client tool call ended."""

    call_id: str
    tool_name: str
    status: OutcomeStatus
    result: JsonValue = None
    """The JSON result sent to the agent when ``status == "ok"`` (``{}`` for None)."""
    error: str | None = None
    """The error text (also what the agent receives as the error result)."""
    duration: float = 0.0
    result_event: ClientToolResult | None = None
    """The ``client_tool.result`` to publish; None for fire-and-forget calls."""

    @property
    def ok(self) -> bool:
        """Whether the handler succeeded."""
        return self.status == "ok"

    @property
    def error_code(self) -> Literal["tool_failed", "tool_timeout"] | None:
        """The local error code the web SDK would emit, if any (a decline is not an error)."""
        if self.status == "timeout":
            return "tool_timeout"
        if self.status in ("error", "unknown"):
            return "tool_failed"
        return None

    @property
    def preview(self) -> str:
        """A short one-line rendering of the result or the error."""
        if self.status != "ok":
            text = self.error or self.status
        else:
            text = json.dumps(self.result, ensure_ascii=False, separators=(",", ":"))
        text = " ".join(text.split())
        return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"

    def as_input(self, at: float) -> ClientToolFinished:
        """The reducer input reporting this outcome (``at``: monotonic seconds)."""
        return ClientToolFinished(
            call_id=self.call_id,
            status=self.status,
            at=at,
            result_preview=self.preview,
            error=self.error,
            result_event=self.result_event,
        )


@dataclass(slots=True, eq=False)  # identity hashing: kept in a set
class _Running:
    task: asyncio.Task[object]
    stop: asyncio.Future[object]


class ToolRunner:
    """Runs client tool calls against a :class:`ToolRegistry`.

    Calls run concurrently (each :meth:`run` is awaited in its own task by the session);
    :meth:`cancel_all` stops every running handler, e.g. on hangup.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        default_timeout: float = DEFAULT_TIMEOUT,
        approver: Approver | None = None,
        *,
        max_result_bytes: int = MAX_RESULT_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        checked = check_timeout(default_timeout)
        if checked is None:
            raise ValueError("the default tool timeout must be a number of seconds")
        self.registry = registry
        self.default_timeout = checked
        self.approver = approver
        self.max_result_bytes = max_result_bytes
        self._clock = clock
        self._running: set[_Running] = set()

    @property
    def active(self) -> int:
        """How many handlers are running now."""
        return len(self._running)

    def cancel_all(self) -> int:
        """Cancel every running handler; their :meth:`run` calls return at once with an
        error outcome. Returns how many were cancelled. Safe to call any time."""
        running = list(self._running)
        for item in running:
            item.task.cancel()
            if not item.stop.done():
                item.stop.set_result(None)
        return len(running)

    async def run(self, call: ClientToolCall) -> ToolOutcome:
        """Run one call to completion, timeout, or cancellation; never raises for handler
        behaviour. Raises CancelledError only if the calling task itself is cancelled."""
        started = self._clock()
        entry = self.registry.get(call.tool_name)
        if entry is None:
            log.debug("client tool %r is not registered (call %s)", call.tool_name, call.call_id)
            return self._failure(
                call, "unknown", f"Client tool {call.tool_name!r} is not registered", started
            )
        timeout = entry.timeout if entry.timeout is not None else self.default_timeout
        ctx = ToolContext(call_id=call.call_id, tool_name=call.tool_name, approver=self.approver)
        # The handler gets its own copy: params are untrusted and the reducer keeps the
        # original for display.
        try:
            params = copy.deepcopy(dict(call.params))
        except RecursionError:
            return self._failure(call, "error", "Tool parameters are nested too deeply", started)
        loop = asyncio.get_running_loop()
        running = _Running(
            task=loop.create_task(_invoke(entry.handler, params, ctx)),
            stop=loop.create_future(),
        )
        running.task.add_done_callback(_consume)
        self._running.add(running)
        waiters: set[asyncio.Future[object]] = {running.task, running.stop}
        try:
            done, _ = await asyncio.wait(
                waiters,
                timeout=timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except asyncio.CancelledError:
            running.task.cancel()
            raise
        finally:
            self._running.discard(running)
            if not running.stop.done():
                running.stop.cancel()

        if running.task not in done or running.task.cancelled():
            running.task.cancel()
            if running.stop.done() and not running.stop.cancelled():
                return self._failure(call, "error", "Cancelled: the session ended", started)
            if running.task not in done:
                message = f"Client tool {call.tool_name!r} timed out after {timeout:g} s"
                return self._failure(call, "timeout", message, started)
            return self._failure(call, "error", "Cancelled", started)
        exc = running.task.exception()
        if isinstance(exc, ToolDeclined):
            message = str(exc) or f"The user declined to run {call.tool_name!r}"
            return self._failure(call, "declined", message, started)
        if exc is not None:
            log.debug("client tool %r raised %s", call.tool_name, type(exc).__name__)
            return self._failure(call, "error", _describe(exc), started)
        return self._success(call, running.task.result(), started)

    # --- outcomes ---------------------------------------------------------------------

    def _failure(
        self, call: ClientToolCall, status: OutcomeStatus, message: str, started: float
    ) -> ToolOutcome:
        message = _valid_text(message)
        event = (
            ClientToolResult(call_id=call.call_id, result=message, is_error=True)
            if call.expects_response
            else None
        )
        return ToolOutcome(
            call_id=call.call_id,
            tool_name=call.tool_name,
            status=status,
            error=message,
            duration=max(0.0, self._clock() - started),
            result_event=event,
        )

    def _success(self, call: ClientToolCall, value: object, started: float) -> ToolOutcome:
        if value is None:
            value = {}
        try:
            encoded = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError) as exc:
            message = f"Client tool {call.tool_name!r} returned a result that is not JSON: {exc}"
            return self._failure(call, "error", message, started)
        try:
            size = len(encoded.encode("utf-8"))
        except UnicodeEncodeError:
            # Lone surrogates (e.g. bytes decoded with errors="surrogateescape"): no JSON
            # parser on the agent's side accepts them, so the call fails instead of the send.
            message = (
                f"Client tool {call.tool_name!r} returned text that is not valid Unicode "
                "(lone surrogates)"
            )
            return self._failure(call, "error", message, started)
        if size > self.max_result_bytes:
            message = (
                f"Client tool {call.tool_name!r} returned {size} bytes; "
                f"the limit is {self.max_result_bytes}"
            )
            return self._failure(call, "error", message, started)
        # Round-trip so tuples, subclasses and the like become plain JSON values.
        result: JsonValue = json.loads(encoded)
        event: ClientToolResult | None = None
        if call.expects_response:
            try:
                event = ClientToolResult(call_id=call.call_id, result=result)
                # What the session will publish must encode; a result stuck at the send
                # would leave the agent waiting until its own deadline.
                encode_client_event(event)
            except (ValidationError, ProtocolError) as exc:
                message = f"Client tool {call.tool_name!r} returned an unsendable result: {exc}"
                return self._failure(call, "error", message, started)
        return ToolOutcome(
            call_id=call.call_id,
            tool_name=call.tool_name,
            status="ok",
            result=result,
            duration=max(0.0, self._clock() - started),
            result_event=event,
        )


# --- invocation -------------------------------------------------------------------------


def _is_async(handler: ToolHandler) -> bool:
    if inspect.iscoroutinefunction(handler):
        return True
    call = getattr(handler, "__call__", None)  # noqa: B004 - looking for an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


async def _invoke(handler: ToolHandler, params: dict[str, JsonValue], ctx: ToolContext) -> object:
    result: object = (
        handler(params, ctx)
        if _is_async(handler)
        else await in_daemon_thread(
            lambda: handler(params, ctx), name=f"fishtalk-tool-{ctx.tool_name}"
        )
    )
    if inspect.isawaitable(result):
        result = await result
    return result


def _consume(task: asyncio.Task[object]) -> None:
    # Abandoned handlers (timeouts, cancel_all) would otherwise log "exception was never
    # retrieved" at garbage collection.
    if not task.cancelled():
        task.exception()


def _valid_text(text: str) -> str:
    """``text`` with anything UTF-8 cannot carry (lone surrogates) replaced."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, ToolError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
