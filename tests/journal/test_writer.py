"""The journal writer: header, timing fields, privacy, drops, crash safety, retention."""

from __future__ import annotations

import asyncio
import contextlib
import json
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from fishtalk.core import conversation as conv
from fishtalk.core.events import KINDS
from fishtalk.core.protocol import ClientToolCall
from fishtalk.engine import observe
from fishtalk.engine.audio.base import AudioLevels
from fishtalk.engine.journal import JOURNAL_VERSION
from fishtalk.engine.journal.reader import change_events, read_journal
from fishtalk.engine.journal.writer import JournalWriter, Retention, journal_files, prune
from fishtalk.engine.tools.registry import ApprovalRequest
from fishtalk.engine.tools.runner import ToolOutcome

WAIT = 10.0


class Clock:
    """A settable monotonic clock."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_header_times_and_mode(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path, agent_id="agent-1", clock=clock, wall=lambda: 1_700_000_000.0)
    clock.now = 101.5
    writer.observe(conv.SendText(text="hi", at=101.5))
    clock.now = 102.0
    writer.observe(observe.PacketOut("client-event", b'{"type":"user.message","text":"hi"}', 102))
    writer.close()
    recs = read(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    head = recs[0]
    assert head["type"] == "header"
    assert head["agent_id"] == "agent-1"
    assert head["session_id"] is None
    assert head["version"] == JOURNAL_VERSION == 2
    assert head["schema_version"] == conv.SCHEMA_VERSION
    assert head["wall"] == 1_700_000_000.0
    assert recs[1] == {
        "type": "input",
        "t": 1.5,
        "wall": 1_700_000_001.5,
        "kind": "send_text",
        "text": "hi",
        "audio": None,
    }
    assert recs[2]["type"] == "packet_out"
    assert recs[2]["raw"] == '{"type":"user.message","text":"hi"}'
    assert recs[2]["t"] == 2.0
    assert recs[-1] == {"type": "closed", "t": 2.0, "wall": 1_700_000_002.0, "dropped": 0}


def test_states_become_typed_change_records(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path, agent_id=None)
    state = conv.initial_state(spoken=False)
    inputs = [
        conv.Connected(local_identity="me", at=1.0),
        conv.SendText(text="hello", at=2.0),
    ]
    for inp in inputs:
        previous = state
        state, _ = conv.reduce(state, inp)
        writer.observe(inp)
        writer.observe(observe.Reduced(state, inp.at, conv.changes(previous, state)))
    writer.close()
    changes = [r for r in read(path) if r["type"] == "change"]
    kinds = [r["kind"] for r in changes]
    assert "status_change" in kinds
    assert "segment_opened" in kinds
    opened = next(r for r in changes if r["kind"] == "segment_opened")
    assert opened["segment"]["text"] == "hello"


def test_change_records_carry_the_events_own_time_and_read_back(tmp_path: Path) -> None:
    """A change record's ``t`` is its event's ``at`` (not when the writer took it), and the
    records read back as the very events the session's states yield."""
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path, agent_id=None, clock=lambda: 0.5, wall=lambda: 1000.0)
    previous = state = conv.initial_state(spoken=False)
    expected: list[conv.Change] = []
    for inp in (conv.Connected(local_identity="me", at=1.0), conv.SendText("hi", at=2.25)):
        state, _ = conv.reduce(state, inp)
        writer.observe(observe.Reduced(state, inp.at, conv.changes(previous, state)))
        expected += conv.changes(previous, state, at=inp.at - 0.5)
        previous = state
    writer.close()
    records = [r for r in read(path) if r["type"] == "change"]
    assert [r["t"] for r in records] == [e.at for e in expected]
    assert {r["t"] for r in records} == {0.5, 1.75}
    assert all("at" not in r and r["kind"] in KINDS for r in records)
    assert change_events(read_journal(path)) == expected


def test_a_full_queue_drops_and_counts_without_blocking(tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def levels() -> AudioLevels:
        entered.set()
        release.wait(WAIT)
        return AudioLevels()

    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path, agent_id=None, levels=levels, queue_size=2)
    assert entered.wait(WAIT)  # the writer thread is stuck: nothing leaves the queue
    for i in range(5):
        writer.observe(conv.SendText(text=f"m{i}", at=float(i)))
    assert writer.dropped == 3
    release.set()
    writer.close()
    recs = read(path)
    assert [r["text"] for r in recs if r.get("kind") == "send_text"] == ["m0", "m1"]
    assert recs[-1]["type"] == "closed"
    assert recs[-1]["dropped"] == 3


