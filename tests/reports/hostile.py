"""Journals for the report tests: a hostile one written record by record, its recording,
and test results whose every string is hostile."""

from __future__ import annotations

import json
import wave
from pathlib import Path
from typing import Any, Final

import numpy as np

from fishtalk.workbench.agenttest.results import Failure, HeardTurn, TestResult

SCRIPT: Final = "<script>window.pwned=true</script>"
IMG: Final = '<img src=x onerror="window.pwned=true">'
JS_URL: Final = "javascript:window.pwned=true"
SVG: Final = '"><svg onload="window.pwned=true">'
BIDI: Final = "abc\u202edcba\u2066x"
CONTROL: Final = "red\x1b[31m\x07bell"
BIG: Final = "A" * 1_000_000 + "<b>end</b>"
HOSTILE: Final = (SCRIPT, IMG, JS_URL, SVG)
"""Markup that would run (or navigate) if it reached the page unescaped."""
SEGMENT_TIMES: Final = (0.5, 2.0, 4.0, 6.0)
"""Where each transcript line of the hostile journal starts (session seconds)."""


def _segment(t: float, role: str, seg: str, text: str, **extra: Any) -> dict[str, Any]:
    segment = {"seq": 0, "segment_id": seg, "role": role, "text": text, "final": True}
    segment.update(extra)
    return {"type": "change", "t": t, "kind": "segment_opened", "segment": segment}


def hostile_records() -> list[dict[str, Any]]:
    """A journal whose remote strings try everything, on a plausible session."""
    waterfall = {
        "turn": 1,
        "kind": SCRIPT,
        "segment_id": "a1",
        "user_ended_at": 100.0,
        "thinking_at": 100.2,
        "first_text_at": 100.4,
        "audio_received_at": 100.6,
        "heard_ms": 700.0,
        "incomplete": None,
    }
    return [
        {
            "type": "header",
            "format": "fishtalk-journal",
            "version": 1,
            "fishtalk_version": "0.1.0",
            "protocol_version": SVG,
            "agent_id": IMG,
            "session_id": JS_URL,
            "started_at": "2026-12-01T23:00:00+00:00",
            "t": 0.0,
        },
        _segment(SEGMENT_TIMES[0], "user", "u1", f"{SCRIPT} {IMG} {BIDI}", typed=True),
        _segment(SEGMENT_TIMES[1], "agent", "a1", f"{JS_URL} {CONTROL} {SVG}", interrupted=True),
        {
            "type": "change",
            "t": 2.5,
            "kind": "tool_call",
            "card": {
                "call_id": "c1",
                "tool_name": IMG,
                "source": SCRIPT,
                "status": "error",
                "input": json.dumps({"q": SCRIPT, "url": JS_URL}),
                "error": SVG,
                "input_truncated": True,
            },
        },
        {"type": "change", "t": 3.0, "kind": "turn_latency", "waterfall": waterfall},
        _segment(SEGMENT_TIMES[2], "user", "u2", BIG),
        _segment(SEGMENT_TIMES[3], "agent", "a2", "a calm, ordinary reply"),
        {"type": "change", "t": 6.5, "kind": "error", "error": {"code": SCRIPT, "message": IMG}},
        {"type": "end", "t": 8.0, "reason": "error", "message": CONTROL},
    ]


def write_journal(path: Path, records: list[dict[str, Any]]) -> Path:
    """``records`` as a journal file at ``path``."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_recording(path: Path, seconds: float = 8.0) -> Path:
    """A 48 kHz stereo recording: a tone on the left early on, on the right later."""
    rate = 48_000
    t = np.arange(int(seconds * rate)) / rate
    tone = (8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    left = np.where((t > 0.5) & (t < 1.8), tone, 0).astype(np.int16)
    right = np.where((t > 2.0) & (t < 3.5), tone, 0).astype(np.int16)
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(np.stack([left, right], axis=1).tobytes())
    return path


def hostile_results(journal: Path) -> list[TestResult]:
    """Three runs of a test named with markup: a pass, a failure and an API error."""
    waterfall = hostile_records()[4]["waterfall"]
    turns = [HeardTurn(f"turn 1 ({SCRIPT})", 0.7, None, waterfall)]
    common: dict[str, Any] = {"name": IMG, "path": JS_URL, "journal": str(journal)}
    return [
        TestResult(**common, run=1, heard=turns, first_text=[0.4], transcript=[SCRIPT]),
        TestResult(
            **common,
            run=2,
            status="failed",
            failures=[Failure(f"turn 1 {SVG}", f"a reply saying {SCRIPT}", BIDI)],
            heard=[HeardTurn("turn 1", 1.2, None, waterfall)],
            tool_calls=[IMG],
        ),
        TestResult(**common, run=3, status="error", error=CONTROL + SCRIPT),
    ]
