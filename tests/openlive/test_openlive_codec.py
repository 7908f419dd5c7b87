"""OpenLive's wire protocol (fishtalk.core.openlive): every message both ways, and garbage.

Each server example is a JSON object as the repository's schema defines it; it must parse
to the right model and encode back to the same object. Each client message must encode to
the object the schema expects and parse back to an equal model. Anything else a peer can
send is either a catch-all message (unknown types and fields) or OpenLiveProtocolError.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fishtalk.core.openlive as ol
from fishtalk.core.errors import FishtalkError, OpenLiveProtocolError

SERVER_EXAMPLES: list[tuple[dict[str, Any], type[object]]] = [
    ({"t": "sse", "event": {"type": "text_delta", "text": "Hello"}}, ol.TextDelta),
    ({"t": "sse", "event": {"type": "reasoning_delta", "text": "hmm"}}, ol.ReasoningDelta),
    ({"t": "sse", "event": {"type": "tool_start", "id": "c1", "tool": "look"}}, ol.ToolStart),
    (
        {"t": "sse", "event": {"type": "tool_start", "id": "c1", "tool": "web", "summary": "s"}},
        ol.ToolStart,
    ),
    ({"t": "sse", "event": {"type": "tool_done", "id": "c1"}}, ol.ToolDone),
    ({"t": "sse", "event": {"type": "tool_done", "id": "c1", "detail": "3 hits"}}, ol.ToolDone),
    (
        {
            "t": "sse",
            "event": {
                "type": "todos",
                "items": [{"text": "a", "done": True}, {"text": "b", "done": False}],
            },
        },
        ol.Todos,
    ),
    ({"t": "sse", "event": {"type": "todos", "items": []}}, ol.Todos),
    (
        {
            "t": "sse",
            "event": {"type": "usage", "contextTokens": 1200, "outputTokens": 34, "costUsd": 0.5},
        },
        ol.Usage,
    ),
    ({"t": "sse", "event": {"type": "status", "text": "ready"}}, ol.Status),
    ({"t": "sse", "event": {"type": "status", "text": None}}, ol.Status),
    ({"t": "sse", "event": {"type": "done"}}, ol.Done),
    ({"t": "sse", "event": {"type": "error", "message": "model down"}}, ol.SseError),
    ({"t": "need_frame", "reqId": "f1"}, ol.NeedFrame),
    ({"t": "tool_bridge", "reqId": "b1", "op": "clipboard_read"}, ol.ToolBridge),
    ({"t": "tool_bridge", "reqId": "b2", "op": "clipboard_write", "arg": "x"}, ol.ToolBridge),
    ({"t": "tool_bridge", "reqId": "b3", "op": "open_url", "arg": "https://a"}, ol.ToolBridge),
    ({"t": "tool_bridge", "reqId": "b4", "op": "teleport", "arg": "moon"}, ol.ToolBridge),
    (
        {
            "t": "permission",
            "reqId": "p1",
            "question": "Run `ls`?",
            "options": [
                {"id": "y", "label": "Allow", "kind": "allow_once"},
                {"id": "n", "label": "Deny", "kind": "reject_once"},
                {"id": "m", "label": "Maybe"},
            ],
            "expiresAt": 1767225600000,
            "toolCallId": "c9",
        },
        ol.Permission,
    ),
    ({"t": "permission", "reqId": "p2", "question": "?", "options": []}, ol.Permission),
    ({"t": "permission_resolved", "reqId": "p1"}, ol.PermissionResolved),
    ({"t": "error", "message": "no such chat"}, ol.ErrorMessage),
]


def _sent(message: object) -> dict[str, Any]:
    return json.loads(ol.encode_message(message))  # type: ignore[arg-type]


@pytest.mark.parametrize(("obj", "model"), SERVER_EXAMPLES, ids=lambda v: str(v)[:60])
def test_every_server_message_parses_and_encodes_back(
    obj: dict[str, Any], model: type[object]
) -> None:
    message = ol.parse_server_frame(json.dumps(obj))
    got = message.event if isinstance(message, ol.SseMessage) else message
    assert type(got) is model
    assert _sent(message) == obj
    assert not message.extra_fields  # type: ignore[union-attr]
    # bytes parse the same as text
    assert ol.parse_server_frame(json.dumps(obj).encode()) == message


def test_fields_come_out_typed_and_snake_case() -> None:
    usage = ol.parse_server_frame(json.dumps(SERVER_EXAMPLES[8][0]))
    assert isinstance(usage, ol.SseMessage)
    assert isinstance(usage.event, ol.Usage)
    usage = usage.event
    assert (usage.context_tokens, usage.output_tokens, usage.cost_usd) == (1200, 34, 0.5)
    ask = ol.parse_server_frame(json.dumps(SERVER_EXAMPLES[18][0]))
    assert isinstance(ask, ol.Permission)
    assert ask.req_id == "p1"
    assert ask.expires_at == 1767225600000
    assert ask.tool_call_id == "c9"
    assert hash(ask) == hash(ol.parse_server_frame(json.dumps(SERVER_EXAMPLES[18][0])))
    assert [(o.id, o.kind) for o in ask.options] == [
        ("y", "allow_once"),
        ("n", "reject_once"),
        ("m", None),
    ]
    bridge = ol.parse_server_frame('{"t":"tool_bridge","reqId":"b","op":"teleport"}')
    assert isinstance(bridge, ol.ToolBridge)
    assert bridge.op == "teleport"
    assert bridge.op not in ol.TOOL_BRIDGE_OPS
    assert bridge.arg is None


CLIENT_EXAMPLES: list[tuple[object, dict[str, Any]]] = [
    (ol.UserText(text="hi there"), {"t": "user_text", "text": "hi there"}),
    (
        ol.UserText(
            text="what is this?",
            frames=[ol.FrameAttachment(data="/9j/", mime="image/jpeg", source="screen")],
        ),
        {
            "t": "user_text",
            "text": "what is this?",
            "frames": [{"data": "/9j/", "mime": "image/jpeg", "source": "screen"}],
        },
    ),
    (ol.Cancel(), {"t": "cancel"}),
    (ol.Cancel(spoken="Well, the first"), {"t": "cancel", "spoken": "Well, the first"}),
    (ol.Cancel(spoken=""), {"t": "cancel", "spoken": ""}),
    (ol.FrameResponse(req_id="f1"), {"t": "frame_response", "reqId": "f1"}),
    (
        ol.FrameResponse(req_id="f1", failed=True),
        {"t": "frame_response", "reqId": "f1", "failed": True},
    ),
    (
        ol.PermissionResponse(req_id="p1", option_id="y"),
        {"t": "permission_response", "reqId": "p1", "optionId": "y"},
    ),
    (
        ol.ToolBridgeResult(req_id="b1", output="clip"),
        {"t": "tool_bridge_result", "reqId": "b1", "output": "clip"},
    ),
    (ol.SessionConfig(), {"t": "session_config"}),
    (
        ol.SessionConfig(study_goal="French verbs", interrupt_level="low"),
        {"t": "session_config", "studyGoal": "French verbs", "interruptLevel": "low"},
    ),
    (ol.Observe(), {"t": "observe"}),
    (
        ol.Observe(frames=[ol.FrameAttachment(data="QQ==", mime="image/png", source="camera")]),
        {"t": "observe", "frames": [{"data": "QQ==", "mime": "image/png", "source": "camera"}]},
    ),
    (ol.Control(action="end"), {"t": "control", "action": "end"}),
]


@pytest.mark.parametrize(("message", "obj"), CLIENT_EXAMPLES, ids=lambda v: str(v)[:50])
def test_every_client_message_encodes_and_parses_back(message: object, obj: dict[str, Any]) -> None:
    text = ol.encode_message(message)  # type: ignore[arg-type]
    assert json.loads(text) == obj
    assert ol.parse_client_frame(text) == message


def test_the_tables_cover_every_model() -> None:
    assert {type(m) for m, _ in CLIENT_EXAMPLES} == set(ol.CLIENT_MESSAGE_TYPES.values())
    seen = {type(ol.parse_server_frame(json.dumps(o))) for o, _ in SERVER_EXAMPLES}
    assert seen == set(ol.SERVER_MESSAGE_TYPES.values())
    assert {m for _, m in SERVER_EXAMPLES} >= set(ol.SSE_EVENT_TYPES.values())


def test_the_note_names_every_tag_it_handles() -> None:
    note = ol.__doc__ or ""
    tags = [
        *ol.SERVER_MESSAGE_TYPES,
        *ol.SSE_EVENT_TYPES,
        *ol.TOLERATED_SERVER_TAGS,
        *ol.CLIENT_MESSAGE_TYPES,
    ]
    assert [t for t in tags if f"``{t}``" not in note] == []


# --- tolerated: unknown types and fields ---------------------------------------------


def test_unknown_fields_are_kept_and_reported() -> None:
    frame = {
        "t": "sse",
        "event": {"type": "text_delta", "text": "x", "lang": "en"},
        "seq": 7,
    }
    message = ol.parse_server_frame(json.dumps(frame))
    assert isinstance(message, ol.SseMessage)
    assert message.extra_fields == {"seq": 7}
    assert message.event.extra_fields == {"lang": "en"}  # type: ignore[union-attr]
    assert _sent(message) == frame
    option = {"id": "y", "label": "Y", "colour": None}
    ask = ol.parse_server_frame(
        json.dumps({"t": "permission", "reqId": "p", "question": "q", "options": [option]})
    )
    assert isinstance(ask, ol.Permission)
    assert ask.options[0].extra_fields == {"colour": None}
    assert _sent(ask)["options"] == [option]  # a null extra is kept, not dropped


def test_unknown_server_types_are_reported_not_errors() -> None:
    obj = {"t": "hologram", "x": [1, 2]}
    message = ol.parse_server_frame(json.dumps(obj))
    assert isinstance(message, ol.UnknownServerMessage)
    assert (message.tag, message.raw) == ("hologram", obj)
    assert _sent(message) == obj
    event = {"type": "canvas", "html": "<b>"}
    wrapped = ol.parse_server_frame(json.dumps({"t": "sse", "event": event}))
    assert isinstance(wrapped, ol.SseMessage)
    assert isinstance(wrapped.event, ol.UnknownSseEvent)
    assert (wrapped.event.tag, wrapped.event.raw) == ("canvas", event)
    assert _sent(wrapped) == {"t": "sse", "event": event}


@pytest.mark.parametrize("tag", sorted(ol.TOLERATED_SERVER_TAGS))
def test_repository_only_messages_are_tolerated(tag: str) -> None:
    # Shapes are not checked: a tolerated message is received, never validated.
    obj = {"t": tag, "anything": {"goes": True}}
    message = ol.parse_server_frame(json.dumps(obj))
    assert isinstance(message, ol.ToleratedServerMessage)
    assert (message.tag, message.raw) == (tag, obj)


def test_unknown_client_types_are_reported_to_the_sim() -> None:
    message = ol.parse_client_frame('{"t":"flow_new"}')
    assert isinstance(message, ol.UnknownClientMessage)
    assert message.tag == "flow_new"


# --- garbage ----------------------------------------------------------------------------

GARBAGE: list[tuple[str | bytes, str]] = [
    ("", "not_json"),
    ("{", "not_json"),
    ("hello", "not_json"),
    (b"\xff\xfe{}", "not_json"),
    ('{"t":"error","message":NaN}', "not_json"),
    (
        '{"t":"sse","event":{"type":"usage","contextTokens":1e999,"outputTokens":1,"costUsd":1}}',
        "not_json",
    ),
    ('{"t":"error","message":"\\ud800"}', "not_json"),
    ("[" * 100_000 + "]" * 100_000, "not_json"),
    ("[]", "not_object"),
    ('"sse"', "not_object"),
    ("42", "not_object"),
    ("null", "not_object"),
    ("{}", "no_tag"),
    ('{"t":null}', "no_tag"),
    ('{"t":2}', "no_tag"),
    ('{"type":"text_delta","text":"x"}', "no_tag"),
    ('{"t":"sse"}', "bad_shape"),
    ('{"t":"sse","event":"text_delta"}', "bad_shape"),
    ('{"t":"sse","event":{"text":"x"}}', "bad_shape"),
    ('{"t":"sse","event":{"type":5}}', "bad_shape"),
    ('{"t":"sse","event":{"type":"text_delta"}}', "bad_shape"),
    ('{"t":"sse","event":{"type":"text_delta","text":5}}', "bad_shape"),
    ('{"t":"sse","event":{"type":"status"}}', "bad_shape"),
    ('{"t":"sse","event":{"type":"todos","items":{}}}', "bad_shape"),
    ('{"t":"sse","event":{"type":"todos","items":[{"text":"a","done":1}]}}', "bad_shape"),
    (
        '{"t":"sse","event":{"type":"usage","contextTokens":"1","outputTokens":1,"costUsd":1}}',
        "bad_shape",
    ),
    (
        '{"t":"sse","event":{"type":"usage","contextTokens":1,"outputTokens":1,"costUsd":true}}',
        "bad_shape",
    ),
    ('{"t":"need_frame"}', "bad_shape"),
    ('{"t":"need_frame","reqId":7}', "bad_shape"),
    ('{"t":"tool_bridge","reqId":"b"}', "bad_shape"),
    ('{"t":"tool_bridge","reqId":"b","op":"open_url","arg":["x"]}', "bad_shape"),
    ('{"t":"permission","reqId":"p","question":"q"}', "bad_shape"),
    ('{"t":"permission","reqId":"p","question":"q","options":[{"id":"y"}]}', "bad_shape"),
    ('{"t":"permission","reqId":"p","question":"q","options":[],"expiresAt":"soon"}', "bad_shape"),
    ('{"t":"permission_resolved"}', "bad_shape"),
    ('{"t":"error"}', "bad_shape"),
    ('{"t":"sse","event":{"type":"todos","items":' + "[" * 900 + "]" * 900 + "}}", "bad_shape"),
]


@pytest.mark.parametrize(("frame", "kind"), GARBAGE, ids=lambda v: repr(v)[:50])
def test_garbage_is_a_typed_error_of_one_line(frame: str | bytes, kind: str) -> None:
    with pytest.raises(OpenLiveProtocolError) as caught:
        ol.parse_server_frame(frame)
    assert caught.value.kind == kind
    assert isinstance(caught.value, FishtalkError)
    text = str(caught.value)
    assert text.startswith("bad OpenLive frame: ")
    assert "\n" not in text
    assert len(text) < 400


def test_wrong_client_shapes_are_typed_errors_for_the_sim() -> None:
    for frame in ('{"t":"user_text"}', '{"t":"cancel","spoken":1}', '{"t":"control","action":"x"}'):
        with pytest.raises(OpenLiveProtocolError) as caught:
            ol.parse_client_frame(frame)
        assert caught.value.kind == "bad_shape"
    frames = '{"t":"user_text","text":"x","frames":[{"data":"","mime":"m","source":"tv"}]}'
    with pytest.raises(OpenLiveProtocolError):
        ol.parse_client_frame(frames)


def test_the_frame_size_bound_is_exact_in_utf8_bytes() -> None:
    frame = '{"t":"error","message":"' + "x" * 10 + '"}'
    limit = len(frame)
    assert isinstance(ol.parse_server_frame(frame, max_bytes=limit), ol.ErrorMessage)
    with pytest.raises(OpenLiveProtocolError) as caught:
        ol.parse_server_frame(frame, max_bytes=limit - 1)
    assert caught.value.kind == "too_large"
    wide = '{"t":"error","message":"' + "é" * 10 + '"}'  # 2 bytes a character
    with pytest.raises(OpenLiveProtocolError):
        ol.parse_server_frame(wide, max_bytes=len(wide))
    assert ol.parse_server_frame(wide, max_bytes=len(wide.encode()))
    with pytest.raises(OpenLiveProtocolError):
        ol.parse_server_frame(wide.encode(), max_bytes=len(wide))


def test_a_50_megabyte_frame_is_refused_before_parsing() -> None:
    huge = '{"t":"sse","event":{"type":"text_delta","text":"' + "a" * (50 << 20) + '"}}'
    for frame in (huge, huge.encode()):
        with pytest.raises(OpenLiveProtocolError) as caught:
            ol.parse_server_frame(frame)
        assert caught.value.kind == "too_large"
        assert str(ol.MAX_TEXT_FRAME_BYTES) in str(caught.value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
tags = st.sampled_from([*ol.SERVER_MESSAGE_TYPES, *ol.TOLERATED_SERVER_TAGS, "zz"])
event_types = st.sampled_from([*ol.SSE_EVENT_TYPES, "zz"])


@settings(max_examples=300, deadline=None)
@given(
    tag=tags,
    event_type=event_types,
    fields=st.dictionaries(st.text(max_size=12), json_values, max_size=5),
)
def test_any_object_parses_or_fails_typed(
    tag: str, event_type: str, fields: dict[str, Any]
) -> None:
    for obj in ({**fields, "t": tag}, {"t": "sse", "event": {**fields, "type": event_type}}):
        try:
            message = ol.parse_server_frame(json.dumps(obj))
        except OpenLiveProtocolError:
            continue
        assert _sent(message) == json.loads(json.dumps(obj))


@settings(max_examples=300, deadline=None)
@given(st.text() | st.binary())
def test_any_text_parses_or_fails_typed(frame: str | bytes) -> None:
    try:
        ol.parse_server_frame(frame)
        ol.parse_client_frame(frame)
    except OpenLiveProtocolError:
        pass


def test_what_json_cannot_carry_is_not_sent() -> None:
    with pytest.raises(OpenLiveProtocolError) as caught:
        ol.encode_message(ol.UserText(text="lone \ud800"))
    assert caught.value.kind == "unencodable"


# --- binary frames ----------------------------------------------------------------------


def test_a_jpeg_travels_behind_its_tag() -> None:
    jpeg = b"\xff\xd8\xff\xe0jpeg\xff\xd9"
    frame = ol.encode_frame_in(jpeg)
    assert frame[0] == ol.TAG_FRAME_IN == 0x02
    assert ol.parse_binary_frame(frame) == jpeg


@pytest.mark.parametrize(
    ("frame", "kind"),
    [(b"", "bad_shape"), (b"\x01jpeg", "bad_shape"), (b"\x02" + b"x" * 11, "too_large")],
)
def test_bad_binary_frames_are_typed_errors(frame: bytes, kind: str) -> None:
    with pytest.raises(OpenLiveProtocolError) as caught:
        ol.parse_binary_frame(frame, max_bytes=10)
    assert caught.value.kind == kind
