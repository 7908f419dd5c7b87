"""Benchmark the session page of a 30-minute call: its size against the journal's (goal: at
most twice the journal plus the audio) and its open time in headless Chromium (goal: under
a second). Prints a markdown section, asserts nothing.

The journal is synthetic but shaped like a real one: the records of a recorded session
(tests/journal/data/everything.jsonl: states, stream chunks, segment changes, tools, latency
marks, packets) repeated turn after turn with fresh ids and times for 30 minutes, plus the
levels the writer polls twice a second. The recording is 30 minutes of 48 kHz stereo with
speech-like bursts, alternating between the microphone and the agent.

Open time is what a person waits for: from navigation to the load event (the page is one
file, its audio a ``data:`` URL), the median of three cold opens, in Debian's Chromium
driven by playwright-core (``npm ci`` at the root; tests/reports/test_browser.py's setup)::

    .venv/bin/python bench/bench_report.py [--minutes 30]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np

from fishtalk.engine.journal.reader import read_journal
from fishtalk.workbench.reports.audio import load_audio
from fishtalk.workbench.reports.session import session_page

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "tests" / "journal" / "data" / "everything.jsonl"
OPEN = Path(__file__).resolve().parent / "open_page.mjs"
CHROMIUM = os.environ.get("FISHTALK_CHROMIUM", "/usr/bin/chromium")
TURN_SECONDS = 14.0
"""A turn every 14 s: a user line, the agent's reply in chunks, its latency; 128 turns in
30 minutes."""
RATE = 48_000


def _renamed(value: Any, n: int) -> Any:
    """``value`` with every id made unique to turn ``n``."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in ("segment_id", "call_id", "stream_id", "id") and isinstance(item, str):
                out[key] = f"{item}-{n}"
            else:
                out[key] = _renamed(item, n)
        return out
    if isinstance(value, list):
        return [_renamed(item, n) for item in value]
    return value


