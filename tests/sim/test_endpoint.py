"""The simulated session endpoint over real HTTP on 127.0.0.1 (no WebRTC needed)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import httpx
import pytest
from aiohttp import web

from fishtalk.sim.fish.answers import RESERVED_AGENT_IDS
from fishtalk.sim.fish.endpoint import DEFAULT_DEV_KEY, SESSIONS_PATH, SessionEndpoint
from fishtalk.sim.fish.sessions import SimSession


class _Minter:
    """Stands in for SimServer's token minting (pure; the endpoint only needs strings)."""

    ws_url = "ws://127.0.0.1:1"

    def __init__(self) -> None:
        self.minted: list[tuple[str, str, str]] = []

    def mint_token(
        self,
        room: str,
        identity: str,
        *,
        name: str | None = None,
        kind: Literal["standard", "agent"] = "standard",
        ttl: timedelta = timedelta(minutes=10),
        metadata: str | None = None,
        attributes: dict[str, str] | None = None,
    ) -> str:
        token = f"jwt-{len(self.minted)}-{room}-{identity}"
        self.minted.append((room, identity, kind))
        return token


class _Env:
    def __init__(self, endpoint: SessionEndpoint, client: httpx.AsyncClient) -> None:
        self.endpoint = endpoint
        self.client = client
        self.spawned: list[SimSession] = []

    async def create(
        self,
        body: Any,
        *,
        key: str | None = DEFAULT_DEV_KEY,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        hdrs = dict(headers or {})
        if key is not None:
            hdrs.setdefault("Authorization", f"Bearer {key}")
        if isinstance(body, bytes):
            hdrs.setdefault("Content-Type", "application/json")
            return await self.client.post(SESSIONS_PATH, content=body, headers=hdrs)
        return await self.client.post(SESSIONS_PATH, json=body, headers=hdrs)


@pytest.fixture
async def env() -> AsyncIterator[_Env]:
    app = web.Application()
    endpoint = SessionEndpoint(_Minter(), slow_seconds=5.0)
    endpoint.install(app)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10.0) as client:
        e = _Env(endpoint, client)
        endpoint.on_session = e.spawned.append
        yield e
    await runner.cleanup()


async def test_create_session_grant_shape(env: _Env) -> None:
    r = await env.create({"agent_id": "demo"})
    assert r.status_code == 201
    grant = r.json()
    assert set(grant) == {
        "session_id",
        "expires_at",
        "max_duration_seconds",
        "transport",
        "livekit_url",
        "token",
    }
    assert grant["transport"] == "livekit"
    assert grant["livekit_url"] == "ws://127.0.0.1:1"
    assert grant["max_duration_seconds"] == 1800
    expires = datetime.fromisoformat(grant["expires_at"].replace("Z", "+00:00"))
    assert expires > datetime.now(UTC)
    session = env.endpoint.sessions[grant["session_id"]]
    assert session.user_token == grant["token"]
    assert session.user_identity.startswith("user-")
    assert env.spawned == [session]


async def test_each_session_gets_fresh_room_and_token(env: _Env) -> None:
    a = (await env.create({"agent_id": "demo"})).json()
    b = (await env.create({"agent_id": "demo"})).json()
    assert a["session_id"] != b["session_id"]
    assert a["token"] != b["token"]
    rooms = {s.room for s in env.endpoint.sessions.values()}
    assert len(rooms) == 2


async def test_first_join_activates_session(env: _Env) -> None:
    grant = (await env.create({"agent_id": "demo"})).json()
    session = env.endpoint.sessions[grant["session_id"]]
    assert session.status == "pending"
    auth = {"Authorization": f"Bearer {grant['token']}"}
    # No /rtc route on this bare app (404), but the gate let the join through first.
    r = await env.client.get("/rtc", params={"sdk": "python"}, headers=auth)
    assert r.status_code == 404
    assert session.status == "active"


