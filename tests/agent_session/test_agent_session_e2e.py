"""``fishtalk.AgentSession`` against the sim: the real SDK, the real session API client.

One test per outcome of the Python API: a turn's events in order, client tools as plain
callables, every session-API failure as its own exception class, concurrent and
sequential sessions, clean shutdown after an error in the ``async with`` body (nothing
left running: tasks, threads, the room), and use from a plain ``asyncio.run`` script.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue

from fishtalk import AgentSession, ConnectionFailedError, SessionEndedError, ToolContext, events
from fishtalk.core import errors as e
from fishtalk.engine.session import Timeouts
from fishtalk.engine.tools import ApprovalRequest
from fishtalk.sim.runner import SimInfo

from .conftest import WAIT, in_order, options, our_tasks, our_threads

pytestmark = pytest.mark.webrtc


async def test_the_events_of_a_turn_arrive_in_order(sim: SimInfo) -> None:
    session = AgentSession(**options(sim))
    stream = session.events()  # subscribed before connecting: sees the connection too
    seen: list[str] = []
    finals: list[events.SegmentFinalised] = []
    session.on("*", lambda ev: seen.append(ev.kind))
    session.on(events.SegmentFinalised, finals.append)
    async with session:
        assert session.status == "connected"
        greeting = await session.wait_for_reply(WAIT)
        assert greeting.text == "Hello from the sim."
        sent = await session.send_text("What is two and two?")
        assert sent.typed
        assert not sent.queued
        reply = await session.wait_for_reply(WAIT)
        assert reply.role == "agent"
        assert reply.final
        assert reply.text.startswith("You said: What is two and two?")
        assert session.transcript[-1].segment_id == reply.segment_id
    kinds = [ev.kind async for ev in stream]
    assert kinds[-2:] == ["status_change", "ended"]
    assert in_order(
        kinds,
        [
            "status_change",  # connected
            "agent_state_change",
            "segment_opened",  # the greeting
            "segment_grew",
            "segment_finalised",
            "segment_opened",  # our message
            "message_sent",
            "segment_opened",  # the reply
            "mode_change",  # speaking
            "segment_grew",
            "segment_finalised",
            "mode_change",  # listening
            "status_change",  # ended
            "ended",
        ],
    )
    assert seen == kinds  # on("*") saw exactly what the stream saw
    assert [f.segment.text for f in finals if f.segment.role == "agent"] == [
        greeting.text,
        reply.text,
    ]
    assert session.end_result is not None
    assert session.end_result.reason == "user_hangup"
    assert session.state.ended


async def test_client_tools_are_plain_callables(sim: SimInfo) -> None:
    calls: list[tuple[dict[str, JsonValue], ToolContext]] = []

    def get_time(params: dict[str, JsonValue], ctx: ToolContext) -> dict[str, str]:
        calls.append((params, ctx))
        return {"time": "12:34", "zone": str(params.get("zone"))}

    cards: list[events.ToolCardAdded | events.ToolCardChanged] = []
    tools = {"get_time": get_time}
    async with AgentSession(**options(sim, agent_id="tool"), client_tools=tools) as s:
        s.on(events.ToolCardAdded, cards.append)
        s.on(events.ToolCardChanged, cards.append)
        await s.send_text("What time is it?")
        reply = await s.wait_for_reply(WAIT)
    assert len(calls) == 1
    params, ctx = calls[0]
    assert params == {"zone": "UTC"}
    assert ctx.tool_name == "get_time"
    assert ctx.call_id
    assert "12:34" in reply.text  # the agent heard the result
    called = [c.client_call for c in cards if c.client_call is not None]
    results = [c.client_result for c in cards if c.client_result is not None]
    assert [(call.tool_name, dict(call.params)) for call in called] == [("get_time", params)]
    assert [r.status for r in results] == ["ok"]  # the local result, reported once
    assert results[0].result_preview is not None
    assert "12:34" in results[0].result_preview
    assert cards[-1].card.call_id == ctx.call_id


async def test_async_client_tool_errors_become_error_results(sim: SimInfo) -> None:
    async def get_time(params: dict[str, JsonValue], ctx: ToolContext) -> object:
        await asyncio.sleep(0)
        raise RuntimeError("the clock is broken")

    errors_seen: list[events.ErrorAdded] = []
    tools = {"get_time": get_time}
    async with AgentSession(**options(sim, agent_id="tool"), client_tools=tools) as s:
        s.on("error", errors_seen.append)
        await s.send_text("What time is it?")
        reply = await s.wait_for_reply(WAIT)
    assert "the clock is broken" in reply.text  # the error result reached the agent
    assert [err.error.code for err in errors_seen] == ["tool_failed"]


@pytest.mark.parametrize(
    ("agent_id", "expected"),
    [
        ("err-400", e.BadRequestError),
        ("err-401", e.AuthenticationError),
        ("err-402", e.PaymentRequiredError),
        ("err-403-origin", e.OriginForbiddenError),
        ("err-403-private", e.AgentNotPublicError),
        ("err-403-unavailable", e.AgentUnavailableError),
        ("err-404", e.NotFoundError),
        ("err-409", e.ConflictError),
        ("err-415", e.UnsupportedMediaTypeError),
        ("err-422", e.RequestValidationError),
        ("err-429", e.RateLimitedError),
        ("err-500", e.ServerError),
        ("err-502", e.BadGatewayError),
        ("err-503", e.ServiceUnavailableError),
        ("err-badjson", e.UnexpectedResponseError),
        ("transport-webrtc", e.UnsupportedTransportError),
        ("err-slow", e.ApiTimeoutError),
    ],
)
async def test_each_session_api_failure_raises_its_class(
    sim: SimInfo, agent_id: str, expected: type[e.FishtalkError]
) -> None:
    before = our_tasks()
    session = AgentSession(**options(sim, agent_id=agent_id), api_timeout=1.0)
    with pytest.raises(expected) as caught:
        async with session:
            pytest.fail("the body must not run when the session could not be created")
    assert type(caught.value) is expected
    if isinstance(caught.value, e.ApiError):
        assert isinstance(caught.value, e.SessionApiError)
    assert session.state.ended
    assert our_tasks() <= before


async def test_an_unreachable_api_raises_a_connection_error(sim: SimInfo) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    session = AgentSession(**options(sim, api_url=f"http://127.0.0.1:{port}"), api_timeout=1.0)
    with pytest.raises(e.ApiConnectionError):
        await session.start()
    assert isinstance(ConnectionFailedError("x", reason="connection_failed"), SessionEndedError)


async def test_a_missing_key_is_refused_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FISH_API_KEY", raising=False)
    with pytest.raises(e.ClientConfigError, match="FISH_API_KEY"):
        AgentSession(agent_id="quiet")
    with pytest.raises(e.ClientConfigError, match="origin"):
        AgentSession(agent_id="quiet", public=True)
    with pytest.raises(ValueError, match="agent_id"):
        AgentSession(api_key="k")


async def test_two_sessions_at_the_same_time(sim: SimInfo) -> None:
    async def ask(question: str) -> str:
        async with AgentSession(**options(sim)) as s:
            await s.wait_for_reply(WAIT)
            await s.send_text(question)
            return (await s.wait_for_reply(WAIT)).text

    first, second = await asyncio.wait_for(asyncio.gather(ask("apples"), ask("pears")), WAIT * 2)
    assert first.startswith("You said: apples")
    assert second.startswith("You said: pears")


async def test_an_error_in_the_body_shuts_everything_down(sim: SimInfo) -> None:
    threads, tasks = our_threads(), our_tasks()
    for _ in range(2):  # one session after another, in one process
        session = AgentSession(**options(sim), client_tools={"get_time": lambda p, c: None})
        with pytest.raises(ZeroDivisionError):  # noqa: PT012 - the body is what is tested
            async with session:
                await session.send_text("hello")
                _ = 1 / 0
        assert session.state.ended
        assert session.end_result is not None
        assert session.end_result.reason == "user_hangup"
        assert our_tasks() <= tasks  # nothing of ours is left on the loop
        assert our_threads() <= threads  # no worker thread either
        with pytest.raises(SessionEndedError) as ended:
            await session.send_text("too late")
        assert ended.value.reason == "user_hangup"
        with pytest.raises(SessionEndedError):
            await session.wait_for_reply(1.0)
        assert [ev async for ev in session.events()] == []  # nothing more will come
        await session.close()  # twice is harmless


async def test_a_session_that_cannot_connect_raises_connection_failed(sim: SimInfo) -> None:
    from datetime import UTC, datetime, timedelta

    from pydantic import SecretStr

    from fishtalk.engine.api import LiveKitGrant

    grant = LiveKitGrant(  # a room server that is not there
        session_id="sess_nowhere",
        expires_at=datetime.now(UTC) + timedelta(minutes=5),
        max_duration_seconds=60,
        livekit_url="ws://127.0.0.1:9",
        token=SecretStr("not-a-token"),
    )
    tasks = our_tasks()
    short = Timeouts(connect=3.0, signal_attempt=1.0, agent_join=2.0)
    with pytest.raises(ConnectionFailedError) as caught:
        async with AgentSession(grant=grant, text_only=True, timeouts=short):
            pytest.fail("not connected")
    assert caught.value.reason == "connection_failed"
    assert our_tasks() <= tasks


SCRIPT = """
import asyncio, os
from fishtalk import AgentSession

