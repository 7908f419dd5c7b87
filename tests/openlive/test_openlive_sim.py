"""The OpenLive stand-in, driven by a real aiohttp WebSocket client over 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from support.openlive_client import events, next_frame, said, turn, until_done

import fishtalk.core.openlive as ol
from fishtalk.core.errors import OpenLiveProtocolError
from fishtalk.sim.openlive import OpenLiveSim, run_openlive_sim
from fishtalk.sim.openlive.script import LONG_REPLY


@pytest.fixture
async def sim() -> AsyncIterator[OpenLiveSim]:
    async with run_openlive_sim(pace_seconds=0.002) as server:
        yield server


@pytest.fixture
async def ws(sim: OpenLiveSim) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    async with aiohttp.ClientSession() as http, http.ws_connect(sim.url) as socket:
        first = await next_frame(socket)
        assert first == ol.SseMessage(event=ol.Status(text="ready"))
        yield socket


async def test_a_typed_turn_streams_its_reply_then_usage_then_done(
    sim: OpenLiveSim, ws: aiohttp.ClientWebSocketResponse
) -> None:
    got = await turn(ws, "hello   there")
    assert said(got) == "You said: hello there. What else?"
    assert sum(isinstance(e, ol.TextDelta) for e in got) == 6  # a word a delta
    assert isinstance(got[-2], ol.Usage)
    assert (got[-2].output_tokens, got[-2].context_tokens) == (6, 106)
    assert [t.text for t in sim.turns] == ["hello   there"]
    assert sim.turns[0].sent == said(got)
    assert not sim.turns[0].cancelled
    second = await turn(ws, "again")
    assert second[-2].context_tokens == 200 + 5  # type: ignore[attr-defined]


async def test_reasoning_comes_before_the_reply(ws: aiohttp.ClientWebSocketResponse) -> None:
    got = await turn(ws, "think hard")
    kinds = [type(e).__name__ for e in got]
    assert kinds.index("ReasoningDelta") < kinds.index("TextDelta")
    assert "".join(e.text for e in got if isinstance(e, ol.ReasoningDelta)).startswith("The user")
    assert said(got) == "I thought about it: the answer is forty-two."


async def test_a_tool_starts_and_finishes_before_the_reply(
    ws: aiohttp.ClientWebSocketResponse,
) -> None:
    got = await turn(ws, "use a tool")
    start, done = got[0], got[1]
    assert isinstance(start, ol.ToolStart)
    assert (start.tool, start.summary) == ("search", "Searching the web")
    assert isinstance(done, ol.ToolDone)
    assert (done.id, done.detail) == (start.id, "3 results")
    assert said(got) == "I found three results."


async def test_todos_arrive_as_whole_checklists(ws: aiohttp.ClientWebSocketResponse) -> None:
    got = await turn(ws, "make a todo list")
    lists = [e for e in got if isinstance(e, ol.Todos)]
    assert [[i.done for i in t.items] for t in lists] == [
        [False, False, False],
        [True, False, False],
    ]


async def test_a_failed_turn_sends_an_sse_error_then_done(
    ws: aiohttp.ClientWebSocketResponse,
) -> None:
    got = await turn(ws, "please fail")
    assert isinstance(got[0], ol.SseError)
    assert got[0].message == "The simulated model failed."
    broken = await turn(ws, "broken")
    assert broken[0] == ol.ErrorMessage(message="The simulated server is broken.")


async def test_malformed_frames_reach_the_client_and_the_turn_goes_on(
    ws: aiohttp.ClientWebSocketResponse,
) -> None:
    got = await turn(ws, "send garbage")
    errors = [e for e in got if isinstance(e, OpenLiveProtocolError)]
    assert [e.kind for e in errors] == ["not_json", "not_object", "bad_shape"]
    assert said(got) == "Still here after the noise."


async def test_unknown_types_and_fields_reach_the_client(
    ws: aiohttp.ClientWebSocketResponse,
) -> None:
    got = await turn(ws, "something unknown")
    assert isinstance(got[0], ol.UnknownServerMessage)
    assert got[0].tag == "hologram"
    assert isinstance(got[1], ol.UnknownSseEvent)
    assert got[1].tag == "canvas"
    deltas = [e for e in got if isinstance(e, ol.TextDelta)]
    assert all(d.extra_fields == {"lang": "en"} for d in deltas)
    assert said(got) == "Something new."


async def test_cancel_stops_the_reply_and_keeps_what_was_spoken(
    sim: OpenLiveSim, ws: aiohttp.ClientWebSocketResponse
) -> None:
    sim.pace_seconds = 0.05
    await ws.send_str(ol.encode_message(ol.UserText(text="tell me a long story")))
    got: list[object] = []
    while sum(isinstance(e, ol.TextDelta) for e in got) < 3:
        got.extend(events([await next_frame(ws)]))
    spoken = said(got)[:-3]  # the voice lags the text
    await ws.send_str(ol.encode_message(ol.Cancel(spoken=spoken)))
    got += await until_done(ws)
    record = sim.turns[0]
    assert record.cancelled
    assert record.spoken == spoken
    assert said(got) == record.sent
    assert LONG_REPLY.startswith(record.sent)
    assert len(record.sent) < len(LONG_REPLY)
    assert not any(isinstance(e, ol.Usage) for e in got)
    # nothing of the cancelled turn comes after its done: the next frame is the next turn's
    sim.pace_seconds = 0.002
    after = await turn(ws, "next")
    assert said(after) == "You said: next. What else?"


async def test_cancel_outside_a_turn_does_nothing(
    sim: OpenLiveSim, ws: aiohttp.ClientWebSocketResponse
) -> None:
    await ws.send_str(ol.encode_message(ol.Cancel(spoken="")))
    got = await turn(ws, "hi")
    assert said(got) == "You said: hi. What else?"
    assert sum(isinstance(e, ol.Done) for e in got) == 1
    assert not sim.turns[0].cancelled


async def test_a_turn_sent_during_a_turn_waits_for_its_done(
    sim: OpenLiveSim, ws: aiohttp.ClientWebSocketResponse
) -> None:
    await ws.send_str(ol.encode_message(ol.UserText(text="one")))
    await ws.send_str(ol.encode_message(ol.UserText(text="two")))
    first = await until_done(ws)
    second = await until_done(ws)
    assert (said(first), said(second)) == ("You said: one. What else?", "You said: two. What else?")
    assert [t.text for t in sim.turns] == ["one", "two"]


async def test_a_bad_client_frame_is_answered_with_an_error_and_the_socket_stays(
    sim: OpenLiveSim, ws: aiohttp.ClientWebSocketResponse
) -> None:
    for bad in ("{bad", '{"t":"user_text"}'):
        await ws.send_str(bad)
        reply = await next_frame(ws)
        assert isinstance(reply, ol.ErrorMessage)
        assert reply.message.startswith("bad OpenLive frame: ")
    await ws.send_bytes(b"\x07nope")
    assert isinstance(await next_frame(ws), ol.ErrorMessage)
    assert said(await turn(ws, "still")) == "You said: still. What else?"


async def test_frames_and_other_messages_are_received(
    sim: OpenLiveSim, ws: aiohttp.ClientWebSocketResponse
) -> None:
    jpeg = b"\xff\xd8\xff\xe0fake\xff\xd9"
    await ws.send_str(ol.encode_message(ol.FrameResponse(req_id="f1")))
    await ws.send_bytes(ol.encode_frame_in(jpeg))
    await ws.send_str('{"t":"flow_new"}')
    await turn(ws, "ok")
    assert sim.images == [jpeg]
    assert sim.received[0] == ol.FrameResponse(req_id="f1")
    assert isinstance(sim.received[1], ol.UnknownClientMessage)


async def test_control_end_closes_the_socket(ws: aiohttp.ClientWebSocketResponse) -> None:
    await ws.send_str(ol.encode_message(ol.Control(action="end")))
    msg = await ws.receive()
    assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)


async def test_an_oversized_client_frame_is_refused_in_one_error(
    ws: aiohttp.ClientWebSocketResponse,
) -> None:
    big = ol.encode_message(ol.UserText(text="x" * (ol.MAX_TEXT_FRAME_BYTES + 1)))
    await ws.send_str(big)
    reply = await next_frame(ws)
    assert isinstance(reply, ol.ErrorMessage)
    assert f"over the {ol.MAX_TEXT_FRAME_BYTES}-byte limit" in reply.message
    assert said(await turn(ws, "small")) == "You said: small. What else?"


async def test_stopping_the_sim_mid_turn_closes_the_socket() -> None:
    async with (
        run_openlive_sim(pace_seconds=0.05) as sim,
        aiohttp.ClientSession() as http,
        http.ws_connect(sim.url) as live,
    ):
        await next_frame(live)  # ready
        await live.send_str(ol.encode_message(ol.UserText(text="a long one")))
        assert isinstance(await next_frame(live), ol.SseMessage)
        await sim.stop()
        while (msg := await live.receive()).type == aiohttp.WSMsgType.TEXT:
            pass  # what was already on its way, then the close
        assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        assert sim.turns[0].finished.is_set()
