"""A replayed journal ends with the notes line mode printed after the call (the worst
audio problem, the latency summary), from the reports rebuilt out of the journal: a
reply heard 5 s late was named live and not on replay (seen in CI)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from fishtalk.core import conversation as conv
from fishtalk.engine import observe
from fishtalk.engine.journal.reader import read_journal, summarize_journal
from fishtalk.engine.journal.writer import JournalWriter
from fishtalk.plain.render import closing_notes
from fishtalk.plain.replay import play_plain
from fishtalk.workbench.journal.export import FORMATS, render
from fishtalk.workbench.journal.replay import states

T0 = 100.0

LATE = conv.ReplyAudioReport(
    reply=1,
    turn=1,
    segment_ids=("seg-a1",),
    duration=1.2,
    audible=True,
    first_audio_at=T0 + 7.0,
    first_text_at=T0 + 1.71,
    leading_from_text=5.29,
    gaps=((0.4, 0.35),),
)


def _write(path: Path) -> conv.State:
    now = [T0]
    writer = JournalWriter(path, agent_id="agent-1", clock=lambda: now[0], wall=lambda: 1.7e9)
    state = conv.initial_state(spoken=True)
    script: list[conv.Input] = [
        conv.Connected("user-1", T0 + 0.1),
        conv.SendText("hello", T0 + 1.0),
        conv.TranscriptStreamOpened("a1", "seg-a1", "agent", False, T0 + 1.7),
        conv.TranscriptStreamChunk("a1", "seg-a1", "Hi there.", T0 + 1.71),
        conv.TranscriptStreamClosed("a1", "seg-a1", T0 + 2.0),
        conv.ReplyAudioMeasured(LATE, T0 + 8.5),
        conv.Hangup(T0 + 9.0),
    ]
    for inp in script:
        now[0] = inp.at
        writer.observe(inp)
        previous = state
        state, _ = conv.reduce(state, inp)
        writer.observe(observe.Reduced(state, inp.at, conv.changes(previous, state)))
    writer.close()
    return state


def test_replay_prints_the_closing_notes_line_mode_printed(tmp_path: Path) -> None:
    path = tmp_path / "late.jsonl"
    live = _write(path)
    notes = closing_notes(live)
    assert notes == [
        "* audio: worst: reply 1: leading silence of 5.29 s after its first text "
        "(max_leading_silence 1.5)"
    ]
    journal = read_journal(path)
    *_, (_, replayed, _) = states(journal)
    assert replayed.reply_audio == live.reply_audio  # rebuilt as reports, not dicts
    out = io.StringIO()
    play_plain(journal, out, speed=0)
    assert out.getvalue().endswith(notes[0] + "\n")


def test_a_damaged_report_is_left_out_of_replay_and_exports(tmp_path: Path) -> None:
    """A reply-audio record of the wrong shape (an edited journal: a gap of three numbers)
    is one this version cannot read: replay and every export leave it out, no traceback."""
    path = tmp_path / "damaged.jsonl"
    _write(path)
    lines = []
    for line in path.read_text("utf-8").splitlines():
        record = json.loads(line)
        if "report" in record:
            record["report"]["gaps"] = [[0.4, 0.35, 9]]
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n", "utf-8")
    journal = read_journal(path)
    *_, (_, replayed, _) = states(journal)
    assert replayed.reply_audio == ()
    summary = summarize_journal(journal)
    for fmt in FORMATS:
        render(summary, fmt)
    assert "reply 1:" not in render(summary, "txt")
    out = io.StringIO()
    play_plain(journal, out, speed=0)
    assert "leading silence" not in out.getvalue()
