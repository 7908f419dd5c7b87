"""fishtalk.engine.api.SessionClient against a real HTTP server on 127.0.0.1 (no mock transport)."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from api_stub import RawServer, Reply, ScriptedServer, grant_body
from pydantic import SecretStr

from fishtalk import __version__
from fishtalk.cli.exits import (
    EXIT_AUTH,
    EXIT_NOT_FOUND,
    EXIT_REJECTED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    exit_code_for,
)
from fishtalk.core.errors import (
    AgentNotPublicError,
    AgentUnavailableError,
    ApiConnectionError,
    ApiError,
    ApiTimeoutError,
    AuthenticationError,
    BadGatewayError,
    BadRequestError,
    ClientConfigError,
    ConflictError,
    FishtalkError,
    ForbiddenError,
    NotFoundError,
    OriginForbiddenError,
    PaymentRequiredError,
    RateLimitedError,
    RequestValidationError,
    ServerError,
    ServiceUnavailableError,
    SessionExpiredError,
    UnexpectedResponseError,
    UnsupportedMediaTypeError,
    UnsupportedTransportError,
)
from fishtalk.engine.api import LiveKitGrant, SessionClient, SessionOverrides, SessionRequest
from fishtalk.engine.api.client import MAX_BODY_BYTES

KEY = "sk-fish-SECRET-0123456789abcdef"
ORIGIN = "https://app.example.com"
FAST: dict[str, Any] = {"backoff_base": 0.001, "backoff_max": 0.01}


def key_client(server: ScriptedServer, **kw: Any) -> SessionClient:
    return SessionClient(server.url, api_key=SecretStr(KEY), **{**FAST, **kw})


def public_client(server: ScriptedServer, **kw: Any) -> SessionClient:
    return SessionClient(server.url, origin=ORIGIN, **{**FAST, **kw})


async def create(client: SessionClient, agent: str = "agent_1") -> LiveKitGrant:
    async with client:
        return await client.create_session(SessionRequest(agent_id=agent))


def assert_no_key(exc: BaseException) -> None:
    texts = [str(exc), repr(exc), str(exc.args)]
    if isinstance(exc, ApiError):
        texts += [str(exc.detail), str(exc.reason)]
    if isinstance(exc, RequestValidationError):
        texts += [str(e) for e in exc.field_errors]
    for text in texts:
        assert KEY not in text
        assert "SECRET" not in text


# --- success paths and headers --------------------------------------------------------------


async def test_create_with_api_key_sends_bearer_and_snake_case_body(
    api_server: ScriptedServer,
) -> None:
    api_server.script(Reply(201, grant_body()))
    request = SessionRequest(
        agent_id="agent_1",
        name="terminal chat",
        tool_events=False,
        language="ja",
        timezone="Asia/Tokyo",
        client_timezone="Europe/Paris",
        overrides=SessionOverrides(voice_id="v1", first_message="hi {{name}}"),
        dynamic_variables={"name": "Ada", "n": 3, "vip": True, "score": 1.5},
        end_user_id="user_42",
        metadata={"source": "fishtalk", "nested": {"a": [1, None]}},
        record_audio=False,
        world_context=True,
    )
    async with key_client(api_server) as client:
        grant = await client.create_session(request)

    assert grant.session_id == "sess_123"
    assert grant.livekit_url == "wss://rtc.example.test"
    assert grant.token.get_secret_value() == "participant-jwt-abc"
    assert grant.expires_at.tzinfo is not None
    assert grant.max_duration_seconds == 1800

    (sent,) = api_server.requests
    assert sent.method == "POST"
    assert sent.raw_path == "/v1/agent/sessions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["content-type"] == "application/json"
    assert "origin" not in sent.headers
    assert "x-fish-sdk" not in sent.headers
    assert sent.json() == {
        "agent_id": "agent_1",
        "name": "terminal chat",
        "tool_events": False,
        "language": "ja",
        "timezone": "Asia/Tokyo",
        "client_timezone": "Europe/Paris",
        "overrides": {"voice_id": "v1", "first_message": "hi {{name}}"},
        "dynamic_variables": {"name": "Ada", "n": 3, "vip": True, "score": 1.5},
        "end_user_id": "user_42",
        "metadata": {"source": "fishtalk", "nested": {"a": [1, None]}},
        "record_audio": False,
        "world_context": True,
    }


async def test_minimal_request_omits_unset_fields(api_server: ScriptedServer) -> None:
    api_server.script(Reply(201, grant_body()))
    await create(key_client(api_server), agent="agent_9")
    assert api_server.requests[0].body == b'{"agent_id":"agent_9"}'


async def test_public_mode_sends_origin_and_sdk_header_and_no_authorization(
    api_server: ScriptedServer,
) -> None:
    api_server.script(Reply(201, grant_body()))
    client = public_client(api_server)
    assert client.public
    grant = await create(client)
    assert grant.session_id == "sess_123"
    (sent,) = api_server.requests
    assert "authorization" not in sent.headers
    assert sent.headers["origin"] == ORIGIN
    assert sent.headers["x-fish-sdk"] == f"fishtalk/{__version__}"
    assert sent.json() == {"agent_id": "agent_1"}


async def test_public_mode_origin_is_normalised(api_server: ScriptedServer) -> None:
    api_server.script(Reply(201, grant_body()))
    await create(SessionClient(api_server.url, origin="http://localhost:5173/", **FAST))
    assert api_server.requests[0].headers["origin"] == "http://localhost:5173"


async def test_base_url_with_path_prefix_and_trailing_slash(api_server: ScriptedServer) -> None:
    api_server.script(Reply(201, grant_body()))
    await create(SessionClient(api_server.url + "/fish/", api_key=KEY, **FAST))
    assert api_server.requests[0].raw_path == "/fish/v1/agent/sessions"


async def test_200_is_accepted_like_201(api_server: ScriptedServer) -> None:
    api_server.script(Reply(200, grant_body(session_id="s200")))
    assert (await create(key_client(api_server))).session_id == "s200"


async def test_unknown_grant_fields_are_ignored(api_server: ScriptedServer) -> None:
    api_server.script(Reply(201, grant_body(region="eu", features=["x"])))
    assert (await create(key_client(api_server))).session_id == "sess_123"


async def test_end_session_posts_to_end_and_accepts_204(api_server: ScriptedServer) -> None:
    api_server.script(Reply(204))
    async with key_client(api_server) as client:
        await client.end_session("sess_123")
    (sent,) = api_server.requests
    assert sent.method == "POST"
    assert sent.raw_path == "/v1/agent/sessions/sess_123/end"
    assert sent.headers["authorization"] == f"Bearer {KEY}"


async def test_end_session_escapes_the_id(api_server: ScriptedServer) -> None:
    api_server.script(Reply(204))
    async with key_client(api_server) as client:
        await client.end_session("a/../b?c")
    assert api_server.requests[0].raw_path == "/v1/agent/sessions/a%2F..%2Fb%3Fc/end"


async def test_end_session_not_found(api_server: ScriptedServer) -> None:
    api_server.script(Reply(404, {"status": 404, "message": "Session not found"}))
    with pytest.raises(NotFoundError) as info:
        async with key_client(api_server) as client:
            await client.end_session("sess_gone")
    assert "session sess_gone not found" in str(info.value)
    assert exit_code_for(None, info.value) == EXIT_NOT_FOUND


# --- grant problems ---------------------------------------------------------------------------


async def test_unknown_transport_is_rejected(api_server: ScriptedServer) -> None:
    api_server.script(Reply(201, {"transport": "webtransport", "session_id": "s", "url": "x"}))
    with pytest.raises(UnsupportedTransportError) as info:
        await create(key_client(api_server))
    # The shape of every config error: what, where, what is allowed.
    said = str(info.value)
    assert said.startswith("unsupported transport: 'webtransport' in the session grant from ")
    assert api_server.url in said
    assert said.endswith("this fishtalk speaks livekit only (a newer fishtalk may speak more)")
    assert info.value.transport == "webtransport"
    assert exit_code_for(None, info.value) == EXIT_REJECTED


async def test_expired_grant_is_never_returned(api_server: ScriptedServer) -> None:
    past = (datetime.now(UTC) - timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    api_server.script(Reply(201, grant_body(expires_at=past)))
    with pytest.raises(SessionExpiredError) as info:
        await create(key_client(api_server))
    assert "sess_123" in str(info.value)
    assert "participant-jwt-abc" not in str(info.value)
    assert exit_code_for(None, info.value) == EXIT_REJECTED


async def test_expiry_is_checked_against_the_given_clock(api_server: ScriptedServer) -> None:
    body = grant_body(expires_at="2030-01-01T00:00:00+00:00")
    api_server.script(Reply(201, body), Reply(201, body))
    async with key_client(api_server) as client:
        request = SessionRequest(agent_id="a")
        grant = await client.create_session(request, now=datetime(2029, 12, 31, tzinfo=UTC))
        assert not grant.is_expired(datetime(2029, 12, 31, 23, 59, tzinfo=UTC))
        assert grant.is_expired(datetime(2030, 1, 1, tzinfo=UTC))
        with pytest.raises(SessionExpiredError):
            grant.ensure_fresh(datetime(2030, 1, 2, tzinfo=UTC))
        with pytest.raises(SessionExpiredError):
            await client.create_session(request, now=datetime(2030, 1, 1, 0, 0, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>Welcome to nginx!</body></html>",
        b"",
        b'{"session_id": "s", "transport": "livekit"',
        b"\xff\xfe not utf-8",
    ],
    ids=["html", "empty", "truncated-json", "binary"],
)
async def test_success_status_with_non_json_body(api_server: ScriptedServer, body: bytes) -> None:
    api_server.script(Reply(201, body, headers={"Content-Type": "text/html"}))
    with pytest.raises(UnexpectedResponseError) as info:
        await create(key_client(api_server))
    assert "not JSON" in str(info.value)
    assert exit_code_for(None, info.value) == EXIT_UNAVAILABLE


@pytest.mark.parametrize(
    ("body", "missing"),
    [
        ({"transport": "livekit", "session_id": "s"}, "expires_at"),
        (grant_body(token=None), "token"),
        (grant_body(max_duration_seconds="long"), "max_duration_seconds"),
        (grant_body(expires_at="tomorrow"), "expires_at"),
    ],
)
async def test_incomplete_grant(api_server: ScriptedServer, body: Any, missing: str) -> None:
    api_server.script(Reply(201, body))
    with pytest.raises(UnexpectedResponseError) as info:
        await create(key_client(api_server))
    assert missing in str(info.value)


@pytest.mark.parametrize("body", [[1, 2], "a string", {"session_id": "s"}, {"transport": 5}])
async def test_grant_that_is_not_a_grant(api_server: ScriptedServer, body: Any) -> None:
    api_server.script(Reply(201, body))
    with pytest.raises(UnexpectedResponseError):
        await create(key_client(api_server))


# --- every documented status ------------------------------------------------------------


async def test_400_bad_request(api_server: ScriptedServer) -> None:
    api_server.script(
        Reply(400, {"status": 400, "message": "Override system_prompt is not allowed"})
    )
    with pytest.raises(BadRequestError) as info:
        await create(key_client(api_server))
    assert str(info.value) == (
        "the session request was rejected: Override system_prompt is not allowed"
    )
    assert info.value.status == 400
    assert info.value.detail == "Override system_prompt is not allowed"
    assert exit_code_for(None, info.value) == EXIT_REJECTED


async def test_400_in_public_mode_explains_keyless_limits(api_server: ScriptedServer) -> None:
    api_server.script(Reply(400, {"status": 400, "message": "name is not allowed"}))
    with pytest.raises(BadRequestError, match="keyless sessions may only override"):
        await create(public_client(api_server))


async def test_401_bare_with_www_authenticate(api_server: ScriptedServer) -> None:
    api_server.script(Reply(401, headers={"WWW-Authenticate": "Bearer"}))
    with pytest.raises(AuthenticationError) as info:
        await create(key_client(api_server))
    assert "Authorization header is missing or malformed" in str(info.value)
    assert exit_code_for(None, info.value) == EXIT_AUTH


async def test_401_invalid_token(api_server: ScriptedServer) -> None:
    api_server.script(Reply(401, {"status": 401, "message": "Invalid token"}))
    with pytest.raises(AuthenticationError, match="the API key is invalid"):
        await create(key_client(api_server))


async def test_401_token_expired(api_server: ScriptedServer) -> None:
    api_server.script(Reply(401, {"status": 401, "message": "Token expired"}))
    with pytest.raises(AuthenticationError, match="the API key has expired"):
        await create(key_client(api_server))


async def test_402_out_of_credit(api_server: ScriptedServer) -> None:
    api_server.script(Reply(402, {"status": 402, "message": "Out of API credit"}))
    with pytest.raises(PaymentRequiredError, match="out of API credit") as info:
        await create(key_client(api_server))
    assert exit_code_for(None, info.value) == EXIT_AUTH


@pytest.mark.parametrize(
    ("message", "reason", "error", "expect"),
    [
        ("Agent is not public", None, AgentNotPublicError, "agent agent_1 is not public"),
        (
            "Origin header is required for public agents",
            None,
            OriginForbiddenError,
            "needs an Origin",
        ),
        ("Origin not allowed", None, OriginForbiddenError, f"origin {ORIGIN} is not allowed"),
        ("Forbidden", "origin_forbidden", OriginForbiddenError, "is not allowed"),
        ("Agent is unavailable", None, AgentUnavailableError, "agent_1 is unavailable"),
        (
            "Agent platform is not enabled for this account",
            None,
            AgentUnavailableError,
            "private beta",
        ),
        ("Nope", None, ForbiddenError, "not allowed: Nope"),
    ],
)
async def test_403_causes(
    api_server: ScriptedServer,
    message: str,
    reason: str | None,
    error: type[ForbiddenError],
    expect: str,
) -> None:
    body: dict[str, Any] = {"status": 403, "message": message}
    if reason:
        body["reason"] = reason
    api_server.script(Reply(403, body))
    with pytest.raises(ForbiddenError) as info:
        await create(public_client(api_server))
    assert type(info.value) is error
    assert expect in str(info.value)
    assert info.value.reason == reason
    assert exit_code_for(None, info.value) == EXIT_AUTH


async def test_403_origin_required_without_an_origin(api_server: ScriptedServer) -> None:
    api_server.script(Reply(403, {"status": 403, "message": "Origin not allowed"}))
    with pytest.raises(OriginForbiddenError, match="needs an Origin"):
        await create(SessionClient(api_server.url, **FAST))
    assert "origin" not in api_server.requests[0].headers


async def test_404_agent_not_found(api_server: ScriptedServer) -> None:
    api_server.script(Reply(404, {"status": 404, "message": "Agent not found"}))
    with pytest.raises(NotFoundError) as info:
        await create(key_client(api_server), agent="agent_x")
    assert str(info.value) == "agent agent_x not found (or it belongs to another team)"
    assert exit_code_for(None, info.value) == EXIT_NOT_FOUND


async def test_409_no_published_version(api_server: ScriptedServer) -> None:
    api_server.script(Reply(409, {"status": 409, "message": "Agent has no published version"}))
    with pytest.raises(ConflictError, match="has no published version; publish it first") as e:
        await create(key_client(api_server))
    assert exit_code_for(None, e.value) == EXIT_NOT_FOUND


async def test_409_other_conflict(api_server: ScriptedServer) -> None:
    api_server.script(Reply(409, {"status": 409, "message": "Session already ended"}))
    with pytest.raises(ConflictError, match="Session already ended"):
        async with key_client(api_server) as client:
            await client.end_session("s1")


async def test_409_unsupported_transport_code(api_server: ScriptedServer) -> None:
    api_server.script(
        Reply(
            409, {"status": 409, "message": "No common transport", "code": "unsupported_transport"}
        )
    )
    with pytest.raises(UnsupportedTransportError) as info:
        await create(key_client(api_server))
    said = str(info.value)
    assert said.startswith("no supported transport in the session API's answer at ")
    assert "(No common transport): this fishtalk speaks livekit only" in said


async def test_415_bare(api_server: ScriptedServer) -> None:
    api_server.script(Reply(415))
    with pytest.raises(UnsupportedMediaTypeError, match="HTTP 415") as info:
        await create(key_client(api_server))
    assert exit_code_for(None, info.value) == EXIT_REJECTED


async def test_422_lists_field_errors(api_server: ScriptedServer) -> None:
    api_server.script(
        Reply(
            422,
            [
                {
                    "type": "string_too_long",
                    "loc": ["body", "end_user_id"],
                    "msg": "String should have at most 256 characters",
                    "ctx": {"max_length": 256},
                },
                {
                    "type": "extra_forbidden",
                    "loc": ["body", "colour"],
                    "msg": "Extra inputs are not permitted",
                },
                {"type": "value_error", "loc": ["body", "timezone"], "msg": "Unknown timezone"},
            ],
        )
    )
    with pytest.raises(RequestValidationError) as info:
        await create(key_client(api_server))
    exc = info.value
    assert str(exc) == (
        "the session request has invalid fields: "
        "end_user_id: String should have at most 256 characters; "
        "colour: Extra inputs are not permitted; timezone: Unknown timezone"
    )
    assert [e.location for e in exc.field_errors] == ["end_user_id", "colour", "timezone"]
    assert exc.field_errors[1].kind == "extra_forbidden"
    assert exit_code_for(None, exc) == EXIT_REJECTED


async def test_422_fastapi_detail_shape_and_many_errors(api_server: ScriptedServer) -> None:
    errors = [{"loc": ["body", f"f{i}"], "msg": "bad", "type": "x"} for i in range(8)]
    api_server.script(Reply(422, {"detail": errors}))
    with pytest.raises(RequestValidationError) as info:
        await create(key_client(api_server))
    assert len(info.value.field_errors) == 8
    assert str(info.value).endswith("f4: bad (and 3 more)")


async def test_429_rate_limited_is_not_retried(api_server: ScriptedServer) -> None:
    api_server.script(
        Reply(429, {"status": 429, "message": "Too many requests"}, headers={"Retry-After": "12"}),
        Reply(201, grant_body()),
    )
    with pytest.raises(RateLimitedError) as info:
        await create(public_client(api_server))
    assert info.value.retry_after == 12
    assert "try again in 12 s" in str(info.value)
    assert exit_code_for(None, info.value) == EXIT_UNAVAILABLE
    assert len(api_server.requests) == 1


async def test_502_retried_then_success(api_server: ScriptedServer) -> None:
    gateway_down = {"status": 502, "message": "Agent gateway is unreachable"}
    api_server.script(Reply(502, gateway_down), Reply(502, gateway_down), Reply(201, grant_body()))
    grant = await create(key_client(api_server))
    assert grant.session_id == "sess_123"
    assert len(api_server.requests) == 3
    # Every attempt carries the same body and credentials.
    assert len({(r.body, r.headers["authorization"]) for r in api_server.requests}) == 1


async def test_503_retried_then_success(api_server: ScriptedServer) -> None:
    api_server.script(Reply(503, "busy"), Reply(201, grant_body()))
    assert (await create(key_client(api_server))).session_id == "sess_123"
    assert len(api_server.requests) == 2


async def test_502_gives_up_after_three_attempts(api_server: ScriptedServer) -> None:
    api_server.script(*[Reply(502, {"status": 502, "message": "Agent gateway is unreachable"})] * 4)
    with pytest.raises(BadGatewayError) as info:
        await create(key_client(api_server))
    assert len(api_server.requests) == 3
    assert "HTTP 502 after 3 attempts" in str(info.value)
    assert exit_code_for(None, info.value) == EXIT_UNAVAILABLE


async def test_503_gives_up_after_three_attempts(api_server: ScriptedServer) -> None:
    api_server.script(*[Reply(503)] * 4)
    with pytest.raises(ServiceUnavailableError, match="temporarily unavailable"):
        await create(key_client(api_server))
    assert len(api_server.requests) == 3


async def test_max_attempts_is_configurable(api_server: ScriptedServer) -> None:
    api_server.script(*[Reply(503)] * 3)
    with pytest.raises(ServiceUnavailableError) as info:
        await create(key_client(api_server, max_attempts=1))
    assert len(api_server.requests) == 1
    assert "after" not in str(info.value)


async def test_end_session_is_retried_too(api_server: ScriptedServer) -> None:
    api_server.script(Reply(503), Reply(204))
    async with key_client(api_server) as client:
        await client.end_session("s1")
    assert len(api_server.requests) == 2


@pytest.mark.parametrize("status", [500, 504, 599])
async def test_other_5xx_not_retried(api_server: ScriptedServer, status: int) -> None:
    api_server.script(Reply(status, {"status": status, "message": "Internal error"}), Reply(201))
    with pytest.raises(ServerError) as info:
        await create(key_client(api_server))
    assert type(info.value) is ServerError
    assert str(info.value) == f"the Fish Audio API failed (HTTP {status}): Internal error"
    assert len(api_server.requests) == 1


async def test_5xx_with_html_body(api_server: ScriptedServer) -> None:
    api_server.script(Reply(500, "<html><h1>500 Internal Server Error</h1></html>"))
    with pytest.raises(ServerError) as info:
        await create(key_client(api_server))
    assert str(info.value) == "the Fish Audio API failed (HTTP 500)"


@pytest.mark.parametrize("status", [301, 405, 418])
async def test_undocumented_status(api_server: ScriptedServer, status: int) -> None:
    headers = {"Location": "https://elsewhere.example"} if status == 301 else {}
    api_server.script(Reply(status, "nope", headers=headers))
    with pytest.raises(UnexpectedResponseError, match=f"HTTP {status}"):
        await create(key_client(api_server))
    assert len(api_server.requests) == 1


async def test_server_text_is_one_bounded_line(api_server: ScriptedServer) -> None:
    api_server.script(
        Reply(400, {"status": 400, "message": "line one\nline two\x1b[31m red " + "x" * 1000})
    )
    with pytest.raises(BadRequestError) as info:
        await create(key_client(api_server))
    text = str(info.value)
    assert "\n" not in text
    assert "\x1b" not in text
    assert len(text) < 300


# --- network failures ---------------------------------------------------------------------


async def test_slow_server_times_out_and_is_not_retried(api_server: ScriptedServer) -> None:
    api_server.script(Reply(201, grant_body(), stall=60), Reply(201, grant_body()))
    with pytest.raises(ApiTimeoutError) as info:
        await create(key_client(api_server, timeout=0.3))
    assert "did not answer within 0.3 s" in str(info.value)
    assert exit_code_for(None, info.value) == EXIT_UNAVAILABLE
    assert len(api_server.requests) == 1


async def test_connection_refused_is_retried_then_reported(
    closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    with (
        caplog.at_level(logging.DEBUG, logger="fishtalk.engine.api"),
        pytest.raises(ApiConnectionError) as info,
    ):
        await create(SessionClient(url, api_key=KEY, **FAST))
    assert str(info.value) == (
        f"cannot reach the Fish Audio API at {url}: connection refused (3 attempts)"
    )
    assert exit_code_for(None, info.value) == EXIT_UNAVAILABLE
    retries = [r for r in caplog.records if "retry" in r.getMessage()]
    assert len(retries) == 2
    for record in caplog.records:
        assert KEY not in record.getMessage()


# --- the API key never leaks -------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        Reply(401, {"status": 401, "message": f"Invalid token {KEY}"}),
        Reply(400, {"status": 400, "message": f"bad key Bearer {KEY}", "reason": KEY}),
        Reply(403, {"status": 403, "message": f"{KEY} is not public"}),
        Reply(422, [{"loc": ["body", KEY], "msg": f"echo {KEY}", "type": "x"}]),
        Reply(500, {"status": 500, "message": f"crash while checking {KEY}"}),
        Reply(201, {"transport": KEY}),
    ],
    ids=["401", "400", "403", "422", "500", "transport"],
)
async def test_api_key_never_in_errors_or_logs(
    api_server: ScriptedServer, reply: Reply, caplog: pytest.LogCaptureFixture
) -> None:
    api_server.script(reply)
    client = key_client(api_server)
    assert KEY not in repr(client)
    with caplog.at_level(logging.DEBUG), pytest.raises(FishtalkError) as info:
        await create(client)
    exc = info.value
    if not isinstance(exc, UnsupportedTransportError):
        assert_no_key(exc)
    for record in caplog.records:
        assert KEY not in record.getMessage()


async def test_grant_token_and_key_hidden_from_repr(api_server: ScriptedServer) -> None:
    api_server.script(Reply(201, grant_body()))
    grant = await create(key_client(api_server))
    assert "participant-jwt-abc" not in repr(grant)
    assert "participant-jwt-abc" not in str(grant)


# --- client configuration -------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_url": "api.fish.audio"},
        {"base_url": "ftp://api.fish.audio"},
        {"base_url": "https://user:pw@api.fish.audio"},
        {"origin": "app.example.com"},
        {"origin": "https://app.example.com/page"},
        {"api_key": ""},
        {"api_key": "   "},
        {"api_key": "has space-in-it"},
        {"api_key": "ключ"},
    ],
)
def test_bad_client_settings_are_config_errors(kwargs: dict[str, Any]) -> None:
    args = {"base_url": "https://api.fish.audio", **kwargs}
    with pytest.raises(ClientConfigError) as info:
        SessionClient(args.pop("base_url"), **args)
    assert exit_code_for(None, info.value) == EXIT_USAGE
    key = kwargs.get("api_key")
    if key and key.strip():
        assert key not in str(info.value)


def test_api_key_whitespace_is_trimmed() -> None:
    client = SessionClient(api_key=f"  {KEY}\n")
    assert not client.public
    assert KEY not in repr(client)


def test_default_base_url() -> None:
    assert SessionClient(origin=ORIGIN).base_url == "https://api.fish.audio"


# --- misbehaving servers (raw TCP) ------------------------------------------------------------


async def test_server_hanging_up_mid_request_is_a_connection_error() -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        return  # close without answering

    async with RawServer(hang_up) as server:
        with pytest.raises(ApiConnectionError) as info:
            await create(SessionClient(server.url, api_key=KEY, **FAST))
    assert str(info.value).startswith(
        f"the connection to the Fish Audio API at {server.url} failed:"
    )
    # The request may have been processed: a create is not retried.
    assert server.connections == 1
    assert_no_key(info.value)


async def test_dripping_server_hits_the_overall_deadline() -> None:
    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n")
        writer.write(b"Content-Length: 100000\r\n\r\n{")
        await writer.drain()
        for _ in range(600):  # one byte every 50 ms: each read is quick, the whole is not
            await asyncio.sleep(0.05)
            writer.write(b" ")
            await writer.drain()

    async with RawServer(drip) as server:
        with pytest.raises(ApiTimeoutError, match=r"did not answer within 0\.5 s"):
            await create(SessionClient(server.url, api_key=KEY, timeout=0.5, **FAST))
    assert server.connections == 1


async def test_oversized_body_is_cut_off_not_buffered() -> None:
    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        size = 8 * MAX_BODY_BYTES
        writer.write(f"HTTP/1.1 201 Created\r\nContent-Length: {size}\r\n\r\n".encode())
        writer.write(b'{"a":"' + b"x" * (size - 8) + b'"}')
        await writer.drain()

    async with RawServer(flood) as server:
        with pytest.raises(UnexpectedResponseError, match="not JSON"):
            await create(SessionClient(server.url, api_key=KEY, **FAST))
