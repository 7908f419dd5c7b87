"""``fishtalk chat --plain --latency`` and ``--metrics-json`` against the sim, text-only
(heard figures from real audio are tested with the sim's timings elsewhere)."""

from __future__ import annotations

import json
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from line_mode import QUIET, run_chat

from fishtalk.sim.runner import SimHandle, run_sim

pytestmark = pytest.mark.webrtc


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    async with run_sim(scenarios={"quiet": QUIET}) as handle:
        yield handle


async def _chat(sim: SimHandle, stdin: bytes, *extra: str) -> tuple[int, str, str]:
    return await run_chat(sim, stdin, "--agent", "quiet", "--text-only", "--no-journal", *extra)


async def test_latency_flag_prints_a_note_after_each_agent_turn(sim: SimHandle) -> None:
    code, out, err = await _chat(sim, b"hello there\n", "--plain", "--latency")
    assert code == 0, err
    lines = out.splitlines()
    replies = [i for i, line in enumerate(lines) if line.startswith("agent: ")]
    assert replies, out
    note = lines[replies[0] + 1]
    assert note.startswith("* latency (your turn 1): not measured — text-only (first text "), out
    assert note.endswith(" s)")
    assert lines[-2:] == ["* latency: no measured turns", "* You hung up."]


async def test_without_the_flag_a_text_only_call_prints_no_latency(sim: SimHandle) -> None:
    code, out, err = await _chat(sim, b"hello there\n", "--plain")
    assert code == 0, err
    assert "latency" not in out
    assert out.splitlines()[-1] == "* You hung up."


async def test_metrics_json_is_written_when_the_call_ends(sim: SimHandle, tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    code, out, err = await _chat(sim, b"hello there\n", "--plain", "--metrics-json", str(path))
    assert code == 0, err
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["end_reason"] == "user_hangup"
    [turn] = data["turns"]
    assert (turn["turn"], turn["kind"], turn["incomplete"]) == (1, "typed", "text-only")
    assert turn["heard_ms"] is None
    assert turn["first_text_ms"] > 0
    assert turn["segment_id"]
    assert data["interrupts"] == []
    assert data["summary"]["turns"] == 1
    assert data["summary"]["measured"] == 0
    assert data["summary"]["p50_ms"] is None
    assert "latency" not in out  # the file, not the screen


async def test_a_bad_metrics_path_fails_before_the_call(sim: SimHandle, tmp_path: Path) -> None:
    bad = tmp_path / "no-such-dir" / "m.json"
    code, out, err = await _chat(sim, b"hello there\n", "--plain", "--metrics-json", str(bad))
    assert code == 2
    assert out == ""  # never connected
    assert err.splitlines() == [
        f"fishtalk: cannot write metrics to {bad}: No such file or directory"
    ]
