"""A bare OpenLive client for tests: a real aiohttp WebSocket and the protocol's parser.

:func:`turn` sends a typed turn and returns its events up to ``done``; frames that fail to
parse come back as the :class:`OpenLiveProtocolError` they raised, in their place.
"""

from __future__ import annotations

import aiohttp

import fishtalk.core.openlive as ol
from fishtalk.core.errors import OpenLiveProtocolError

Frame = ol.ServerMessage | OpenLiveProtocolError


async def next_frame(ws: aiohttp.ClientWebSocketResponse) -> Frame:
    msg = await ws.receive()
    assert msg.type == aiohttp.WSMsgType.TEXT, msg
    try:
        return ol.parse_server_frame(msg.data)
    except OpenLiveProtocolError as exc:
        return exc


def events(frames: list[Frame]) -> list[object]:
    return [f.event if isinstance(f, ol.SseMessage) else f for f in frames]


async def turn(ws: aiohttp.ClientWebSocketResponse, text: str) -> list[object]:
    """Send a typed turn; its events up to and including ``done``."""
    await ws.send_str(ol.encode_message(ol.UserText(text=text)))
    return await until_done(ws)


async def until_done(ws: aiohttp.ClientWebSocketResponse) -> list[object]:
    got: list[object] = []
    while not got or not isinstance(got[-1], ol.Done):
        got.extend(events([await next_frame(ws)]))
    return got


def said(got: list[object]) -> str:
    return "".join(e.text for e in got if isinstance(e, ol.TextDelta))