async def main() -> None:
    async with AgentSession(
        agent_id="quiet", api_url=os.environ["SIM_URL"], api_key=os.environ["SIM_KEY"],
        text_only=True,
    ) as session:
        print("greeting:", (await session.wait_for_reply(30)).text)
        await session.send_text("from a script")
        print("reply:", (await session.wait_for_reply(30)).text)

asyncio.run(main())

print("done")
"""


async def test_a_plain_asyncio_run_script(sim: SimInfo) -> None:
    env: dict[str, Any] = {**os.environ, "SIM_URL": sim.api_url, "SIM_KEY": sim.dev_key}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        textwrap.dedent(SCRIPT),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), WAIT * 2)
    text = out.decode()
    assert proc.returncode == 0, err.decode()
    assert err.decode() == ""  # the promised silence: no SDK log line (v1 fallback and all)
    turn = [
        "greeting: Hello from the sim.",
        "reply: You said: from a script. Try 'call get_local_context', 'error' or 'goodbye'.",
    ]
    assert text.splitlines() == [*turn, "done"]


class _Silent:
    """A TCP server that accepts and never answers: a room connect to it stays in flight
    until the SDK's own attempts time out."""

    def __init__(self) -> None:
        self.accepted = asyncio.Event()
        self._held: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> _Silent:
        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self._held.append(writer)
            self.accepted.set()

        self._server = await asyncio.start_server(silent, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for writer in self._held:
            writer.close()
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    def grant(self) -> Any:
        from datetime import UTC, datetime, timedelta

        from pydantic import SecretStr

        from fishtalk.engine.api import LiveKitGrant

        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return LiveKitGrant(
            session_id="sess_silent",
            expires_at=datetime.now(UTC) + timedelta(minutes=5),
            max_duration_seconds=60,
            livekit_url=f"ws://127.0.0.1:{port}",
            token=SecretStr("not-a-token"),
        )


def _settled_not_cancelled(caplog: pytest.LogCaptureFixture) -> None:
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("fishtalk")]
    assert any("still in flight" in m for m in messages), messages
    assert not any("did not settle" in m for m in messages), messages


