"""y/N approvals in the plain front end: one question at a time, oldest first, and a
question withdrawn (with a line saying so) when its call times out.

Real pieces throughout: :class:`PlainChat` on an unstarted :class:`Session` (no network
needed to ask questions), the real :class:`ToolRunner` and ``require_approval``; input
lines are fed to the chat as its stdin reader would."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable

from pydantic import JsonValue

from fishtalk.cli.launch import build_session
from fishtalk.cli.settings import Settings
from fishtalk.core.protocol import ClientToolCall
from fishtalk.engine.tools import ToolContext, ToolOutcome, ToolRegistry, ToolRunner
from fishtalk.engine.tools.approval import require_approval
from fishtalk.plain.chat import PlainChat


def _chat() -> tuple[PlainChat, io.StringIO]:
    session = build_session(
        Settings.model_validate({"session": {"agent_id": "x", "text_only": True}})
    )
    out = io.StringIO()
    return PlainChat(session, stdin=io.StringIO(), stdout=out, stream_agent=True), out


def _runner(chat: PlainChat, ran: list[str], *, timeout: float = 30) -> ToolRunner:
    async def guarded(params: dict[str, JsonValue], ctx: ToolContext) -> object:
        await require_approval("ask", ctx, params)
        ran.append(str(params["n"]))
        return {"ran": params["n"]}

    registry = ToolRegistry()
    registry.register("guarded", guarded, timeout=timeout)
    return ToolRunner(registry, approver=chat.approve)


def _call(n: int) -> ClientToolCall:
    return ClientToolCall(call_id=f"c{n}", tool_name="guarded", params={"n": n})


async def _until(cond: Callable[[], bool], what: str) -> None:
    """Let the loop run until ``cond`` holds (at most about 10 s)."""
    for _ in range(1000):
        if cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


async def test_two_pending_approvals_are_asked_in_turn() -> None:
    chat, out = _chat()
    ran: list[str] = []
    runner = _runner(chat, ran)
    first = asyncio.ensure_future(runner.run(_call(1)))
    second = asyncio.ensure_future(runner.run(_call(2)))
    await _until(lambda: len(chat._approvals) == 2, "both questions pending")
    assert out.getvalue().count("? allow client tool guarded") == 1
    assert 'params: {"n": 1} [y/N]' in out.getvalue()
    assert '{"n": 2}' not in out.getvalue()
    assert "? another approval is waiting (guarded); it is asked after the one before it" in (
        out.getvalue()
    )

    chat._on_line("y")  # answers the oldest, then the next question shows
    assert 'params: {"n": 2} [y/N]' in out.getvalue()
    outcome: ToolOutcome = await asyncio.wait_for(first, 10)
    assert outcome.status == "ok"
    assert not second.done()

    chat._on_line("n")
    outcome = await asyncio.wait_for(second, 10)
    assert outcome.status == "declined"
    assert ran == ["1"]
    assert not chat._approvals


async def test_an_expired_question_is_announced_and_the_next_line_is_chat() -> None:
    chat, out = _chat()
    ran: list[str] = []
    runner = _runner(chat, ran, timeout=0.3)
    outcome = await asyncio.wait_for(runner.run(_call(1)), 10)
    assert outcome.status == "timeout"
    assert "? approval for 'guarded' timed out; declined" in out.getvalue()
    assert not chat._approvals

    chat._on_line("y")  # no question pending: a typed turn (queued: not connected yet)
    assert [seg.text for seg in chat.session.state.transcript if seg.typed] == ["y"]
    assert ran == []


async def test_an_expired_question_behind_another_is_announced_and_skipped() -> None:
    chat, out = _chat()
    ran: list[str] = []
    patient = _runner(chat, ran)
    hasty = _runner(chat, ran, timeout=0.3)
    first = asyncio.ensure_future(patient.run(_call(1)))
    await _until(lambda: len(chat._approvals) == 1, "the first question")
    outcome = await asyncio.wait_for(hasty.run(_call(2)), 10)
    assert outcome.status == "timeout"
    assert "? approval for 'guarded' timed out; declined" in out.getvalue()
    assert '{"n": 2}' not in out.getvalue()  # never shown: it expired in the queue

    chat._on_line("y")  # still answers the first
    assert (await asyncio.wait_for(first, 10)).status == "ok"
    assert ran == ["1"]


async def test_end_of_input_declines_every_pending_question() -> None:
    chat, _ = _chat()
    ran: list[str] = []
    runner = _runner(chat, ran)
    calls = [asyncio.ensure_future(runner.run(_call(n))) for n in (1, 2, 3)]
    await _until(lambda: len(chat._approvals) == 3, "three questions pending")
    chat._on_line(None)
    outcomes = await asyncio.wait_for(asyncio.gather(*calls), 10)
    assert [o.status for o in outcomes] == ["declined"] * 3
    assert ran == []
    chat.session.hangup()
    await asyncio.wait_for(chat.session.run(), 5)
    if chat._eof_task is not None:  # the hang-up it would do is done already
        chat._eof_task.cancel()


async def test_a_line_for_the_agent_is_not_an_answer_and_is_not_lost() -> None:
    """At a pending question only y/n answer; ``hello`` goes to the agent, the question
    stays, and a later ``y`` answers it."""
    chat, out = _chat()
    ran: list[str] = []
    runner = _runner(chat, ran)
    call = asyncio.ensure_future(runner.run(_call(1)))
    await _until(lambda: len(chat._approvals) == 1, "the question")
    assert "answer y or n; any other line is sent to the agent" in out.getvalue()
    chat._on_line("hello")
    chat._on_line("yes please")  # not exactly "yes": a message too
    assert [seg.text for seg in chat.session.state.transcript if seg.typed] == [
        "hello",
        "yes please",
    ]
    assert not call.done()
    assert len(chat._approvals) == 1
    assert "still waiting: allow guarded? answer y or n" in out.getvalue()
    chat._on_line("/yes")
    outcome = await asyncio.wait_for(call, 10)
    assert outcome.status == "ok"
    assert ran == ["1"]


async def test_commands_still_work_at_a_question() -> None:
    chat, _out = _chat()
    runner = _runner(chat, [])
    call = asyncio.ensure_future(runner.run(_call(1)))
    await _until(lambda: len(chat._approvals) == 1, "the question")
    chat._on_line("/spoken on")
    assert chat.session.state.spoken
    assert len(chat._approvals) == 1
    chat._on_line("N")
    assert (await asyncio.wait_for(call, 10)).status == "declined"