def build_journal(path: Path, minutes: float) -> int:
    """Write a ``minutes``-long journal at ``path``; returns its turn count."""
    records = [json.loads(line) for line in TEMPLATE.read_text("utf-8").splitlines()]
    header, rest = records[0], records[1:]
    closing_kinds = {"hangup", "ended", "disconnected"}
    body = [
        r
        for r in rest
        if r["type"] not in ("end", "closed", "grant") and r.get("kind") not in closing_kinds
    ]
    grant = next(r for r in rest if r["type"] == "grant")
    tail = [r for r in rest if r["type"] in ("end", "closed") or r.get("kind") in closing_kinds]
    span = max(r["t"] for r in body) - min(r["t"] for r in body)
    turns = int(minutes * 60 / TURN_SECONDS)
    lines = [json.dumps(header), json.dumps(grant)]
    for n in range(turns):
        start = n * TURN_SECONDS
        for record in body:
            shifted = _renamed(record, n)
            shifted["t"] = round(start + (record["t"] - body[0]["t"]) * TURN_SECONDS / span, 6)
            shifted["wall"] = header["wall"] + shifted["t"]
            lines.append(json.dumps(shifted, separators=(",", ":")))
        for k in range(int(TURN_SECONDS * 2)):  # levels, twice a second
            t = start + k / 2
            level = {"type": "levels", "t": t, "wall": header["wall"] + t}
            level.update(mic_rms=0.02, mic_peak=0.1, agent_rms=0.05, agent_peak=0.3)
            lines.append(json.dumps(level, separators=(",", ":")))
    end = turns * TURN_SECONDS
    for record in tail:
        lines.append(json.dumps({**record, "t": end, "wall": header["wall"] + end}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return turns


def build_recording(path: Path, minutes: float) -> None:
    """30 minutes of stereo: noisy 150-300 Hz bursts, each turn the user then the agent."""
    rng = np.random.default_rng(7)
    frames = int(minutes * 60 * RATE)
    stereo = np.zeros((frames, 2), np.int16)
    burst = int(3 * RATE)
    t = np.arange(burst) / RATE
    envelope = np.abs(np.sin(2 * np.pi * 3 * t))  # syllables
    for start in range(0, frames - 2 * burst, int(TURN_SECONDS * RATE)):
        for channel, offset in ((0, 0), (1, int(4 * RATE))):
            voice = np.sin(2 * np.pi * rng.uniform(150, 300) * t) + 0.3 * rng.normal(size=burst)
            signal = (6000 * envelope * voice).astype(np.int16)
            stereo[start + offset : start + offset + burst, channel] = signal
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(RATE)
        wav.writeframes(stereo.tobytes())


def open_ms(page: Path, runs: int = 3) -> list[float] | None:
    """Milliseconds from navigation to the load event, one per cold open (None: no browser)."""
    node = shutil.which("node")
    if node is None or not Path(CHROMIUM).exists():
        return None
    if not (ROOT / "node_modules" / "playwright-core").exists():
        return None
    config = json.dumps({"pageUrl": page.resolve().as_uri(), "chromium": CHROMIUM, "runs": runs})
    done = subprocess.run(
        [node, str(OPEN), config], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    found = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not found:
        sys.stderr.write(done.stderr[-2000:])
        return None
    result: dict[str, Any] = json.loads(found[-1][len("RESULT ") :])
    return [float(x) for x in result["loadMs"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fishtalk-bench-report-") as tmp:
        journal_path = Path(tmp) / "long.jsonl"
        wav = Path(tmp) / "long.wav"
        turns = build_journal(journal_path, args.minutes)
        build_recording(wav, args.minutes)
        started = time.perf_counter()
        audio = load_audio(wav)
        text = session_page(read_journal(journal_path), audio=wav)
        build_s = time.perf_counter() - started
        page = Path(tmp) / "long.html"
        page.write_text(text, encoding="utf-8")
        journal_bytes = journal_path.stat().st_size
        page_bytes = page.stat().st_size
        audio_bytes = len(audio.data_url) if audio is not None else 0
        codec = audio.codec if audio is not None else "none"
        without_audio = session_page(read_journal(journal_path), audio=Path(tmp) / "none.wav")
        bare = Path(tmp) / "bare.html"
        bare.write_text(without_audio, encoding="utf-8")
        opens = open_ms(page)
        bare_opens = open_ms(bare)
    mb = 1 << 20
    ratio = (page_bytes - audio_bytes) / journal_bytes
    print("## report")
    print(
        "<!-- lead: Size and open time in Chromium of a 30-minute session's HTML page, "
        "against its journal. -->"
    )
    print()
    print(
        f"The session page of a {args.minutes:g}-minute call ({turns} turns; synthetic journal "
        "shaped like a recorded one, see bench/bench_report.py), with its recording."
    )
    print()
    print("| what | value |")
    print("|---|---:|")
    print(f"| journal | {journal_bytes / mb:.2f} MB |")
    print(f"| page without audio | {len(without_audio.encode()) / mb:.2f} MB |")
    print(f"| page with audio | {page_bytes / mb:.2f} MB |")
    print(f"| audio in the page ({codec}) | {audio_bytes / mb:.2f} MB |")
    print(f"| recording (48 kHz WAV) | {args.minutes * 60 * RATE * 4 / mb:.1f} MB |")
    print(f"| page less audio ÷ journal | {ratio:.2f}x |")
    print(f"| page build (read journal, encode audio, render) | {build_s:.1f} s |")
    if opens is not None and bare_opens is not None:
        print(f"| open, page with audio (median of 3) | {statistics.median(opens):.0f} ms |")
        print(
            f"| open, page without audio (median of 3) | {statistics.median(bare_opens):.0f} ms |"
        )
        print(
            f"<!-- summary: 30-minute session page, open in Chromium | "
            f"{statistics.median(opens):.0f} ms | – | – | <1000 ms -->"
        )
    else:
        print("| open | (no Chromium or playwright-core: `npm ci`, `apt-get install chromium`) |")
    print(
        f"<!-- summary: 30-minute session page less audio ÷ journal | {ratio:.2f}x | "
        f"journal {journal_bytes / mb:.1f} MB | – | ≤2x -->"
    )
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
