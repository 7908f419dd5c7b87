"""What the journal costs a typed turn: ``Session.send_text`` until the agent receives it,
with a journal attached and without, against the bare SDK ``publish_data``.

Three senders share one agent (a real ``livekit.rtc.Room``) on one
:class:`~fishtalk.sim.livekit.server.SimServer`, in one process, timed on one clock from the
call until the agent's ``data_received`` callback; trials rotate the order of the senders.
The journaled session writes a real file (a temporary directory) through
:class:`~fishtalk.engine.journal.writer.JournalWriter`, as ``fishtalk chat`` does. WebRTC needs the
private namespace::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/bench_journal.py

Prints one markdown section.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from livekit import rtc
from pydantic import SecretStr

from fishtalk.core import protocol as p
from fishtalk.engine.api import LiveKitGrant
from fishtalk.engine.journal.writer import JournalWriter
from fishtalk.engine.session import Session
from fishtalk.sim.livekit.server import SimServer

TRIALS = 200
WARMUP = 10
ROOM = "bench"
SENDERS = ("journal", "plain", "bare")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _session(server: SimServer, identity: str) -> tuple[Session, asyncio.Future[object]]:
    grant = LiveKitGrant(
        session_id=identity,
        expires_at=datetime.now(UTC) + timedelta(minutes=5),
        max_duration_seconds=3600,
        livekit_url=server.ws_url,
        token=SecretStr(server.mint_token(ROOM, identity)),
    )
    session = Session(grant, spoken=False)
    ready = asyncio.Event()
    session.add_listener(
        lambda s, _e: ready.set() if s.status == "connected" and s.agent_ready else None
    )
    run: asyncio.Future[object] = asyncio.ensure_future(session.run())
    await asyncio.wait_for(ready.wait(), 20)
    return session, run


async def _measure(directory: Path) -> tuple[dict[str, list[float]], JournalWriter]:
    async with SimServer() as server:
        arrivals: asyncio.Queue[tuple[str, float]] = asyncio.Queue()
        agent = rtc.Room()

        def on_data(packet: rtc.DataPacket) -> None:
            if packet.topic == p.TOPIC_CLIENT_EVENT and packet.participant is not None:
                arrivals.put_nowait((packet.participant.identity, time.perf_counter()))

        agent.on("data_received", on_data)
        await agent.connect(server.ws_url, server.mint_token(ROOM, "agent", kind="agent"))
        await agent.local_participant.set_attributes({p.ATTR_AGENT_STATE: "listening"})
        bare = rtc.Room()
        await bare.connect(server.ws_url, server.mint_token(ROOM, "user-bare"))

        journal_grant = LiveKitGrant(
            session_id="journal",
            expires_at=datetime.now(UTC) + timedelta(minutes=5),
            max_duration_seconds=3600,
            livekit_url=server.ws_url,
            token=SecretStr(server.mint_token(ROOM, "user-journal")),
        )
        journaled = Session(journal_grant, spoken=False)
        writer = JournalWriter(directory / "bench.jsonl", agent_id="bench")
        journaled.add_observer(writer.observe)
        ready = asyncio.Event()
        journaled.add_listener(
            lambda s, _e: ready.set() if s.status == "connected" and s.agent_ready else None
        )
        journal_run = asyncio.ensure_future(journaled.run())
        await asyncio.wait_for(ready.wait(), 20)
        plain, plain_run = await _session(server, "user-plain")
        payload = p.encode_client_event(p.UserMessage(text="bench", audio=False))
        expected = {"journal": "user-journal", "plain": "user-plain", "bare": "user-bare"}

        async def one(kind: str, n: int) -> float:
            started = time.perf_counter()
            if kind == "journal":
                journaled.send_text(f"bench {n}")
            elif kind == "plain":
                plain.send_text(f"bench {n}")
            else:
                await bare.local_participant.publish_data(payload, topic=p.TOPIC_CLIENT_EVENT)
            identity, arrived = await asyncio.wait_for(arrivals.get(), 10)
            assert identity == expected[kind], (identity, kind)
            return arrived - started

        results: dict[str, list[float]] = {kind: [] for kind in SENDERS}
        for n in range(WARMUP + TRIALS):
            shift = n % len(SENDERS)
            for kind in SENDERS[shift:] + SENDERS[:shift]:
                took = await one(kind, n) * 1000
                if n >= WARMUP:
                    results[kind].append(took)
        journaled.hangup()
        plain.hangup()
        await asyncio.wait_for(journal_run, 10)
        await asyncio.wait_for(plain_run, 10)
        writer.close()
        await bare.disconnect()
        await agent.disconnect()
        return results, writer


def main() -> None:
    """Measure and print the markdown section."""
    with tempfile.TemporaryDirectory() as tmp:
        load_before = os.getloadavg()[0]
        results, writer = asyncio.run(_measure(Path(tmp)))
        load_after = os.getloadavg()[0]
        size = (Path(tmp) / "bench.jsonl").stat().st_size
    bare_med = statistics.median(results["bare"])
    print("## journal")
    print(
        "<!-- lead: A typed turn with a journal attached against one without, and bare "
        "`publish_data`. -->"
    )
    print()
    journal_ms = statistics.median(results["journal"])
    plain_ms = statistics.median(results["plain"])
    print(
        f"<!-- summary: typed turn with a journal | {journal_ms:.2f} ms | journal off "
        f"{plain_ms:.2f} ms | {journal_ms / plain_ms:.2f}x | ≤1.05x -->"
    )
    print()
    print(
        f"A typed turn from the call until the agent's `data_received` fires, {TRIALS} trials "
        "per sender after a warm-up, rotating senders, same sim, same agent, same process: "
        "`Session.send_text` with a journal attached, without one, and the bare SDK "
        "`publish_data` of the same bytes."
    )
    print()
    print("| sender | median ms | p95 ms | max ms | median / bare |")
    print("|---|---:|---:|---:|---:|")
    names = {
        "journal": "send_text, journal on",
        "plain": "send_text, journal off",
        "bare": "bare publish_data",
    }
    for kind in SENDERS:
        values = results[kind]
        print(
            f"| {names[kind]} | {statistics.median(values):.2f} | "
            f"{_percentile(values, 0.95):.2f} | {max(values):.2f} | "
            f"{statistics.median(values) / bare_med:.2f} |"
        )
    on, off = statistics.median(results["journal"]), statistics.median(results["plain"])
    print()
    print(
        f"Journal on / off (medians): **{on / off:.3f}**; {writer.written} records, "
        f"{size / 1024:.0f} KiB written, {writer.dropped} dropped."
    )
    print()
    print(
        f"Load average (1 min) on this 2-core machine: {load_before:.1f} before, "
        f"{load_after:.1f} after."
    )


if __name__ == "__main__":
    sys.exit(main())
