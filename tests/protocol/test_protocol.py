"""The wire protocol, proven against every example in the spec and against hostile input.

Golden files in tests/golden/ hold one message each (the spec's examples verbatim, plus
messages built from its field tables and contract-notes.md); every one must decode to the
right model and re-encode to the same JSON object.
"""

from __future__ import annotations

import contextlib
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fishtalk.core import protocol
from fishtalk.core.protocol import (
    AgentError,
    ClientToolCall,
    ClientToolResult,
    ProtocolError,
    SessionEnded,
    ToolCompleted,
    ToolFailed,
    ToolStarted,
    UnknownAgentEvent,
    UserActivity,
    UserHangup,
    UserInterrupt,
    UserMessage,
    decode_agent_event,
    decode_client_event,
    encode_agent_event,
    encode_client_event,
)
from fishtalk.engine.api import LiveKitGrant, parse_grant

GOLDEN = Path(__file__).resolve().parent.parent / "golden"

AGENT_GOLDEN: dict[str, type[Any]] = {
    "client_tool.call.json": ClientToolCall,
    "tool.started.json": ToolStarted,
    "tool.completed.json": ToolCompleted,
    "tool.completed.truncated.json": ToolCompleted,
    "tool.failed.json": ToolFailed,
    "error.json": AgentError,
    "error.internal.json": AgentError,
    "session.ended.json": SessionEnded,
}
CLIENT_GOLDEN: dict[str, type[Any]] = {
    "user.message.json": UserMessage,
    "user.message.text_only.json": UserMessage,
    "user.activity.json": UserActivity,
    "user.interrupt.json": UserInterrupt,
    "user.hangup.json": UserHangup,
    "client_tool.result.json": ClientToolResult,
    "client_tool.result.error.json": ClientToolResult,
}
GRANT_GOLDEN = ("session_created.json", "session_created.docs.json")