async def test_a_connect_in_flight_is_never_cancelled(
    sim: SimInfo, caplog: pytest.LogCaptureFixture
) -> None:
    """The join times out while the SDK's connect still runs (a server that accepts and
    never answers): the session ends at once, the connect is left to finish, not cancelled
    (a cancelled connect strands the SDK's handshake), and close() waits for it and
    disconnects, so nothing is left running."""
    tasks = our_tasks()
    caplog.set_level("INFO", logger="fishtalk")
    async with _Silent() as silent:
        session = AgentSession(
            grant=silent.grant(),
            text_only=True,
            timeouts=Timeouts(connect=0.5, signal_attempt=1.0),
        )
        with pytest.raises(ConnectionFailedError):
            await asyncio.wait_for(session.start(), WAIT * 2)
        assert silent.accepted.is_set()
        _settled_not_cancelled(caplog)
        assert our_tasks() <= tasks  # the connect finished and the room was let go


async def test_cancelling_the_caller_during_connect_does_not_cancel_the_connect(
    sim: SimInfo, caplog: pytest.LogCaptureFixture
) -> None:
    """A user's own timeout around ``async with`` cancels the caller, never the SDK's
    connect: the session hangs up, and close() lets the connect settle first."""
    tasks = our_tasks()
    caplog.set_level("INFO", logger="fishtalk")
    async with _Silent() as silent:
        session = AgentSession(
            grant=silent.grant(), text_only=True, timeouts=Timeouts(signal_attempt=1.0)
        )
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5), session:
                pytest.fail("not connected")
        assert silent.accepted.is_set()
        assert session.state.ended
        _settled_not_cancelled(caplog)
        assert our_tasks() <= tasks


