"""Latency in the journal: the marks and the turn/interrupt latency records, and that
export, replay and diff read them (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fishtalk.core import conversation as conv
from fishtalk.core.protocol import ATTR_AGENT_STATE
from fishtalk.engine import observe
from fishtalk.engine.journal.reader import read_journal, summarize_journal
from fishtalk.engine.journal.writer import JournalWriter
from fishtalk.workbench.journal.compare import diff, format_diff
from fishtalk.workbench.journal.export import render, to_data
from fishtalk.workbench.journal.replay import inputs, states

ME = "user-1"
AGENT = "agent"
T0 = 100.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def agent_state(value: str, at: float) -> conv.AttributesChanged:
    return conv.AttributesChanged(AGENT, {ATTR_AGENT_STATE: value}, at)


def script(*, greeting: bool = False) -> list[tuple[float, conv.Input]]:
    """(when the session fed it, the input): the end-of-speech mark is fed late, stamped
    with the time speech really ended. ``greeting``: the agent speaks first."""
    t = T0
    hello: list[conv.Input] = [
        conv.TranscriptStreamOpened("g", "seg-g", AGENT, False, t + 0.3),
        conv.TranscriptStreamChunk("g", "seg-g", "Welcome.", t + 0.4),
        conv.TranscriptStreamClosed("g", "seg-g", t + 0.5),
    ]
    items: list[conv.Input] = [
        conv.Connected(ME, t + 0.1),
        agent_state("listening", t + 0.2),
        *(hello if greeting else []),
        conv.SendText("hello", t + 1.0),
        conv.LatencyMark("typed_sent", t + 1.01),
        agent_state("thinking", t + 1.2),
        conv.LatencyMark("rtt", t + 1.25, 0.04),
        conv.LatencyMark("audio_received", t + 1.5),
        conv.LatencyMark("audio_heard", t + 1.52, 0.03),
        conv.TranscriptStreamOpened("a1", "seg-a1", AGENT, False, t + 1.5),
        conv.TranscriptStreamChunk("a1", "seg-a1", "Hi there.", t + 1.6),
        conv.TranscriptStreamClosed("a1", "seg-a1", t + 2.0),
        agent_state("speaking", t + 2.4),
        conv.Interrupt(t + 2.5),
        conv.LatencyMark("interrupt_flushed", t + 2.55),
        conv.LatencyMark("interrupt_wire_stopped", t + 2.7),
        conv.LatencyMark("speech_ended", t + 3.0),
    ]
    fed = [(inp.at, inp) for inp in items]
    # The detector's mark reaches the session 0.4 s after the speech it marks ended.
    fed[-1] = (t + 3.4, items[-1])
    return fed


def write_journal(path: Path, *, greeting: bool = False) -> conv.State:
    clock = Clock()
    writer = JournalWriter(path, agent_id="agent-1", clock=clock, wall=lambda: 1_700_000_000.0)
    state = conv.initial_state(spoken=True)
    for fed_at, inp in script(greeting=greeting):
        clock.now = fed_at
        writer.observe(inp)
        previous = state
        state, _ = conv.reduce(state, inp)
        writer.observe(observe.Reduced(state, fed_at, conv.changes(previous, state)))
    clock.now = T0 + 4.0
    previous = state
    state, _ = conv.reduce(state, conv.Hangup(T0 + 4.0))
    writer.observe(conv.Hangup(T0 + 4.0))
    writer.observe(observe.Reduced(state, T0 + 4.0, conv.changes(previous, state)))
    writer.close()
    return state


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_journal_records_marks_and_latency_events(tmp_path: Path) -> None:
    path = tmp_path / "lat.jsonl"
    final = write_journal(path)
    recs = records(path)
    marks = [r for r in recs if r["type"] == "input" and r["kind"] == "latency_mark"]
    assert [m["subkind"] for m in marks] == [
        "typed_sent",
        "rtt",
        "audio_received",
        "audio_heard",
        "interrupt_flushed",
        "interrupt_wire_stopped",
        "speech_ended",
    ]
    heard = next(m for m in marks if m["subkind"] == "audio_heard")
    assert heard["value"] == 0.03
    late = marks[-1]
    assert late["t"] == 3.4  # when it was fed...
    assert late["at"] == 3.0  # ...and when speech really ended
    turns = [r for r in recs if r["type"] == "change" and r["kind"] == "turn_latency"]
    assert [r["waterfall"]["turn"] for r in turns] == [1, 2]
    first = turns[0]["waterfall"]
    assert first["heard_ms"] == 540.0
    assert first["client_share_ms"] == 20.0
    assert first["rtt_ms"] == 40.0
    assert first["segment_id"] == "seg-a1"
    assert turns[1]["waterfall"]["incomplete"] == "ended"
    [interrupt] = [r for r in recs if r["type"] == "change" and r["kind"] == "interrupt_latency"]
    assert interrupt["interrupt"]["local_flush_ms"] == 50.0
    assert interrupt["interrupt"]["wire_stop_ms"] == 200.0
    assert len(final.latency.turns) == 2


def test_replay_rebuilds_the_same_waterfalls(tmp_path: Path) -> None:
    path = tmp_path / "lat.jsonl"
    final = write_journal(path)
    journal = read_journal(path)
    rebuilt = [inp for _, inp in inputs(journal) if isinstance(inp, conv.LatencyMark)]
    assert [m.kind for m in rebuilt][-1] == "speech_ended"
    assert abs(rebuilt[-1].at - 3.0) < 1e-9  # its own time, not when it was fed
    *_, (_, state, _) = states(journal, spoken=True)
    assert [w.to_dict()["heard_ms"] for w in state.latency.turns] == [
        w.to_dict()["heard_ms"] for w in final.latency.turns
    ]
    assert [w.incomplete for w in state.latency.turns] == [None, "ended"]
    assert [i.to_dict()["wire_stop_ms"] for i in state.latency.interrupts] == [200.0]


def test_export_and_diff_carry_the_latency(tmp_path: Path) -> None:
    path = tmp_path / "lat.jsonl"
    write_journal(path)
    summary = summarize_journal(read_journal(path))
    data = to_data(summary)
    assert [w["turn"] for w in data["latency"]["turns"]] == [1, 2]
    assert data["latency"]["interrupts"][0]["local_flush_ms"] == 50.0
    assert data["latency"]["summary"] == {
        "turns": 2,
        "measured": 1,
        "p50_ms": 540.0,
        "p95_ms": 540.0,
        "worst_ms": 540.0,
        "worst_turn": 1,
    }
    assert json.loads(render(summary, "json"))["latency"] == data["latency"]
    txt = render(summary, "txt")
    [line] = [line for line in txt.splitlines() if "Agent: Hi there." in line]
    assert line.endswith("(first text 0.59 s, heard 0.54 s)")
    [agent] = [t for t in summary.turns if t.speaker == "agent"]
    assert agent.heard is not None
    assert abs(agent.heard - 0.54) < 1e-9
    result = diff(summary, summary)
    assert result["same"]
    assert "~" not in format_diff(result)


def test_export_counts_turns_as_the_session_does(tmp_path: Path) -> None:
    """The greeting answers no user turn: the export's summary leaves it out and names the
    worst turn by the user's count, exactly as the session's own summary does."""
    path = tmp_path / "lat.jsonl"
    final = write_journal(path, greeting=True)
    data = to_data(summarize_journal(read_journal(path)))
    assert [(w["kind"], w["turn"]) for w in data["latency"]["turns"]] == [
        ("unprompted", 0),
        ("typed", 1),
        ("spoken", 2),
    ]
    assert data["latency"]["summary"] == conv.summarize(final.latency.turns).to_dict()
    assert data["latency"]["summary"]["turns"] == 2
    assert data["latency"]["summary"]["worst_turn"] == 1
