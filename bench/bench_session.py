"""Latency of a typed turn: ``Session.send_text`` until the agent receives it, against the
bare SDK ``publish_data`` on the same loopback sim.

Both senders share one agent participant (a real ``livekit.rtc.Room``) on one
:class:`~fishtalk.sim.livekit.server.SimServer`, in one process, so both are timed on the same
clock from the call until the agent's ``data_received`` callback. Trials alternate between
the two senders. WebRTC needs the private namespace::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/bench_session.py [--runs 15]

One run's ratio moves by about ±0.04 from run to run on this shared 2-core machine (each
run gets new connections, ports and thread placement), more than the goal's margin, so
the whole measurement is repeated ``--runs`` times (fresh sim, agent and senders each
time) and the figure to judge is the median of the runs' ratios, with their range. The
tables pool every run's trials. Prints one markdown section.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta

import agent_process  # bench/agent_process.py, beside this script
from livekit import rtc
from pydantic import SecretStr

from fishtalk.core import protocol as p
from fishtalk.engine.api import LiveKitGrant
from fishtalk.engine.session import Session
from fishtalk.sim.livekit.server import SimServer

TRIALS = 200
WARMUP = 10
ROOM = "bench"
IDENTITIES = ("user-session", "user-bare")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _trials(
    session: Session, bare: rtc.Room, arrivals: asyncio.Queue[tuple[str, float]]
) -> tuple[list[float], list[float]]:
    """Alternating trials (session first on even rounds, bare first on odd ones)."""
    payload = p.encode_client_event(p.UserMessage(text="bench", audio=False))

    async def one(kind: str, n: int) -> float:
        started = time.perf_counter()
        if kind == "session":
            session.send_text(f"bench {n}")
        else:
            await bare.local_participant.publish_data(payload, topic=p.TOPIC_CLIENT_EVENT)
        identity, arrived = await asyncio.wait_for(arrivals.get(), 10)
        assert identity == ("user-session" if kind == "session" else "user-bare")
        return arrived - started

    session_ms: list[float] = []
    bare_ms: list[float] = []
    for n in range(WARMUP + TRIALS):
        order = ("session", "bare") if n % 2 == 0 else ("bare", "session")
        for kind in order:
            took = await one(kind, n) * 1000
            if n >= WARMUP:
                (session_ms if kind == "session" else bare_ms).append(took)
    return session_ms, bare_ms


async def _senders(
    ws_url: str, tokens: dict[str, str], arrivals: asyncio.Queue[tuple[str, float]]
) -> tuple[list[float], list[float]]:
    bare = rtc.Room()
    await bare.connect(ws_url, tokens["user-bare"])
    grant = LiveKitGrant(
        session_id="bench",
        expires_at=datetime.now(UTC) + timedelta(minutes=5),
        max_duration_seconds=3600,
        livekit_url=ws_url,
        token=SecretStr(tokens["user-session"]),
    )
    session = Session(grant, spoken=False)
    ready = asyncio.Event()
    session.add_listener(
        lambda s, _e: ready.set() if s.status == "connected" and s.agent_ready else None
    )
    run = asyncio.ensure_future(session.run())
    await asyncio.wait_for(ready.wait(), 20)
    try:
        return await _trials(session, bare, arrivals)
    finally:
        session.hangup()
        await asyncio.wait_for(run, 10)
        await bare.disconnect()


async def _measure_one_process() -> tuple[list[float], list[float]]:
    """The sim, the agent and both senders on one event loop."""
    async with SimServer() as server:
        arrivals: asyncio.Queue[tuple[str, float]] = asyncio.Queue()
        agent = rtc.Room()

        def on_data(packet: rtc.DataPacket) -> None:
            if packet.topic == p.TOPIC_CLIENT_EVENT and packet.participant is not None:
                arrivals.put_nowait((packet.participant.identity, time.perf_counter()))

        agent.on("data_received", on_data)
        await agent.connect(server.ws_url, server.mint_token(ROOM, "agent", kind="agent"))
        await agent.local_participant.set_attributes({p.ATTR_AGENT_STATE: "listening"})
        tokens = {name: server.mint_token(ROOM, name) for name in IDENTITIES}
        try:
            return await _senders(server.ws_url, tokens, arrivals)
        finally:
            await agent.disconnect()


async def _measure_agent_process() -> tuple[list[float], list[float]]:
    """The sim and the agent in a child process; this one holds only the senders."""
    agent = await agent_process.start(list(IDENTITIES))
    try:
        return await _senders(agent.ws_url, agent.tokens, agent.arrivals)
    finally:
        await agent.close()


def _table(session_ms: list[float], bare_ms: list[float]) -> float:
    print("| sender | median ms | p95 ms | max ms |")
    print("|---|---:|---:|---:|")
    for name, values in (("Session.send_text", session_ms), ("bare publish_data", bare_ms)):
        print(
            f"| {name} | {statistics.median(values):.2f} | {_percentile(values, 0.95):.2f} | "
            f"{max(values):.2f} |"
        )
    return statistics.median(session_ms) / statistics.median(bare_ms)


def main() -> None:
    """Measure and print the markdown section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="whole measurements to repeat")
    runs = max(1, parser.parse_args().runs)
    load_before = os.getloadavg()[0]
    pooled: dict[str, tuple[list[float], list[float]]] = {"one": ([], []), "apart": ([], [])}
    ratios: dict[str, list[float]] = {"one": [], "apart": []}
    for _ in range(runs):
        for name, measure in (("one", _measure_one_process), ("apart", _measure_agent_process)):
            session_ms, bare_ms = asyncio.run(measure())
            pooled[name][0].extend(session_ms)
            pooled[name][1].extend(bare_ms)
            ratios[name].append(statistics.median(session_ms) / statistics.median(bare_ms))
    load_after = os.getloadavg()[0]
    print("## session")
    print(
        "<!-- lead: A typed turn through the engine (reducer, ordered outbox, publish) against "
        "bare `publish_data`, until the agent receives it. -->"
    )
    print()
    for name, label in (("one", "sim in the same process"), ("apart", "sim in its own process")):
        session_ms, bare_ms = pooled[name]
        print(
            f"<!-- summary: typed turn, send to agent receives ({label}) | "
            f"{statistics.median(session_ms):.2f} ms | bare `publish_data` "
            f"{statistics.median(bare_ms):.2f} ms | {statistics.median(ratios[name]):.3f}x | "
            "≤1.10x -->"
        )
    print()
    print(
        f"A typed turn from the call until the agent's `data_received` fires, {TRIALS} trials "
        f"per run after a warm-up, {runs} runs, alternating senders, same sim, same agent: "
        "`Session.send_text` (reducer, ordered outbox, publish) versus the bare SDK "
        "`publish_data` of the same bytes. Two set-ups, each timing both senders the same "
        "way: the sim and the agent on the senders' event loop (one process), and the sim "
        "and the agent in a process of their own (`bench/agent_process.py`; the agent stamps "
        "arrivals with the same monotonic clock). In one process, client work on the loop "
        "after the bytes left (bookkeeping, listeners) also holds up the sim relaying them, "
        "which a remote server would not; bare `publish_data` does no such work. One run's "
        "ratio moves by about ±0.04 from run to run, so the figure is the median of the "
        "runs' ratios (the tables pool all the runs' trials)."
    )
    print()
    print("One process (sim, agent and senders on one loop):")
    print()
    _table(*pooled["one"])
    print()
    print("Sim and agent in their own process (the senders' process holds only the client):")
    print()
    _table(*pooled["apart"])
    print()

    def figure(values: list[float]) -> str:
        return f"**{statistics.median(values):.3f}** ({min(values):.2f}–{max(values):.2f})"

    print(
        f"Ratio (session / bare), median of {runs} runs' ratios of medians (range): "
        f"{figure(ratios['one'])} in one process, {figure(ratios['apart'])} with the sim "
        "in its own process."
    )
    print()
    print(
        f"Load average (1 min) on this 2-core machine: {load_before:.1f} before, "
        f"{load_after:.1f} after."
    )


if __name__ == "__main__":
    sys.exit(main())