async def test_token_single_use_gate(env: _Env) -> None:
    grant = (await env.create({"agent_id": "demo"})).json()
    session = env.endpoint.sessions[grant["session_id"]]
    connected: set[tuple[str, str]] = set()
    env.endpoint.gate._occupied = lambda room, identity: (room, identity) in connected
    gate = env.endpoint.gate
    assert gate.check(grant["token"]) is None
    connected.add((session.room, session.user_identity))
    assert gate.check(grant["token"]) == (
        "the session token is already in use (tokens are single-use)"
    )
    assert gate.check("not-issued") is None
    assert gate.check(None) is None
    # Over HTTP: a fresh join and /rtc/validate are refused; a resume passes the gate
    # (and then meets no /rtc route here: 404).
    auth = {"Authorization": f"Bearer {grant['token']}"}
    r = await env.client.get("/rtc", params={"sdk": "python"}, headers=auth)
    assert r.status_code == 401
    assert "single-use" in r.text
    assert (await env.client.get("/rtc/validate", headers=auth)).status_code == 401
    r = await env.client.get("/rtc", params={"reconnect": "1"}, headers=auth)
    assert r.status_code == 404
    connected.clear()
    session.expires_at = datetime.now(UTC) - timedelta(seconds=1)
    assert gate.check(grant["token"]) == "the session's join deadline (expires_at) has passed"
    session.status = "active"  # joined in time: rejoins stay possible
    assert gate.check(grant["token"]) is None
    env.endpoint.end_session(session.session_id)
    assert gate.check(grant["token"]) == "the session has ended; its token can no longer be used"


@pytest.mark.parametrize(
    ("agent_id", "status", "message"),
    [
        ("err-400", 400, "Override 'system_prompt' is not allowed for this agent"),
        ("err-401", 401, "Invalid token"),
        ("err-401-expired", 401, "Token expired"),
        ("err-402", 402, "Out of API credit"),
        ("err-403-origin", 403, "Origin not allowed"),
        ("err-403-private", 403, "Agent is not public"),
        ("err-403-beta", 403, "Agent platform is not enabled for this account"),
        ("err-403-unavailable", 403, "Agent is unavailable"),
        ("err-404", 404, "Agent not found"),
        ("err-409", 409, "Agent has no published version"),
        ("err-429", 429, "Too many requests"),
        ("err-500", 500, "Internal server error"),
        ("err-502", 502, "Agent gateway is unreachable"),
        ("err-503", 503, "Service temporarily unavailable"),
    ],
)
async def test_injected_json_errors(env: _Env, agent_id: str, status: int, message: str) -> None:
    r = await env.create({"agent_id": agent_id})
    assert r.status_code == status
    assert r.json() == {"status": status, "message": message}
    assert env.spawned == []


async def test_retry_after_on_429_and_503(env: _Env) -> None:
    assert (await env.create({"agent_id": "err-429"})).headers["Retry-After"] == "1"
    assert (await env.create({"agent_id": "err-503"})).headers["Retry-After"] == "1"


async def test_injected_bare_401(env: _Env) -> None:
    r = await env.create({"agent_id": "err-401-bare"})
    assert r.status_code == 401
    assert r.content == b""
    assert r.headers["WWW-Authenticate"] == "Bearer"


async def test_injected_bare_415(env: _Env) -> None:
    r = await env.create({"agent_id": "err-415"})
    assert r.status_code == 415
    assert r.content == b""


async def test_injected_422(env: _Env) -> None:
    r = await env.create({"agent_id": "err-422"})
    assert r.status_code == 422
    assert r.json() == [{"type": "missing", "loc": ["body", "agent_id"], "msg": "Field required"}]


async def test_503_once_then_success(env: _Env) -> None:
    first = await env.create({"agent_id": "err-503-once"})
    assert first.status_code == 503
    second = await env.create({"agent_id": "err-503-once"})
    assert second.status_code == 201
    assert env.endpoint.requests == 2


async def test_bad_json_grant(env: _Env) -> None:
    r = await env.create({"agent_id": "err-badjson"})
    assert r.status_code == 201
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.content)


