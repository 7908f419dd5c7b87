"""Line mode's ``--latency`` notes and ``--metrics-json`` follow the one rule of who
answers whom (issue 24), on reducer states (pure, deterministic): the greeting finishes
after the first typed turn was sent, and the next turn arrives while a finished reply's
audio was still being paced."""

from __future__ import annotations

import io
import json
from pathlib import Path

from fishtalk.core import conversation as conv
from fishtalk.core import protocol as p
from fishtalk.engine.metrics import MetricsFile
from fishtalk.plain.render import PlainRenderer

_START: list[conv.Input] = [
    conv.Connected("user-1", 1.0),
    conv.ParticipantJoined("agent", 1.1, attributes={p.ATTR_AGENT_STATE: "listening"}),
    # The greeting starts, the user types while it is spoken, then it finishes.
    conv.AttributesChanged("agent", {p.ATTR_AGENT_STATE: "speaking"}, 1.2),
    conv.TranscriptStreamOpened("g", "greet", "agent", False, 1.3),
    conv.TranscriptStreamChunk("g", "greet", "Hello, I am the agent.", 1.4),
    conv.SendText("What can you do?", 2.0),
    conv.TranscriptStreamClosed("g", "greet", 4.0),
    conv.AttributesChanged("agent", {p.ATTR_AGENT_STATE: "thinking"}, 4.1),
    conv.TranscriptStreamOpened("r1", "reply1", "agent", False, 4.5),
    conv.TranscriptStreamChunk("r1", "reply1", "You said: What can you do?", 4.6),
]


def _run(inputs: list[conv.Input]) -> tuple[list[str], conv.State]:
    out = io.StringIO()
    renderer = PlainRenderer(out, stream_agent=False, latency=True)
    state = conv.initial_state(spoken=True)
    for inp in inputs:
        previous = state
        state, _ = conv.reduce(state, inp)
        renderer.render(state, conv.changes(previous, state))
    return out.getvalue().splitlines(), state


def _turn_after_a_finished_reply() -> list[conv.Input]:
    # The next turn is typed while reply 1 is still open (its audio being paced, none
    # of it reaching this client); reply 1 then finishes uncut.
    return [
        *_START,
        conv.SendText("Thanks.", 5.0),
        conv.TranscriptStreamClosed("r1", "reply1", 5.5),
        conv.TranscriptStreamOpened("r2", "reply2", "agent", False, 6.0),
        conv.TranscriptStreamChunk("r2", "reply2", "You said: Thanks.", 6.1),
        conv.TranscriptStreamClosed("r2", "reply2", 6.5),
        conv.AttributesChanged("agent", {p.ATTR_AGENT_STATE: "listening"}, 6.6),
        conv.Hangup(7.0),
    ]


def test_the_note_is_under_the_reply_not_the_greeting_that_ended_after_the_send() -> None:
    lines, _ = _run(_turn_after_a_finished_reply())
    greeting = lines.index("agent: Hello, I am the agent.")
    reply = lines.index("agent: You said: What can you do?")
    assert not lines[greeting + 1].startswith("* latency"), lines
    assert lines[reply + 1].startswith("* latency (your turn 1): "), lines
    assert "(first text 2.60 s)" in lines[reply + 1]  # from the send to the reply's text
    notes = [line for line in lines if line.startswith("* latency (")]
    assert len(notes) == 2, lines  # the two replies; none for the greeting
    assert lines[lines.index("agent: You said: Thanks.") + 1].startswith(
        "* latency (your turn 2): "
    )


def test_a_finished_reply_is_not_called_interrupted() -> None:
    lines, _ = _run(_turn_after_a_finished_reply())
    note = lines[lines.index("agent: You said: What can you do?") + 1]
    assert "interrupted" not in note, lines
    assert note == "* latency (your turn 1): not measured — no audio (first text 2.60 s)"


def test_metrics_json_binds_turn_1_to_the_reply(tmp_path: Path) -> None:
    _, state = _run(_turn_after_a_finished_reply())
    path = tmp_path / "m.json"
    MetricsFile.open(path).write(state)
    turns = {t["turn"]: t for t in json.loads(path.read_text())["turns"] if t["kind"] == "typed"}
    reply1 = next(s for s in state.transcript if s.text.startswith("You said: What"))
    greeting = next(s for s in state.transcript if s.text.startswith("Hello"))
    assert turns[1]["segment_id"] == reply1.segment_id != greeting.segment_id
    assert turns[1]["incomplete"] == "no audio"
    assert turns[1]["first_text_ms"] == 2600.0