def golden_bytes(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


def golden_obj(name: str) -> Any:
    return json.loads(golden_bytes(name))


def is_compact(payload: bytes) -> bool:
    """Compact JSON: byte-identical to a separators=(",", ":") re-dump of itself."""
    canonical = json.dumps(json.loads(payload), separators=(",", ":"), ensure_ascii=False)
    return payload == canonical.encode("utf-8")


def test_every_golden_file_is_covered() -> None:
    names = {p.name for p in GOLDEN.glob("*.json")}
    assert names == set(AGENT_GOLDEN) | set(CLIENT_GOLDEN) | set(GRANT_GOLDEN)


# --- golden round trips ----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(AGENT_GOLDEN))
def test_agent_golden_round_trips(name: str) -> None:
    event = decode_agent_event(golden_bytes(name))
    assert type(event) is AGENT_GOLDEN[name]
    encoded = encode_agent_event(event)
    assert json.loads(encoded) == golden_obj(name)
    assert is_compact(encoded)
    assert decode_agent_event(encoded) == event
    # str input decodes the same as bytes
    assert decode_agent_event(golden_bytes(name).decode()) == event


@pytest.mark.parametrize("name", sorted(CLIENT_GOLDEN))
def test_client_golden_round_trips(name: str) -> None:
    event = decode_client_event(golden_bytes(name))
    assert event is not None
    assert type(event) is CLIENT_GOLDEN[name]
    encoded = encode_client_event(event)
    assert json.loads(encoded) == golden_obj(name)
    assert is_compact(encoded)
    assert decode_client_event(encoded) == event


def test_spec_examples_decode_to_the_documented_values() -> None:
    call = decode_agent_event(golden_bytes("client_tool.call.json"))
    assert call == ClientToolCall(
        call_id="call_abc",
        tool_name="open_dashboard",
        params={"tab": "billing"},
        expects_response=True,
    )
    assert decode_agent_event(golden_bytes("error.json")) == AgentError(code="provider_error")
    assert decode_client_event(golden_bytes("user.message.json")) == UserMessage(
        text="What's my balance?"
    )
    assert decode_client_event(golden_bytes("client_tool.result.json")) == ClientToolResult(
        call_id="call_abc", result={"opened": True}
    )
    failed = decode_agent_event(golden_bytes("tool.failed.json"))
    assert isinstance(failed, ToolFailed)
    assert (failed.tool_source, failed.error) == ("client", "tool timed out")
    truncated = decode_agent_event(golden_bytes("tool.completed.truncated.json"))
    assert isinstance(truncated, ToolCompleted)
    assert truncated.output_truncated is True
    assert truncated.input_truncated is None
    assert truncated.node_id == "node_1"
    assert truncated.extra_fields == {}


@pytest.mark.parametrize("name", GRANT_GOLDEN)
def test_session_creation_response_golden(name: str) -> None:
    data = golden_obj(name)
    before = datetime(2026, 7, 1, tzinfo=UTC)
    grant = parse_grant(data, now=before)
    assert isinstance(grant, LiveKitGrant)
    assert grant.transport == "livekit"
    assert grant.session_id == data["session_id"]
    assert grant.livekit_url == data["livekit_url"]
    assert grant.max_duration_seconds == 1800
    assert grant.token.get_secret_value() == data["token"]
    assert data["token"] not in repr(grant)
    assert grant.expires_at.tzinfo is not None
    assert grant.expires_at == datetime.fromisoformat(data["expires_at"])
    # Round trip: the grant re-serialised (token revealed) is the response body.
    dumped = grant.model_dump(mode="json")
    dumped["token"] = grant.token.get_secret_value()
    dumped["expires_at"] = grant.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert dumped == data


# --- encoding ------------------------------------------------------------------------------


def test_encode_is_compact_camel_case_and_omits_unset_optionals() -> None:
    assert encode_client_event(UserMessage(text="hi")) == b'{"type":"user.message","text":"hi"}'
    assert (
        encode_client_event(UserMessage(text="hi", audio=False))
        == b'{"type":"user.message","text":"hi","audio":false}'
    )
    assert encode_client_event(UserActivity()) == b'{"type":"user.activity"}'
    assert encode_client_event(UserInterrupt()) == b'{"type":"user.interrupt"}'
    assert encode_client_event(UserHangup()) == b'{"type":"user.hangup"}'
    assert (
        encode_client_event(ClientToolResult(call_id="c1", result="boom", is_error=True))
        == b'{"type":"client_tool.result","callId":"c1","result":"boom","isError":true}'
    )
    assert (
        encode_client_event(ClientToolResult(call_id="c1", result={}))
        == b'{"type":"client_tool.result","callId":"c1","result":{}}'
    )
    started = ToolStarted(call_id="c", tool_name="t", tool_source="mcp", input_truncated=True)
    assert json.loads(encode_agent_event(started)) == {
        "type": "tool.started",
        "callId": "c",
        "toolName": "t",
        "toolSource": "mcp",
        "inputTruncated": True,
    }


def test_encode_keeps_nulls_inside_json_values() -> None:
    result = ClientToolResult(call_id="c", result={"v": None, "l": [None, {"k": None}]})
    assert json.loads(encode_client_event(result))["result"] == {
        "v": None,
        "l": [None, {"k": None}],
    }


def test_encode_is_utf8_not_ascii_escaped() -> None:
    encoded = encode_client_event(UserMessage(text="こんにちは 🐟"))
    assert "こんにちは 🐟".encode() in encoded


@pytest.mark.parametrize(
    "result",
    [math.nan, math.inf, -math.inf, {"x": [math.nan]}, "\ud800", {"\udcff": 1}],
    ids=["nan", "inf", "-inf", "nested-nan", "lone-surrogate", "surrogate-key"],
)
def test_encode_refuses_values_json_cannot_carry(result: Any) -> None:
    with pytest.raises(ProtocolError, match="cannot encode"):
        encode_client_event(ClientToolResult(call_id="c", result=result))


def test_encode_refuses_lone_surrogates_in_user_text() -> None:
    # A terminal decoding invalid bytes with surrogateescape produces exactly this.
    with pytest.raises(ProtocolError):
        encode_client_event(UserMessage(text="bad \udcff byte"))


# --- python side: snake_case attributes, camelCase wire -----------------------------------


def test_wire_is_camel_case_and_python_is_snake_case() -> None:
    event = decode_agent_event(
        b'{"type":"tool.completed","callId":"c","toolName":"t","toolSource":"webhook",'
        b'"inputTruncated":true,"outputTruncated":false,"nodeId":"n"}'
    )
    assert isinstance(event, ToolCompleted)
    assert event.call_id == "c"
    assert event.input_truncated is True
    assert event.output_truncated is False
    assert event.node_id == "n"


def test_snake_case_keys_on_the_wire_are_not_field_names() -> None:
    # callId is required; call_id on the wire is just an unknown field.
    with pytest.raises(ProtocolError, match="callId"):
        decode_agent_event(b'{"type":"client_tool.call","call_id":"c","tool_name":"t"}')


def test_defaults_for_optional_agent_fields() -> None:
    call = decode_agent_event(b'{"type":"client_tool.call","callId":"c","toolName":"t"}')
    assert call == ClientToolCall(call_id="c", tool_name="t", params={}, expects_response=False)
    started = decode_agent_event(b'{"type":"tool.started","callId":"c","toolName":"t"}')
    assert isinstance(started, ToolStarted)
    assert started.tool_source == "unknown"


# --- forward compatibility --------------------------------------------------------------


def test_unknown_type_gives_unknown_event_with_the_raw_object() -> None:
    raw = {"type": "agent.mood", "mood": "cheerful", "level": [1, 2, {"x": None}]}
    event = decode_agent_event(json.dumps(raw).encode())
    assert isinstance(event, UnknownAgentEvent)
    assert event.type == "agent.mood"
    assert event.raw == raw
    assert json.loads(encode_agent_event(event)) == raw


def test_unknown_client_type_is_ignored() -> None:
    assert decode_client_event(b'{"type":"user.typing_fast","speed":3}') is None


def test_unknown_fields_are_kept_for_a_debug_view() -> None:
    payload = (
        b'{"type":"client_tool.call","callId":"c","toolName":"t","params":{},'
        b'"expectsResponse":true,"priority":"high","trace":{"id":7},"gone":null}'
    )
    event = decode_agent_event(payload)
    assert isinstance(event, ClientToolCall)
    assert event.extra_fields == {"priority": "high", "trace": {"id": 7}, "gone": None}
    assert json.loads(encode_agent_event(event)) == json.loads(payload)
    message = decode_client_event(b'{"type":"user.message","text":"x","mood":"calm"}')
    assert message is not None
    assert message.extra_fields == {"mood": "calm"}


@pytest.mark.parametrize(
    ("payload", "attr", "value"),
    [
        (
            b'{"type":"tool.started","callId":"c","toolName":"t","toolSource":"a2a"}',
            "tool_source",
            "a2a",
        ),
        (b'{"type":"error","code":"quota_exceeded"}', "code", "quota_exceeded"),
        (b'{"type":"session.ended","reason":"power_outage"}', "reason", "power_outage"),
    ],
    ids=["toolSource", "error-code", "session-ended-reason"],
)
def test_open_sets_keep_unknown_values(payload: bytes, attr: str, value: str) -> None:
    event = decode_agent_event(payload)
    assert getattr(event, attr) == value
    assert value not in (
        protocol.TOOL_SOURCES + protocol.AGENT_ERROR_CODES + protocol.SESSION_ENDED_REASONS
    )


def test_known_open_set_values() -> None:
    for source in protocol.TOOL_SOURCES:
        event = decode_agent_event(
            json.dumps(
                {"type": "tool.started", "callId": "c", "toolName": "t", "toolSource": source}
            )
        )
        assert isinstance(event, ToolStarted)
        assert event.tool_source == source
    for reason in protocol.SESSION_ENDED_REASONS:
        assert decode_agent_event(json.dumps({"type": "session.ended", "reason": reason})) == (
            SessionEnded(reason=reason)
        )


def test_constants() -> None:
    assert protocol.TOPIC_AGENT_EVENT == "agent-event"
    assert protocol.TOPIC_CLIENT_EVENT == "client-event"
    assert protocol.TOPIC_TRANSCRIPTION == "lk.transcription"
    assert protocol.ATTR_AGENT_STATE == "lk.agent.state"
    assert protocol.ATTR_SEGMENT_ID == "lk.segment_id"
    assert protocol.ATTR_TRANSCRIPTION_FINAL == "lk.transcription_final"
    assert protocol.is_final({"lk.transcription_final": "true"})
    assert not protocol.is_final({"lk.transcription_final": "false"})
    assert not protocol.is_final({})


# --- malformed input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"   ",
        b"{",
        b"not json",
        b"[]",
        b'"type"',
        b"42",
        b"null",
        b"{}",
        b'{"type": null}',
        b'{"type": 7}',
        b'{"type": ["error"]}',
        b"\xff\xfe\x00",  # invalid UTF-8
        b'{"type":"error","code":"\xc3"}',  # truncated UTF-8 sequence
        b'\xef\xbb\xbf{"type":"error","code":"x"}',  # UTF-8 BOM
        b'{"type":"error","code":NaN}',
        b'{"type":"error","code":"x","n":NaN}',
        b'{"type":"error","code":"x","n":Infinity}',
        b'{"type":"error","code":"x","n":-Infinity}',
        b'{"type":"error","code":"x","n":1e400}',
        b'{"type":"error","code":"x","n":' + b"9" * 5000 + b"}",  # over int digit limit
        b'{"type":"error","code":"\\ud800"}',  # lone surrogate escape
        b'{"type":"mystery","\\udfff":1}',  # ... also in keys of unknown events
        b'{"type":"client_tool.call","callId":"c","toolName":"t","params":' + b"[" * 100_000,
        b'{"type":"x","deep":' + b"[" * 5000 + b"]" * 5000 + b"}",
    ],
)
def test_malformed_payloads_raise_protocol_error(payload: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_agent_event(payload)
    with pytest.raises(ProtocolError):
        decode_client_event(payload)


@pytest.mark.parametrize(
    "payload",
    [
        b'{"type":"client_tool.call","toolName":"t"}',  # missing callId
        b'{"type":"client_tool.call","callId":1,"toolName":"t"}',
        b'{"type":"client_tool.call","callId":"c","toolName":"t","params":[]}',
        b'{"type":"client_tool.call","callId":"c","toolName":"t","expectsResponse":"yes"}',
        b'{"type":"client_tool.call","callId":"c","toolName":"t","expectsResponse":1}',
        b'{"type":"tool.started","callId":"c"}',
        b'{"type":"tool.completed","callId":"c","toolName":"t","output":{"a":1}}',
        b'{"type":"tool.failed","callId":"c","toolName":"t","error":42}',
        b'{"type":"error"}',
        b'{"type":"error","code":null}',
        b'{"type":"session.ended"}',
        b'{"type":"session.ended","reason":3}',
    ],
)
def test_wrongly_typed_agent_fields_raise_protocol_error(payload: bytes) -> None:
    with pytest.raises(ProtocolError, match="invalid"):
        decode_agent_event(payload)


@pytest.mark.parametrize(
    "payload",
    [
        b'{"type":"user.message"}',
        b'{"type":"user.message","text":5}',
        b'{"type":"user.message","text":"x","audio":"no"}',
        b'{"type":"client_tool.result"}',
        b'{"type":"client_tool.result","callId":"c","isError":"true"}',
    ],
)
def test_wrongly_typed_client_fields_raise_protocol_error(payload: bytes) -> None:
    with pytest.raises(ProtocolError, match="invalid"):
        decode_client_event(payload)


def test_deep_nesting_inside_known_event_is_a_short_protocol_error() -> None:
    depth = 900
    payload = (
        '{"type":"client_tool.call","callId":"c","toolName":"t","params":{"x":'
        + "[" * depth
        + "]" * depth
        + "}}"
    )
    with pytest.raises(ProtocolError) as info:
        decode_agent_event(payload)
    assert len(str(info.value)) < 400


def test_moderate_nesting_round_trips() -> None:
    nested: Any = "leaf"
    for _ in range(50):
        nested = {"n": [nested]}
    call = ClientToolCall(call_id="c", tool_name="t", params={"deep": nested})
    assert decode_agent_event(encode_agent_event(call)) == call


def test_huge_ints_round_trip_within_pythons_limit() -> None:
    big = 10**300
    event = decode_agent_event(
        json.dumps(
            {"type": "client_tool.call", "callId": "c", "toolName": "t", "params": {"n": big}}
        )
    )
    assert isinstance(event, ClientToolCall)
    assert event.params["n"] == big
    assert decode_agent_event(encode_agent_event(event)) == event


def test_surrogate_pairs_are_fine() -> None:
    event = decode_agent_event(b'{"type":"error","code":"\\ud83d\\udc1f"}')
    assert isinstance(event, AgentError)
    assert event.code == "🐟"


def test_non_bytes_input_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        decode_agent_event(12)  # type: ignore[arg-type]  # deliberately wrong type


# --- properties -----------------------------------------------------------------------------

# Any unicode, lone surrogates included (they arrive as \uXXXX escapes on the wire).
any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats(allow_nan=True, allow_infinity=True)
    | any_text
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12,
)
# Values JSON can carry faithfully: most generated messages should decode.
safe_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
)
safe_values = st.recursive(
    safe_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
mostly_safe_values = st.one_of(safe_values, safe_values, safe_values, json_values)

AGENT_FIELDS = {
    "client_tool.call": ["callId", "toolName", "params", "expectsResponse"],
    "tool.started": ["callId", "toolName", "toolSource", "input", "inputTruncated", "nodeId"],
    "tool.completed": [
        "callId",
        "toolName",
        "toolSource",
        "input",
        "inputTruncated",
        "output",
        "outputTruncated",
        "nodeId",
    ],
    "tool.failed": ["callId", "toolName", "toolSource", "error", "output", "nodeId"],
    "error": ["code", "message"],
    "session.ended": ["reason"],
}
CLIENT_FIELDS = {
    "user.message": ["text", "audio"],
    "user.activity": [],
    "user.interrupt": [],
    "user.hangup": [],
    "client_tool.result": ["callId", "result", "isError"],
}


def _value_for(name: str) -> st.SearchStrategy[Any]:
    """Mostly plausible values (so decoding often succeeds), sometimes anything at all."""
    plausible: st.SearchStrategy[Any]
    if name in {"expectsResponse", "inputTruncated", "outputTruncated", "audio", "isError"}:
        plausible = st.booleans()
    elif name == "params":
        plausible = st.dictionaries(st.text(max_size=8), mostly_safe_values, max_size=4)
    elif name == "result":
        plausible = mostly_safe_values
    else:
        plausible = st.text(max_size=16) | any_text
    return st.one_of(plausible, plausible, plausible, plausible, json_values)


@st.composite
def messages(draw: st.DrawFn, fields: dict[str, list[str]]) -> dict[str, Any]:
    kind = draw(st.sampled_from(sorted(fields)))
    obj: dict[str, Any] = {}
    for name in fields[kind]:
        if draw(st.integers(0, 9)) > 0:
            obj[name] = draw(_value_for(name))
    extra_keys = st.text(max_size=8) | any_text
    obj.update(draw(st.dictionaries(extra_keys, mostly_safe_values, max_size=3)))
    obj["type"] = kind
    return obj


def _wire(obj: Any, *, ascii_only: bool) -> bytes:
    return json.dumps(obj, ensure_ascii=ascii_only, allow_nan=True).encode(
        "utf-8", errors="surrogatepass"
    )


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=256))
def test_arbitrary_bytes_only_ever_raise_protocol_error(payload: bytes) -> None:
    for decode in (decode_agent_event, decode_client_event):
        with contextlib.suppress(ProtocolError):  # anything else propagates and fails
            decode(payload)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.booleans())
