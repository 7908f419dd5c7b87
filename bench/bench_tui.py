"""Benchmark the TUI headless: how many state updates it absorbs and draws, and its memory.

Prints one markdown section; asserts nothing. No network: the app runs on the scripted
driver (the real reducer), so only the front end is measured::

    .venv/bin/python bench/bench_tui.py

Measures:
* streaming: agent transcript chunks fed as fast as possible (bursts of BATCH between
  event-loop turns) for a few seconds: inputs
  reduced per second, frames drawn per second (capped at the app's RENDER_HZ), segments
  re-wrapped per frame;
* paced: 50 updates per second (the issue's target) for a few seconds: frames drawn and the
  CPU share the app used; once more with a session journal written (a
  :class:`~fishtalk.engine.journal.writer.JournalWriter` observing every input and state, as a
  live session's does), to see what the journal costs the TUI;
* big transcript: memory (tracemalloc) after N segments, and the cost of one frame when the
  last of N segments changes (only that one is re-wrapped: the view is bounded + cached).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from support.scripted import ScriptedSession

from fishtalk.core import conversation as c
from fishtalk.core.protocol import ATTR_AGENT_STATE
from fishtalk.engine.journal.writer import JournalWriter
from fishtalk.engine.observe import Observer, Reduced
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.widgets.transcript import Transcript

SIZE = (100, 30)
BATCH = 10


class JournaledSession(ScriptedSession):
    """The scripted session with a session observer, called as a live session calls it:
    each input just before it is reduced, then the state it led to."""

    def __init__(self, observer: Observer) -> None:
        super().__init__()
        self._observer = observer

    def feed(self, *inputs: c.Input) -> c.State:
        """Reduce each input, observed before and after."""
        for inp in inputs:
            self._observer(inp)
            previous = self.state
            super().feed(inp)
            self._observer(Reduced(self.state, inp.at, c.changes(previous, self.state)))
        return self.state


def _connected(session: ScriptedSession) -> None:
    session.feed(
        c.Connected("user-bench", 1.0),
        c.ParticipantJoined("agent", 1.1, attributes={ATTR_AGENT_STATE: "listening"}),
    )


def _app(session: ScriptedSession) -> FishtalkApp:
    return FishtalkApp(session, clock=lambda: 10.0, live_timers=False, ended_linger=None)


async def _settle(app: FishtalkApp, session: ScriptedSession) -> None:
    for _ in range(500):
        await asyncio.sleep(0.005)
        if app.drawn_state is session.state:
            return


async def bench_streaming(seconds: float) -> dict[str, float]:
    """Chunks as fast as the loop takes them."""
    session = ScriptedSession()
    app = _app(session)
    async with app.run_test(size=SIZE, headless=True):
        _connected(session)
        transcript = app.query_one(Transcript)
        await _settle(app, session)
        renders0, wraps0 = app.renders, transcript.renders
        fed = 0
        seg = 0
        start = time.perf_counter()
        cpu0 = time.process_time()
        while time.perf_counter() - start < seconds:
            stream = f"s{seg}"
            session.feed(c.TranscriptStreamOpened(stream, f"seg{seg}", "agent", False, 2.0))
            for word in range(40):
                session.feed(c.TranscriptStreamChunk(stream, f"seg{seg}", f" word{word}", 2.0))
                fed += 1
                if word % BATCH == 0:
                    # Let the app run between small bursts, as packets arrive in a session.
                    await asyncio.sleep(0)
            session.feed(c.TranscriptStreamClosed(stream, f"seg{seg}", 3.0))
            seg += 1
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu0
        await _settle(app, session)
        frames = app.renders - renders0
        return {
            "inputs_per_s": fed / elapsed,
            "frames_per_s": frames / elapsed,
            "wraps_per_frame": (transcript.renders - wraps0) / max(frames, 1),
            "cpu_share": cpu / elapsed,
            "segments": float(seg),
        }


async def bench_paced(seconds: float, rate: float, *, journal: bool = False) -> dict[str, float]:
    """A steady ``rate`` updates per second, as a fast talker's transcript would arrive;
    ``journal``: with a journal written to a temporary file."""
    if not journal:
        return await _paced(ScriptedSession(), seconds, rate)
    with tempfile.TemporaryDirectory() as tmp:
        writer = JournalWriter(Path(tmp) / "bench.jsonl", agent_id="bench", front_end="tui")
        try:
            result = await _paced(JournaledSession(writer.observe), seconds, rate)
        finally:
            writer.close()
        return {**result, "journal_records": float(writer.written)}


async def _paced(session: ScriptedSession, seconds: float, rate: float) -> dict[str, float]:
    app = _app(session)
    async with app.run_test(size=SIZE, headless=True):
        _connected(session)
        await _settle(app, session)
        renders0 = app.renders
        session.feed(c.TranscriptStreamOpened("s", "seg", "agent", False, 2.0))
        start = time.perf_counter()
        cpu0 = time.process_time()
        lags: list[float] = []
        n = 0
        while (now := time.perf_counter()) - start < seconds:
            due = start + n / rate
            if now < due:
                await asyncio.sleep(due - now)
            lags.append(max(0.0, time.perf_counter() - due))
            session.feed(c.TranscriptStreamChunk("s", "seg", f" w{n}", 2.0))
            n += 1
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu0
        await _settle(app, session)
        return {
            "updates_per_s": n / elapsed,
            "frames_per_s": (app.renders - renders0) / elapsed,
            "cpu_share": cpu / elapsed,
            "feed_lag_p50_ms": statistics.median(lags) * 1000,
        }


async def bench_big(segments: int) -> dict[str, float]:
    """Memory after ``segments`` segments and the cost of one frame at that size."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    session = ScriptedSession()
    app = _app(session)
    async with app.run_test(size=SIZE, headless=True):
        _connected(session)
        for i in range(segments):
            role_user = i % 2 == 0
            stream = f"s{i}"
            identity = "user-bench" if role_user else "agent"
            text = f"segment {i}: " + "lorem ipsum dolor sit amet " * 3
            session.feed(
                c.TranscriptStreamOpened(stream, f"seg{i}", identity, role_user, 2.0 + i),
                c.TranscriptStreamChunk(stream, f"seg{i}", text, 2.0 + i),
                c.TranscriptStreamClosed(stream, f"seg{i}", 2.1 + i, role_user or None),
            )
            if i % 200 == 0:
                await asyncio.sleep(0)
        await _settle(app, session)
        gc.collect()
        memory = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        transcript = app.query_one(Transcript)
        # One streaming token into the newest segment: time the frame it causes.
        session.feed(c.TranscriptStreamOpened("last", "last", "agent", False, 9e5))
        await _settle(app, session)
        costs: list[float] = []
        wraps0 = transcript.renders
        for k in range(30):
            session.feed(c.TranscriptStreamChunk("last", "last", f" t{k}", 9e5))
            t0 = time.perf_counter()
            _draw_now(app, session)
            costs.append(time.perf_counter() - t0)
            await asyncio.sleep(0)
        result = {
            "memory_mb": memory / 1e6,
            "held": float(transcript.item_count),
            "hidden": float(transcript.hidden_count),
            "frame_ms_p50": statistics.median(costs) * 1000,
            "frame_ms_max": max(costs) * 1000,
            "wraps_per_frame": (transcript.renders - wraps0) / len(costs),
        }
        session.feed(c.TranscriptStreamClosed("last", "last", 9e5 + 1))
        drop_ms, drop_wraps = await _block_drop_frame(app, session, transcript, segments)
        return {**result, "drop_frame_ms": drop_ms, "drop_wraps": drop_wraps}


