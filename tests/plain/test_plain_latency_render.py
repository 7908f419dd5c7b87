"""Latency in line mode, rendered from reducer states (pure), and the ``--metrics-json``
file (no network): the notes' wording, that they appear only with ``--latency``, and the
file's mode and content."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import pytest

from fishtalk.core import conversation as conv
from fishtalk.core import protocol as p
from fishtalk.engine.metrics import MetricsFile
from fishtalk.plain.render import PlainRenderer


def _script(latency: bool) -> tuple[str, conv.State]:
    out = io.StringIO()
    renderer = PlainRenderer(out, stream_agent=False, latency=latency)
    state = conv.initial_state(spoken=True)
    inputs: list[conv.Input] = [
        conv.Connected("user-1", 1.0),
        conv.ParticipantJoined("agent", 1.1, attributes={p.ATTR_AGENT_STATE: "listening"}),
        conv.SendText("hello", 2.0),
        conv.AttributesChanged("agent", {p.ATTR_AGENT_STATE: "thinking"}, 2.1),
        conv.LatencyMark("rtt", 2.2, 0.05),
        conv.LatencyMark("audio_received", 2.6),
        conv.LatencyMark("audio_heard", 2.61, 0.02),
        conv.TranscriptStreamOpened("s1", "a1", "agent", False, 2.6),
        conv.TranscriptStreamChunk("s1", "a1", "Hi there.", 2.7),
        conv.TranscriptStreamClosed("s1", "a1", 3.0),
        conv.SendText("again", 4.0),
        conv.TranscriptStreamOpened("s2", "a2", "agent", False, 4.2),
        conv.TranscriptStreamChunk("s2", "a2", "Once upon", 4.3),
        conv.Interrupt(4.5),
        conv.LatencyMark("interrupt_flushed", 4.56),
        conv.LatencyMark("interrupt_wire_stopped", 4.7),
    ]
    for inp in inputs:
        previous = state
        state, _ = conv.reduce(state, inp)
        renderer.render(state, conv.changes(previous, state))
    return out.getvalue(), state


def test_latency_notes_follow_each_agent_turn() -> None:
    out, _ = _script(latency=True)
    lines = out.splitlines()
    first = lines.index("agent: Hi there.")
    assert lines[first + 1] == (
        "* latency (your turn 1): heard 0.63 s (first text 0.70 s, client 10 ms, rtt 50 ms)"
    )
    assert "* latency (your turn 2): not measured — interrupted (first text 0.30 s)" in lines
    assert lines[-1] == "* interrupt: speaker silent after 60 ms, wire stopped after 200 ms"


def test_no_latency_notes_without_the_flag() -> None:
    out, _ = _script(latency=False)
    assert "latency" not in out
    assert "interrupt:" not in out


def test_metrics_file_has_every_turn_and_mode_0600(tmp_path: Path) -> None:
    _, state = _script(latency=False)
    state, _ = conv.reduce(state, conv.Hangup(5.0))
    path = tmp_path / "m.json"
    metrics = MetricsFile.open(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    metrics.write(state, journal_origin=0.5)  # the script's clock: a journal begun at 0.5 s
    metrics.write(state)  # once only
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema_version"] == conv.SCHEMA_VERSION
    assert data["end_reason"] == "user_hangup"
    assert [(t["turn"], t["heard_ms"], t["incomplete"]) for t in data["turns"]] == [
        (1, 630.0, None),
        (2, None, "interrupted"),
    ]
    assert data["interrupts"] == [
        {"pressed_at": 4.0, "local_flush_ms": 60.0, "wire_stop_ms": 200.0}
    ]
    assert data["summary"]["p50_ms"] == 630.0
    assert data["summary"]["worst_turn"] == 1


def test_an_existing_metrics_file_is_replaced_and_made_private(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text("old content that is longer than the new one" * 100, encoding="utf-8")
    path.chmod(0o644)
    MetricsFile.open(path).write(conv.initial_state())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text(encoding="utf-8"))["turns"] == []


@pytest.mark.parametrize("where", ["missing/m.json", "."])
def test_a_bad_metrics_path_raises_at_once(tmp_path: Path, where: str) -> None:
    with pytest.raises(OSError, match=r"No such file|Is a directory"):
        MetricsFile.open(tmp_path / where)