def test_arbitrary_json_only_ever_raises_protocol_error(value: Any, ascii_only: bool) -> None:
    payload = _wire(value, ascii_only=ascii_only)
    for decode in (decode_agent_event, decode_client_event):
        with contextlib.suppress(ProtocolError):  # anything else propagates and fails
            decode(payload)


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(messages(AGENT_FIELDS), st.booleans())
def test_known_agent_types_decode_or_raise_protocol_error(
    obj: dict[str, Any], ascii_only: bool
) -> None:
    try:
        event = decode_agent_event(_wire(obj, ascii_only=ascii_only))
    except ProtocolError:
        return
    assert not isinstance(event, UnknownAgentEvent)
    assert event.type == obj["type"]
    # Whatever decodes re-encodes, and re-decodes to the same event.
    encoded = encode_agent_event(event)
    assert is_compact(encoded)
    assert decode_agent_event(encoded) == event


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(messages(CLIENT_FIELDS), st.booleans())
def test_known_client_types_decode_or_raise_protocol_error(
    obj: dict[str, Any], ascii_only: bool
) -> None:
    try:
        event = decode_client_event(_wire(obj, ascii_only=ascii_only))
    except ProtocolError:
        return
    assert event is not None
    assert event.type == obj["type"]
    encoded = encode_client_event(event)
    assert is_compact(encoded)
    assert decode_client_event(encoded) == event


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(min_size=1, max_size=30).filter(lambda t: t not in AGENT_FIELDS),
    st.dictionaries(st.text(max_size=8), json_values, max_size=4),
)
def test_unknown_types_always_decode_to_unknown_events(kind: str, rest: dict[str, Any]) -> None:
    obj = {**rest, "type": kind}
    try:
        event = decode_agent_event(_wire(obj, ascii_only=False))
    except ProtocolError:
        # Only for values JSON itself cannot carry (NaN, infinities, huge ints).
        assert "malformed JSON" in str(_decode_error(obj))
        return
    assert isinstance(event, UnknownAgentEvent)
    assert event.type == kind
    assert event.raw == obj