async def test_bad_grant_missing_fields(env: _Env) -> None:
    r = await env.create({"agent_id": "err-badgrant"})
    assert r.status_code == 201
    grant = r.json()
    assert "token" not in grant
    assert "livekit_url" not in grant
    assert grant["transport"] == "livekit"


async def test_unknown_transport(env: _Env) -> None:
    r = await env.create({"agent_id": "transport-webrtc"})
    assert r.status_code == 201
    assert r.json()["transport"] == "webrtc"
    assert "token" not in r.json()


async def test_expired_grant(env: _Env) -> None:
    r = await env.create({"agent_id": "expired"})
    assert r.status_code == 201
    expires = datetime.fromisoformat(r.json()["expires_at"].replace("Z", "+00:00"))
    assert expires < datetime.now(UTC)


async def test_slow_response_times_out_client(env: _Env) -> None:
    with pytest.raises(httpx.ReadTimeout):
        await env.client.post(
            SESSIONS_PATH,
            json={"agent_id": "err-slow"},
            headers={"Authorization": f"Bearer {DEFAULT_DEV_KEY}"},
            timeout=0.3,
        )


async def test_every_reserved_id_is_covered() -> None:
    # The documented table and the implementation must not drift apart.
    from fishtalk.sim.fish import endpoint

    doc = endpoint.__doc__ or ""
    for agent_id in RESERVED_AGENT_IDS:
        assert f"``{agent_id}``" in doc


# --- auth, body and public mode --------------------------------------------------------


async def test_wrong_key_is_json_401(env: _Env) -> None:
    r = await env.create({"agent_id": "demo"}, key="nope")
    assert r.status_code == 401
    assert r.json() == {"status": 401, "message": "Invalid token"}


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "token"])
async def test_malformed_authorization_is_bare_401(env: _Env, header: str) -> None:
    r = await env.create({"agent_id": "demo"}, key=None, headers={"Authorization": header})
    assert r.status_code == 401
    assert r.content == b""
    assert r.headers["WWW-Authenticate"] == "Bearer"


async def test_missing_body_is_bare_415(env: _Env) -> None:
    r = await env.client.post(SESSIONS_PATH, headers={"Authorization": f"Bearer {DEFAULT_DEV_KEY}"})
    assert r.status_code == 415
    assert r.content == b""