def _draw_now(app: FishtalkApp, session: ScriptedSession) -> None:
    """Draw the session's newest state now (its StateChanged message may still be queued)."""
    app._state = session.state
    app.force_render()


async def _block_drop_frame(
    app: FishtalkApp, session: ScriptedSession, transcript: Transcript, start: int
) -> tuple[float, float]:
    """The frame in which the reducer drops its oldest block of segments: its cost and
    how many segments it re-wrapped (NaN when the call is too short to drop one)."""
    log = session.state.segment_log
    if len(log) < c.MAX_LIVE_SEGMENTS:
        return float("nan"), float("nan")
    i = start
    while True:
        log = session.state.segment_log
        tail = log.blocks[-1]
        if len(tail) == c.LOG_CHUNK - 1 and len(log) - len(tail) >= c.MAX_LIVE_SEGMENTS:
            break
        session.feed(c.TranscriptStreamOpened(f"d{i}", f"d{i}", "agent", False, 9e5 + i))
        session.feed(c.TranscriptStreamClosed(f"d{i}", f"d{i}", 9e5 + i))
        i += 1
    _draw_now(app, session)
    earlier = session.state.earlier_segments
    session.feed(c.TranscriptStreamOpened("drop", "drop", "agent", False, 9.5e5))
    assert session.state.earlier_segments > earlier
    wraps0 = transcript.renders
    t0 = time.perf_counter()
    _draw_now(app, session)
    cost = time.perf_counter() - t0
    return cost * 1000, float(transcript.renders - wraps0)