def _decode_error(obj: Any) -> ProtocolError:
    try:
        decode_agent_event(_wire(obj, ascii_only=False))
    except ProtocolError as exc:
        return exc
    raise AssertionError("expected a ProtocolError")


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(max_size=40),
    st.one_of(st.none(), st.booleans()),
)
def test_user_message_round_trips(text: str, audio: bool | None) -> None:
    event = UserMessage(text=text, audio=audio)
    encoded = encode_client_event(event)
    assert decode_client_event(encoded) == event
    assert ("audio" in json.loads(encoded)) is (audio is not None)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text() | st.just("bad \udcff byte"), audio=st.sampled_from([None, True, False]))
def test_the_typed_turn_template_gives_the_encoders_bytes(text: str, audio: bool | None) -> None:
    """``user.message`` is encoded from a template; byte for byte what the model encoder
    gives (or the same ProtocolError, e.g. for a lone surrogate)."""
    message = UserMessage(text=text, audio=audio)
    try:
        expected: bytes | str = protocol._dump(message)
    except ProtocolError as exc:
        expected = str(exc)
    try:
        got: bytes | str = protocol.encode_client_event(message)
    except ProtocolError as exc:
        got = str(exc)
    assert got == expected


def test_the_typed_turn_template_leaves_extra_fields_to_the_encoder() -> None:
    message = UserMessage.model_validate({"type": "user.message", "text": "hi", "lang": "en"})
    assert protocol.encode_client_event(message) == (
        b'{"type":"user.message","text":"hi","lang":"en"}'
    )
    assert protocol._encode_user_message(UserMessage(text='a\u00e9\u2028\U0001f41f\\"')) == (
        protocol._dump(UserMessage(text='a\u00e9\u2028\U0001f41f\\"'))
    )