async def test_wrong_content_type_is_bare_415(env: _Env) -> None:
    r = await env.client.post(
        SESSIONS_PATH,
        content=b"agent_id=demo",
        headers={
            "Authorization": f"Bearer {DEFAULT_DEV_KEY}",
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    assert r.status_code == 415


async def test_malformed_json_is_400(env: _Env) -> None:
    r = await env.create(b'{"agent_id": ')
    assert r.status_code == 400
    assert r.json() == {"status": 400, "message": "Malformed JSON"}


async def test_unknown_field_is_422(env: _Env) -> None:
    r = await env.create({"agent_id": "demo", "agentId": "x"})
    assert r.status_code == 422
    [item] = r.json()
    assert item["type"] == "extra_forbidden"
    assert item["loc"] == ["body", "agentId"]
    assert "input" not in item


async def test_length_caps_and_timezone_are_422(env: _Env) -> None:
    r = await env.create({"agent_id": "demo", "name": "x" * 129, "timezone": "Mars/Olympus"})
    assert r.status_code == 422
    items = {tuple(i["loc"]): i for i in r.json()}
    assert items[("body", "name")]["ctx"] == {"max_length": 128}
    assert items[("body", "timezone")]["type"] == "value_error"


async def test_exclusive_first_message_is_422(env: _Env) -> None:
    r = await env.create(
        {"agent_id": "demo", "overrides": {"first_message": "a", "first_message_prompt": "b"}}
    )
    assert r.status_code == 422


async def test_public_requires_origin(env: _Env) -> None:
    r = await env.create({"agent_id": "demo"}, key=None)
    assert r.status_code == 403
    assert r.json()["message"] == "Origin header is required for public agents"


async def test_public_origin_not_allowed(env: _Env) -> None:
    r = await env.create({"agent_id": "demo"}, key=None, headers={"Origin": "http://evil.test"})
    assert r.status_code == 403
    assert r.json()["message"] == "Origin not allowed"


async def test_public_origin_port_must_match(env: _Env) -> None:
    r = await env.create(
        {"agent_id": "demo"}, key=None, headers={"Origin": "http://localhost:8080"}
    )
    assert r.status_code == 403


async def test_public_allowed(env: _Env) -> None:
    r = await env.create(
        {"agent_id": "demo", "overrides": {"language": "de"}},
        key=None,
        headers={"Origin": "http://localhost"},
    )
    assert r.status_code == 201
    assert env.endpoint.sessions[r.json()["session_id"]].public


async def test_public_refuses_name_and_private_overrides(env: _Env) -> None:
    origin = {"Origin": "http://localhost"}
    r = await env.create({"agent_id": "demo", "name": "n"}, key=None, headers=origin)
    assert r.status_code == 400
    r = await env.create(
        {"agent_id": "demo", "overrides": {"system_prompt": "x"}}, key=None, headers=origin
    )
    assert r.status_code == 400
    assert "system_prompt" in r.json()["message"]


async def test_end_session(env: _Env) -> None:
    grant = (await env.create({"agent_id": "demo"})).json()
    sid = grant["session_id"]
    auth = {"Authorization": f"Bearer {DEFAULT_DEV_KEY}"}
    r = await env.client.post(f"{SESSIONS_PATH}/{sid}/end", headers=auth)
    assert r.status_code == 204
    session = env.endpoint.sessions[sid]
    assert session.status == "completed"
    assert session.end_requested.is_set()
    assert env.endpoint.gate.check(grant["token"]) is not None
    # Ending twice is harmless.
    assert (await env.client.post(f"{SESSIONS_PATH}/{sid}/end", headers=auth)).status_code == 204
    r = await env.client.post(f"{SESSIONS_PATH}/sess_nope/end", headers=auth)
    assert r.status_code == 404


async def test_end_session_wrong_key(env: _Env) -> None:
    grant = (await env.create({"agent_id": "demo"})).json()
    r = await env.client.post(
        f"{SESSIONS_PATH}/{grant['session_id']}/end", headers={"Authorization": "Bearer bad"}
    )
    assert r.status_code == 401


async def test_max_duration_per_agent(env: _Env) -> None:
    env.endpoint.max_duration_for = lambda agent_id: 7 if agent_id == "short" else None
    assert (await env.create({"agent_id": "short"})).json()["max_duration_seconds"] == 7
    assert (await env.create({"agent_id": "long"})).json()["max_duration_seconds"] == 1800


async def test_concurrent_creates(env: _Env) -> None:
    results = await asyncio.gather(*(env.create({"agent_id": "demo"}) for _ in range(5)))
    assert [r.status_code for r in results] == [201] * 5
    assert len(env.endpoint.sessions) == 5


async def test_get_session(env: _Env) -> None:
    grant = (await env.create({"agent_id": "demo"})).json()
    sid = grant["session_id"]
    auth = {"Authorization": f"Bearer {DEFAULT_DEV_KEY}"}
    r = await env.client.get(f"{SESSIONS_PATH}/{sid}", headers=auth)
    assert r.status_code == 200
    info = r.json()
    assert info["session_id"] == sid
    assert info["agent_id"] == "demo"
    assert info["status"] == "pending"
    assert info["expires_at"] == grant["expires_at"]
    env.endpoint.end_session(sid)
    r = await env.client.get(f"{SESSIONS_PATH}/{sid}", headers=auth)
    assert r.json()["status"] == "completed"
    r = await env.client.get(f"{SESSIONS_PATH}/sess_nope", headers=auth)
    assert r.status_code == 404
    r = await env.client.get(f"{SESSIONS_PATH}/{sid}", headers={"Authorization": "Bearer x"})
    assert r.status_code == 401