async def main(quick: bool, sizes_arg: str | None, only_big: bool) -> None:
    seconds = 1.5 if quick else 4.0
    streaming = None if only_big else await bench_streaming(seconds)
    paced = None if only_big else await bench_paced(seconds, 50.0)
    journaled = None if only_big else await bench_paced(seconds, 50.0, journal=True)
    sizes: tuple[int, ...] = (500, 2000) if quick else (1000, 5000, 10000)
    if sizes_arg:
        sizes = tuple(int(n) for n in sizes_arg.split(","))
    big = [(n, await bench_big(n)) for n in sizes]
    print("## TUI (headless, scripted driver)\n")
    print(
        "<!-- lead: Frames per second the TUI draws while the agent streams as fast as it can. -->"
    )
    if streaming is not None:
        cap = FishtalkApp.RENDER_HZ
        print(
            f"<!-- summary: TUI frames/s while streaming as fast as possible | "
            f"{streaming['frames_per_s']:.1f} | cap {cap:g} | "
            f"{streaming['frames_per_s'] / cap:.2f}x | – -->\n"
        )
    print(
        f"Textual app at {SIZE[0]}x{SIZE[1]} on the real reducer, no network. Frames are "
        f"capped at {FishtalkApp.RENDER_HZ:g} per second; state updates in between are "
        "coalesced.\n"
    )
    print("| scenario | result |")
    print("| --- | --- |")
    if streaming is not None and paced is not None and journaled is not None:
        _print_rates(streaming, paced, journaled)
    for n, result in big:
        dropped = result["drop_frame_ms"]
        drop = (
            "no block has dropped yet"
            if math.isnan(dropped)
            else f"the frame where an old block drops {dropped:.2f} ms, "
            f"{result['drop_wraps']:.0f} re-wrapped"
        )
        print(
            f"| {n:,} segments | memory {result['memory_mb']:.1f} MB (tracemalloc), "
            f"{result['held']:.0f} held + {result['hidden']:.0f} summarised, "
            f"draw after a streaming token p50 {result['frame_ms_p50']:.2f} ms "
            f"(max {result['frame_ms_max']:.2f} ms), "
            f"{result['wraps_per_frame']:.2f} segments re-wrapped per frame; {drop} |"
        )
    print()


def _print_rates(
    streaming: dict[str, float], paced: dict[str, float], journaled: dict[str, float]
) -> None:
    print(
        f"| streaming, as fast as possible, bursts of {BATCH} "
        f"({streaming['segments']:.0f} segments) | "
        f"{streaming['inputs_per_s']:,.0f} chunks/s reduced, "
        f"{streaming['frames_per_s']:.1f} frames/s, "
        f"{streaming['wraps_per_frame']:.2f} segments re-wrapped per frame, "
        f"CPU {streaming['cpu_share']:.0%} |"
    )
    print(
        f"| paced at 50 updates/s | {paced['updates_per_s']:.1f} updates/s fed, "
        f"{paced['frames_per_s']:.1f} frames/s drawn, CPU {paced['cpu_share']:.0%}, "
        f"feed lag p50 {paced['feed_lag_p50_ms']:.1f} ms |"
    )
    print(
        f"| paced at 50 updates/s, journal on | {journaled['updates_per_s']:.1f} updates/s "
        f"fed, {journaled['frames_per_s']:.1f} frames/s drawn, "
        f"CPU {journaled['cpu_share']:.0%}, "
        f"feed lag p50 {journaled['feed_lag_p50_ms']:.1f} ms, "
        f"{journaled['journal_records']:.0f} records written |"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, smaller sizes")
    parser.add_argument("--sizes", help="comma-separated transcript sizes (segments)")
    parser.add_argument("--only-big", action="store_true", help="only the big-transcript rows")
    args = parser.parse_args()
    asyncio.run(main(args.quick, args.sizes, args.only_big))
