"""What a browser client meets on the sim's HTTP routes: CORS as livekit-server does it,
and the access token read from the query (where livekit-client puts it).

The real SimServer with the real session endpoint, over real HTTP on 127.0.0.1; the
websocket joins need the network namespace (the server offers WebRTC on join).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import httpx
import pytest
from livekit.protocol import rtc as signal

from fishtalk.sim.fish.endpoint import DEFAULT_DEV_KEY, SESSIONS_PATH, SessionEndpoint
from fishtalk.sim.livekit.server import SimServer

OTHER_ORIGIN = "http://127.0.0.1:9"
"""A page origin that is not the sim's own (another port)."""

HTTP_ROUTES = [
    SESSIONS_PATH,
    SESSIONS_PATH + "/sess_x",
    SESSIONS_PATH + "/sess_x/end",
    "/rtc",
    "/rtc/validate",
    "/rtc/v1",
    "/rtc/v1/validate",
]


@dataclass
class _Sim:
    server: SimServer
    endpoint: SessionEndpoint
    http: httpx.AsyncClient

    async def grant(self) -> dict[str, str]:
        r = await self.http.post(
            SESSIONS_PATH,
            json={"agent_id": "demo"},
            headers={"Authorization": f"Bearer {DEFAULT_DEV_KEY}"},
        )
        assert r.status_code == 201, r.text
        grant: dict[str, str] = r.json()
        return grant


@pytest.fixture
async def sim() -> AsyncIterator[_Sim]:
    server = SimServer()
    endpoint = SessionEndpoint(
        server,
        occupied=server.is_connected,
        allowed_origins=[OTHER_ORIGIN],
    )
    endpoint.install(server.app)
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10.0) as http:
            yield _Sim(server, endpoint, http)
    finally:
        await server.stop()


@pytest.mark.parametrize("path", HTTP_ROUTES)
async def test_preflight_is_answered_on_every_route(sim: _Sim, path: str) -> None:
    r = await sim.http.options(
        path,
        headers={
            "Origin": OTHER_ORIGIN,
            "Access-Control-Request-Method": "POST" if "sessions" in path else "GET",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert r.status_code == 204
    assert r.headers["Access-Control-Allow-Origin"] == OTHER_ORIGIN
    assert "POST" in r.headers["Access-Control-Allow-Methods"]
    assert "GET" in r.headers["Access-Control-Allow-Methods"]
    assert r.headers["Access-Control-Allow-Headers"] == "authorization, content-type"


@pytest.mark.parametrize("path", ["/rtc/validate", "/rtc/v1/validate", "/rtc", "/nowhere"])
async def test_answers_carry_allow_origin_even_refusals(sim: _Sim, path: str) -> None:
    r = await sim.http.get(path, headers={"Origin": OTHER_ORIGIN})
    assert r.status_code in {401, 404}
    assert r.headers["Access-Control-Allow-Origin"] == OTHER_ORIGIN


async def test_session_creation_from_another_origin(sim: _Sim) -> None:
    # Public (no key, Origin allowed) and keyed requests both answer with CORS headers.
    public = await sim.http.post(
        SESSIONS_PATH, json={"agent_id": "demo"}, headers={"Origin": OTHER_ORIGIN}
    )
    assert public.status_code == 201, public.text
    assert public.headers["Access-Control-Allow-Origin"] == OTHER_ORIGIN
    keyed = await sim.http.post(
        SESSIONS_PATH,
        json={"agent_id": "demo"},
        headers={"Origin": "http://elsewhere.test", "Authorization": f"Bearer {DEFAULT_DEV_KEY}"},
    )
    assert keyed.status_code == 201
    assert keyed.headers["Access-Control-Allow-Origin"] == "http://elsewhere.test"
    # Without an Origin (curl, the Python SDK) any origin is allowed: "*".
    bare = await sim.http.get("/rtc/validate")
    assert bare.headers["Access-Control-Allow-Origin"] == "*"


async def test_validate_reads_the_query_token(sim: _Sim) -> None:
    grant = await sim.grant()
    ok = await sim.http.get("/rtc/validate", params={"access_token": grant["token"]})
    assert ok.status_code == 200
    missing = await sim.http.get("/rtc/validate")
    assert missing.status_code == 401
    bad = await sim.http.get("/rtc/validate", params={"access_token": grant["token"] + "x"})
    assert bad.status_code == 401
    assert "signature" in bad.text


async def test_v1_is_refused_as_a_pre_v1_server_does(sim: _Sim) -> None:
    grant = await sim.grant()
    for path in ("/rtc/v1", "/rtc/v1/validate"):
        r = await sim.http.get(path, params={"access_token": grant["token"]})
        assert r.status_code == 404
        # livekit-client reads a 404 body containing "requested room does not exist" as
        # "not allowed" instead of falling back: this one must not say that.
        assert "requested room does not exist" not in r.text


async def _open_ws(
    sim: _Sim, session: aiohttp.ClientSession, token: str
) -> aiohttp.ClientWebSocketResponse:
    url = f"{sim.server.ws_url}/rtc"
    ws = await session.ws_connect(
        url,
        params={"access_token": token, "sdk": "js", "protocol": "16", "auto_subscribe": "1"},
    )
    return ws


async def _first_message(ws: aiohttp.ClientWebSocketResponse) -> signal.SignalResponse:
    msg = await ws.receive(timeout=10)
    assert msg.type == aiohttp.WSMsgType.BINARY, msg
    response = signal.SignalResponse()
    response.ParseFromString(msg.data)
    return response


@pytest.mark.webrtc
async def test_query_token_is_single_use(sim: _Sim) -> None:
    grant = await sim.grant()
    session = sim.endpoint.sessions[grant["session_id"]]
    async with aiohttp.ClientSession() as http:
        first = await _open_ws(sim, http, grant["token"])
        assert (await _first_message(first)).WhichOneof("message") == "join"
        await sim.server.wait_for_participants(session.room, {session.user_identity})
        assert session.status == "active"
        # A second tab with the same token is refused; the first stays.
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await _open_ws(sim, http, grant["token"])
        assert refused.value.status == 401
        validate = await sim.http.get("/rtc/validate", params={"access_token": grant["token"]})
        assert validate.status_code == 401
        assert "single-use" in validate.text
        assert sim.server.participants(session.room) == [session.user_identity]
        assert not first.closed
        # Once the session has ended, the token no longer joins (even an empty room).
        leave = signal.SignalRequest(leave=signal.LeaveRequest())
        await first.send_bytes(leave.SerializeToString())
        await first.close()
        await sim.server.wait_for_participants(session.room, set())
        sim.endpoint.end_session(session.session_id)
        with pytest.raises(aiohttp.WSServerHandshakeError) as ended:
            await _open_ws(sim, http, grant["token"])
        assert ended.value.status == 401
        validate = await sim.http.get("/rtc/v1/validate", params={"access_token": grant["token"]})
        assert validate.status_code == 401
        assert "ended" in validate.text
