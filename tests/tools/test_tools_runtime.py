"""The client-tool runtime: registry rules, handler outcomes, limits, concurrency, cancel."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from fishtalk.core import conversation as conv
from fishtalk.core.protocol import ClientToolCall, decode_client_event, encode_client_event
from fishtalk.engine.tools import (
    MAX_RESULT_BYTES,
    ToolContext,
    ToolDeclined,
    ToolOutcome,
    ToolRegistry,
    ToolRunner,
)

WAIT = 10.0  # every wait in these tests is bounded


def call(
    name: str = "echo",
    call_id: str = "call_1",
    params: dict[str, Any] | None = None,
    expects_response: bool = True,
) -> ClientToolCall:
    return ClientToolCall(
        call_id=call_id, tool_name=name, params=params or {}, expects_response=expects_response
    )


def wire(outcome: ToolOutcome) -> dict[str, Any]:
    """The result event as the agent would decode it from the wire."""
    assert outcome.result_event is not None
    return json.loads(encode_client_event(outcome.result_event))  # type: ignore[no-any-return]


# --- registry ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "open_dashboard", "tool-2", "A" + "b" * 63])
def test_valid_names_register(name: str) -> None:
    reg = ToolRegistry()
    reg.register(name, lambda p, c: None)
    assert name in reg
    assert reg.get(name) is not None


@pytest.mark.parametrize(
    "name", ["", "_builtin", "1tool", "has space", "dot.name", "x" * 65, "tool\n", "é"]
)
def test_invalid_names_are_refused_with_a_clear_message(name: str) -> None:
    reg = ToolRegistry()
    with pytest.raises(ValueError, match="invalid client-tool name") as info:
        reg.register(name, lambda p, c: None)
    assert "start with a letter" in str(info.value)
    assert len(reg) == 0


def test_duplicate_registration_needs_replace() -> None:
    reg = ToolRegistry()
    reg.register("t", lambda p, c: 1)
    with pytest.raises(ValueError, match="already registered"):
        reg.register("t", lambda p, c: 2)
    reg.register("t", lambda p, c: 3, replace=True, source="command", description="d")
    entry = reg.get("t")
    assert entry is not None
    assert entry.source == "command"
    assert entry.description == "d"
    reg.unregister("t")
    reg.unregister("t")
    assert "t" not in reg


@pytest.mark.parametrize("timeout", [0, -1, 121, float("nan"), float("inf"), True, "5"])
def test_bad_timeouts_are_refused(timeout: Any) -> None:
    with pytest.raises(ValueError, match="invalid tool timeout"):
        ToolRegistry().register("t", lambda p, c: None, timeout=timeout)


def test_non_callable_handler_is_refused() -> None:
    with pytest.raises(ValueError, match="not callable"):
        ToolRegistry().register("t", 42)  # type: ignore[arg-type]


def test_registry_lists_sorted() -> None:
    reg = ToolRegistry()
    reg.register("b", lambda p, c: None)
    reg.register("a", lambda p, c: None)
    assert reg.names() == ["a", "b"]
    assert [t.name for t in reg] == ["a", "b"]


# --- outcomes ----------------------------------------------------------------------------


async def test_sync_handler_runs_in_a_thread_and_gets_params_and_context() -> None:
    seen: dict[str, Any] = {}

    def handler(params: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        seen["thread"] = threading.current_thread()
        seen["ctx"] = ctx
        params["mutated"] = True  # must not leak into the call
        return {"tab": params["tab"], "ok": True}

    reg = ToolRegistry()
    reg.register("open_dashboard", handler)
    the_call = call("open_dashboard", params={"tab": "billing"})
    outcome = await ToolRunner(reg).run(the_call)

    assert outcome.status == "ok"
    assert outcome.result == {"tab": "billing", "ok": True}
    assert wire(outcome) == {
        "type": "client_tool.result",
        "callId": "call_1",
        "result": {"tab": "billing", "ok": True},
    }
    assert seen["thread"] is not threading.main_thread()
    assert seen["ctx"].call_id == "call_1"
    assert seen["ctx"].tool_name == "open_dashboard"
    assert "mutated" not in the_call.params
    assert outcome.error_code is None


async def test_async_handler() -> None:
    async def handler(params: dict[str, Any], ctx: ToolContext) -> list[int]:
        await asyncio.sleep(0)
        return [1, 2, 3]

    reg = ToolRegistry()
    reg.register("nums", handler)
    outcome = await ToolRunner(reg).run(call("nums"))
    assert outcome.status == "ok"
    assert wire(outcome)["result"] == [1, 2, 3]


async def test_async_callable_object_and_sync_returning_awaitable() -> None:
    class Tool:
        async def __call__(self, params: dict[str, Any], ctx: ToolContext) -> str:
            return "obj"

    async def later() -> str:
        return "later"

    reg = ToolRegistry()
    reg.register("obj", Tool())
    reg.register("lazy", lambda p, c: later())
    runner = ToolRunner(reg)
    assert (await runner.run(call("obj"))).result == "obj"
    assert (await runner.run(call("lazy"))).result == "later"


async def test_none_result_is_sent_as_empty_object() -> None:
    reg = ToolRegistry()
    reg.register("noop", lambda p, c: None)
    outcome = await ToolRunner(reg).run(call("noop"))
    assert outcome.status == "ok"
    assert wire(outcome) == {"type": "client_tool.result", "callId": "call_1", "result": {}}


async def test_raising_handler_gives_error_result() -> None:
    def handler(params: dict[str, Any], ctx: ToolContext) -> None:
        raise RuntimeError("disk\nfull")

    reg = ToolRegistry()
    reg.register("boom", handler)
    outcome = await ToolRunner(reg).run(call("boom"))
    assert outcome.status == "error"
    assert outcome.error == "RuntimeError: disk full"
    assert outcome.error_code == "tool_failed"
    assert wire(outcome) == {
        "type": "client_tool.result",
        "callId": "call_1",
        "result": "RuntimeError: disk full",
        "isError": True,
    }


async def test_async_raising_handler() -> None:
    async def handler(params: dict[str, Any], ctx: ToolContext) -> None:
        raise KeyError("missing")

    reg = ToolRegistry()
    reg.register("boom", handler)
    outcome = await ToolRunner(reg).run(call("boom"))
    assert outcome.status == "error"
    assert outcome.error is not None
    assert outcome.error.startswith("KeyError")


async def test_hanging_async_handler_times_out() -> None:
    cancelled = asyncio.Event()

    async def handler(params: dict[str, Any], ctx: ToolContext) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            cancelled.set()

    reg = ToolRegistry()
    reg.register("hang", handler, timeout=0.05)
    outcome = await ToolRunner(reg).run(call("hang"))
    assert outcome.status == "timeout"
    assert outcome.error_code == "tool_timeout"
    assert outcome.error == "Client tool 'hang' timed out after 0.05 s"
    assert wire(outcome)["isError"] is True
    await asyncio.wait_for(cancelled.wait(), WAIT)


async def test_handler_that_swallows_cancellation_cannot_hang_the_runner() -> None:
    release = asyncio.Event()

    async def stubborn(params: dict[str, Any], ctx: ToolContext) -> None:
        while not release.is_set():
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue

    reg = ToolRegistry()
    reg.register("stubborn", stubborn)
    outcome = await ToolRunner(reg, default_timeout=0.05).run(call("stubborn"))
    assert outcome.status == "timeout"
    release.set()


async def test_hanging_sync_handler_times_out_without_blocking_the_loop() -> None:
    gate = threading.Event()

    def handler(params: dict[str, Any], ctx: ToolContext) -> str:
        gate.wait(WAIT)
        return "too late"

    reg = ToolRegistry()
    reg.register("hang", handler)
    runner = ToolRunner(reg, default_timeout=0.05)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    tick_task = asyncio.create_task(ticker())
    outcome = await runner.run(call("hang"))
    tick_task.cancel()
    gate.set()
    assert outcome.status == "timeout"
    assert ticks > 1  # the loop kept running while the thread hung


async def test_per_tool_timeout_overrides_default() -> None:
    async def slow(params: dict[str, Any], ctx: ToolContext) -> str:
        await asyncio.sleep(0.05)
        return "done"

    reg = ToolRegistry()
    reg.register("slow", slow, timeout=WAIT)
    outcome = await ToolRunner(reg, default_timeout=0.001).run(call("slow"))
    assert outcome.status == "ok"


async def test_huge_result_becomes_error() -> None:
    reg = ToolRegistry()
    reg.register("big", lambda p, c: "x" * (MAX_RESULT_BYTES + 1))
    reg.register("fits", lambda p, c: "x" * (MAX_RESULT_BYTES - 2))  # + 2 quotes
    runner = ToolRunner(reg)
    outcome = await runner.run(call("big"))
    assert outcome.status == "error"
    assert outcome.error is not None
    assert "the limit is 60000" in outcome.error
    assert wire(outcome)["isError"] is True
    assert len(encode_client_event(outcome.result_event)) < 1000  # type: ignore[arg-type]
    assert (await runner.run(call("fits"))).status == "ok"


async def test_multibyte_result_size_counts_bytes() -> None:
    reg = ToolRegistry()
    reg.register("wide", lambda p, c: "é" * 40_000)  # 80 000 bytes in UTF-8
    outcome = await ToolRunner(reg).run(call("wide"))
    assert outcome.status == "error"


@pytest.mark.parametrize(
    "value", [object(), {1, 2}, float("nan"), {"k": b"bytes"}, {("tuple",): 1}]
)
async def test_non_serialisable_result_becomes_error(value: object) -> None:
    reg = ToolRegistry()
    reg.register("odd", lambda p, c: value)
    outcome = await ToolRunner(reg).run(call("odd"))
    assert outcome.status == "error"
    assert outcome.error is not None
    assert "not JSON" in outcome.error
    assert wire(outcome)["isError"] is True


async def test_tuple_result_is_normalised_to_a_list() -> None:
    reg = ToolRegistry()
    reg.register("t", lambda p, c: {"a": (1, 2)})
    outcome = await ToolRunner(reg).run(call("t"))
    assert outcome.result == {"a": [1, 2]}


async def test_unknown_tool_gives_error_result() -> None:
    outcome = await ToolRunner(ToolRegistry()).run(call("nope"))
    assert outcome.status == "unknown"
    assert outcome.error_code == "tool_failed"
    assert wire(outcome) == {
        "type": "client_tool.result",
        "callId": "call_1",
        "result": "Client tool 'nope' is not registered",
        "isError": True,
    }


async def test_declined_call() -> None:
    def handler(params: dict[str, Any], ctx: ToolContext) -> None:
        raise ToolDeclined

    reg = ToolRegistry()
    reg.register("risky", handler)
    outcome = await ToolRunner(reg).run(call("risky"))
    assert outcome.status == "declined"
    assert outcome.error_code is None
    assert wire(outcome)["isError"] is True


async def test_approver_reaches_the_handler() -> None:
    asked: list[str] = []

    async def approver(request: Any) -> bool:
        asked.append(request.tool_name)
        return True

    async def handler(params: dict[str, Any], ctx: ToolContext) -> str:
        from fishtalk.engine.tools import ApprovalRequest

        assert ctx.approver is not None
        ok = await ctx.approver(ApprovalRequest(ctx.call_id, ctx.tool_name, params))
        return "approved" if ok else "no"

    reg = ToolRegistry()
    reg.register("ask", handler)
    outcome = await ToolRunner(reg, approver=approver).run(call("ask"))
    assert outcome.result == "approved"
    assert asked == ["ask"]


async def test_fire_and_forget_runs_but_sends_nothing() -> None:
    ran = asyncio.Event()

    async def handler(params: dict[str, Any], ctx: ToolContext) -> str:
        ran.set()
        return "ignored"

    reg = ToolRegistry()
    reg.register("scroll", handler)
    runner = ToolRunner(reg)
    outcome = await runner.run(call("scroll", expects_response=False))
    assert ran.is_set()
    assert outcome.status == "ok"
    assert outcome.result_event is None
    failing = await runner.run(call("missing", expects_response=False))
    assert failing.status == "unknown"
    assert failing.result_event is None


async def test_calls_run_concurrently() -> None:
    both_started = asyncio.Barrier(2)

    async def handler(params: dict[str, Any], ctx: ToolContext) -> str:
        # Each call can only pass the barrier if the other is running at the same time.
        await asyncio.wait_for(both_started.wait(), WAIT)
        return ctx.call_id

    reg = ToolRegistry()
    reg.register("pair", handler)
    runner = ToolRunner(reg)
    a, b = await asyncio.gather(
        runner.run(call("pair", "call_a")), runner.run(call("pair", "call_b"))
    )
    assert (a.status, a.result) == ("ok", "call_a")
    assert (b.status, b.result) == ("ok", "call_b")
    assert runner.active == 0


async def test_cancel_all_stops_running_handlers() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()
    gate = threading.Event()

    async def slow(params: dict[str, Any], ctx: ToolContext) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    loop = asyncio.get_running_loop()
    in_thread = asyncio.Event()

    def blocking(params: dict[str, Any], ctx: ToolContext) -> None:
        loop.call_soon_threadsafe(in_thread.set)
        gate.wait(WAIT)

    reg = ToolRegistry()
    reg.register("slow", slow)
    reg.register("blocking", blocking)
    runner = ToolRunner(reg, default_timeout=60)
    tasks = [
        asyncio.create_task(runner.run(call("slow", "c1"))),
        asyncio.create_task(runner.run(call("blocking", "c2"))),
    ]
    await asyncio.wait_for(started.wait(), WAIT)
    await asyncio.wait_for(in_thread.wait(), WAIT)
    assert runner.active == 2
    assert runner.cancel_all() == 2
    outcomes = await asyncio.wait_for(asyncio.gather(*tasks), WAIT)
    gate.set()
    assert [o.status for o in outcomes] == ["error", "error"]
    assert all(o.error == "Cancelled: the session ended" for o in outcomes)
    await asyncio.wait_for(cancelled.wait(), WAIT)
    assert runner.active == 0
    assert runner.cancel_all() == 0


async def test_cancelling_the_caller_propagates_and_cancels_the_handler() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def slow(params: dict[str, Any], ctx: ToolContext) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    reg = ToolRegistry()
    reg.register("slow", slow)
    runner = ToolRunner(reg)
    task = asyncio.create_task(runner.run(call("slow")))
    await asyncio.wait_for(started.wait(), WAIT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(cancelled.wait(), WAIT)
    assert runner.active == 0


async def test_absurdly_nested_params_are_refused_not_crashed() -> None:
    nested: Any = "leaf"
    for _ in range(5000):
        nested = [nested]
    reg = ToolRegistry()
    reg.register("deep", lambda p, c: "ran")
    the_call = ClientToolCall.model_construct(
        call_id="call_1", tool_name="deep", params={"x": nested}, expects_response=True
    )
    outcome = await ToolRunner(reg).run(the_call)
    assert outcome.status == "error"
    assert outcome.error == "Tool parameters are nested too deeply"


def test_outcome_preview_and_reducer_input() -> None:
    ok = ToolOutcome("c", "t", "ok", result={"a": "x\ny" * 100}, duration=0.25)
    assert "\n" not in ok.preview
    assert len(ok.preview) == 200
    inp = ok.as_input(3.0)
    assert inp == conv.ClientToolFinished("c", "ok", 3.0, ok.preview, None, None)
    failed = ToolOutcome("c", "t", "timeout", error="too slow")
    assert failed.preview == "too slow"
    assert failed.as_input(1.0).error == "too slow"


def test_default_timeout_is_validated() -> None:
    with pytest.raises(ValueError, match="invalid tool timeout"):
        ToolRunner(ToolRegistry(), default_timeout=0)
    assert ToolRunner(ToolRegistry()).default_timeout == 15.0


# --- reducer integration -----------------------------------------------------------------


async def test_outcome_feeds_the_reducer_which_sends_the_result() -> None:
    reg = ToolRegistry()
    reg.register("boom", lambda p, c: 1 / 0)
    the_call = call("boom")
    state = conv.initial_state()
    for inp in (
        conv.Connected("user-1", 0.0),
        conv.AttributesChanged("agent", {"lk.agent.state": "listening"}, 0.1),
    ):
        state, _ = conv.reduce(state, inp)
    state, effects = conv.reduce(state, conv.AgentEventReceived(the_call, 1.0))
    assert effects == [conv.RunClientTool(the_call)]
    outcome = await ToolRunner(reg).run(the_call)
    state, effects = conv.reduce(state, outcome.as_input(1.5))
    assert effects == [conv.SendClientEvent(outcome.result_event)]  # type: ignore[arg-type]
    card = state.tool("call_1")
    assert card is not None
    assert card.client is not None
    assert card.client.status == "error"
    assert card.client.result_preview == "ZeroDivisionError: division by zero"
    assert [e.code for e in state.errors] == ["tool_failed"]
    payload = encode_client_event(outcome.result_event)  # type: ignore[arg-type]
    assert decode_client_event(payload) == outcome.result_event