def test_levels_are_recorded_while_they_move(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    seen = threading.Event()
    calls = 0

    def levels() -> AudioLevels:
        nonlocal calls
        calls += 1
        if calls >= 2:
            seen.set()
        return AudioLevels(mic_rms=0.25, agent_peak=0.5)

    writer = JournalWriter(path, agent_id=None, levels=levels)
    assert seen.wait(WAIT)
    writer.close()
    lv = [r for r in read(path) if r["type"] == "levels"]
    assert lv
    assert lv[0]["mic_rms"] == 0.25
    assert lv[0]["agent_peak"] == 0.5


def test_approval_answers_are_journaled_with_the_tool_run(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path, agent_id=None)

    async def yes(request: ApprovalRequest) -> bool:
        return True

    approve = writer.recording_approver(yes)
    assert asyncio.run(approve(ApprovalRequest("c1", "open_url", {"url": "x"}, "open x")))
    call = ClientToolCall(call_id="c1", tool_name="open_url", params={"url": "x"})
    outcome = ToolOutcome("c1", "open_url", "ok", result={"opened": True}, duration=0.25)
    writer.observe(observe.ToolRan("c1", "open_url", call.params, outcome, 5.0))
    writer.close()
    recs = read(path)
    (answer,) = [r for r in recs if r["type"] == "approval"]
    assert answer["answer"] == "approved"
    (run,) = [r for r in recs if r["type"] == "tool_run"]
    assert run["approval"] == "approved"
    assert run["params"] == {"url": "x"}
    assert run["result"] == {"opened": True}
    assert run["duration"] == 0.25


def test_malformed_packets_keep_a_bounded_preview(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path, agent_id=None)
    writer.observe(observe.PacketIn("agent-event", b"\xff" + b"x" * 5000, "agent", 1.0))
    writer.close()
    (rec,) = [r for r in read(path) if r["type"] == "packet_in"]
    assert rec["malformed"] is True
    assert rec["size"] == 5001
    assert len(rec["preview"]) <= 200
    assert "raw" not in rec


CRASH = """
import json, os, sys, time
from pathlib import Path
from fishtalk.core import conversation as conv
from fishtalk.core.events import KINDS
from fishtalk.engine.journal import JOURNAL_VERSION
from fishtalk.engine.journal.reader import change_events, read_journal
from fishtalk.engine.journal.writer import JournalWriter
path = Path(sys.argv[1])
writer = JournalWriter(path, agent_id="crash")
for i in range(50):
    writer.observe(conv.SendText(text=f"line {i}", at=float(i)))
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    if path.read_text().count("\\n") >= 51:
        break
    time.sleep(0.01)
os._exit(3)
"""


def test_a_crash_leaves_a_readable_journal(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    proc = subprocess.run([sys.executable, "-c", CRASH, str(path)], timeout=60, check=False)
    assert proc.returncode == 3
    recs = read(path)  # every line parses: nothing half-written
    assert recs[0]["type"] == "header"
    assert [r["text"] for r in recs[1:]] == [f"line {i}" for i in range(50)]


def test_prune_keeps_the_newest_sessions_and_bytes(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"2026010{i}-000000-aaaaaa.jsonl").write_text("x" * 100)
    (tmp_path / "notes.txt").write_text("not a journal")
    removed = prune(tmp_path, Retention(keep_sessions=4, keep_bytes=10_000))
    assert len(removed) == 2
    assert [p.name[:8] for p in journal_files(tmp_path)] == [f"2026010{i}" for i in (2, 3, 4, 5)]
    prune(tmp_path, Retention(keep_sessions=100, keep_bytes=250))
    assert [p.name[:8] for p in journal_files(tmp_path)] == ["20260104", "20260105"]
    newest = journal_files(tmp_path)[-1]
    prune(tmp_path, Retention(keep_sessions=1, keep_bytes=1), keep=newest)
    assert journal_files(tmp_path) == [newest]
    assert (tmp_path / "notes.txt").exists()


def test_a_cancelled_session_still_reports_its_end(tmp_path: Path) -> None:
    """Cancelling run() (Ctrl-C in the TUI) hangs up; the journal still gets the end."""
    from fishtalk.engine.session import Session

    seen: list[observe.Observation] = []

    class Slow:
        async def obtain(self) -> Any:
            await asyncio.Event().wait()  # never answers: run() is cancelled meanwhile

    async def main() -> None:
        session = Session(Slow())
        session.add_observer(seen.append)
        task = asyncio.ensure_future(session.run())
        await asyncio.sleep(0)  # run() is under way, waiting for the grant
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())
    ends = [o for o in seen if isinstance(o, observe.SessionFinished)]
    assert len(ends) == 1
    assert ends[0].result.reason == conv.END_USER_HANGUP