async def test_client_tools_from_the_users_config(sim: SimInfo, tmp_path: Path) -> None:
    script = "import json; print(json.dumps({'time': '09:30'}))"
    config = tmp_path / "config.toml"
    config.write_text(
        "[tools.get_time]\n"
        f"command = [{json.dumps(sys.executable)}, '-c', {json.dumps(script)}]\n"
        'approve = "ask"\n',
        encoding="utf-8",
    )
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    async with AgentSession(
        **options(sim, agent_id="tool"), config_tools=config, approve=approve
    ) as s:
        await s.send_text("What time is it?")
        reply = await s.wait_for_reply(WAIT)
    assert [r.tool_name for r in asked] == ["get_time"]
    assert "09:30" in reply.text


async def test_commands_callbacks_and_waits(sim: SimInfo, caplog: pytest.LogCaptureFixture) -> None:
    async_seen: list[str] = []
    done = asyncio.Event()

    async def on_muted(event: events.MutedChanged) -> None:
        await asyncio.sleep(0)
        async_seen.append(f"muted={event.muted}")
        if not event.muted:
            done.set()

    def broken(event: events.Event) -> None:
        raise RuntimeError("a bug in the user's callback")

    async with AgentSession(**options(sim)) as s:
        s.on(events.MutedChanged, on_muted)
        s.on("agent_state_change", broken)
        await s.wait_for_reply(WAIT)
        with pytest.raises(TimeoutError):
            await s.wait_for(lambda e: False, 0.2)
        s.mute()
        assert s.state.muted
        s.unmute()
        await asyncio.wait_for(done.wait(), WAIT)
        s.activity()
        s.interrupt()
        s.set_spoken(True)
        assert s.state.spoken
        assert s.mode in ("listening", "thinking", "speaking")
        result = await s.hangup()
        assert result.reason == "user_hangup"
        assert s.status == "ended"
    assert async_seen == ["muted=True", "muted=False"]
    assert any("callback" in r.getMessage() for r in caplog.records if r.levelname == "ERROR")


async def test_a_journal_when_asked(sim: SimInfo, tmp_path: Path) -> None:
    """``journal=PATH`` writes the session's journal, private, without the key or token;
    ``fishtalk export`` reads it back."""
    path = tmp_path / "call.jsonl"
    async with AgentSession(**options(sim, journal=path)) as session:
        assert session.journal_path == path
        await session.wait_for_reply(WAIT)
        await session.send_text("journal me")
        await session.wait_for_reply(WAIT)
    assert path.stat().st_mode & 0o777 == 0o600
    text = path.read_text("utf-8")
    header = json.loads(text.splitlines()[0])
    assert header["agent_id"] == "quiet"
    assert "journal me" in text
    assert sim.dev_key not in text
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "fishtalk", "export", str(path), "--format", "txt"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert "journal me" in out.decode()


async def test_no_journal_unless_asked(sim: SimInfo, tmp_path: Path) -> None:
    async with AgentSession(**options(sim)) as session:
        assert session.journal_path is None


async def test_hangup_then_close_waits_for_the_sdk_once(
    sim: SimInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's last events are waited for once per session: ``hangup()`` waits, and the
    ``close()`` after it (``async with``'s exit) has nothing left to wait for (it waited
    again, 0.3 s of every ``fishtalk test`` file)."""
    import fishtalk.agent_session as module

    waits: list[None] = []
    settle = module.let_sdk_settle

    async def counted() -> None:
        waits.append(None)
        await settle()

    monkeypatch.setattr(module, "let_sdk_settle", counted)
    async with AgentSession(**options(sim)) as s:
        await s.wait_for_reply(WAIT)
        result = await s.hangup()
        assert result.reason == "user_hangup"
        assert len(waits) == 1
    assert len(waits) == 1
    async with AgentSession(**options(sim)) as s:  # closed without a hangup: once too
        await s.wait_for_reply(WAIT)
    assert len(waits) == 2
