"""The Python API's overhead: a typed turn through ``AgentSession`` against the session
engine and the bare SDK, and what ``import fishtalk`` costs.

Turn latency: from the call until the agent's ``data_received`` fires, three senders in one
room on one :class:`~fishtalk.sim.livekit.server.SimServer`, in one process, alternating
trials: ``await AgentSession.send_text`` (events, waiters, then the engine),
``Session.send_text`` (the engine alone) and the bare SDK ``publish_data`` of the same
bytes. Import time: wall time of a fresh interpreter running ``import fishtalk`` (and
``from fishtalk import AgentSession``) against ``python -c pass``. WebRTC needs the private
namespace::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/bench_agent_session.py

Prints one markdown section.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import agent_process  # bench/agent_process.py, beside this script
from livekit import rtc
from pydantic import SecretStr

from fishtalk import AgentSession
from fishtalk.core import protocol as p
from fishtalk.engine.api import LiveKitGrant
from fishtalk.engine.session import Session
from fishtalk.sim.livekit.server import SimServer

TRIALS = 200
WARMUP = 10
IMPORT_RUNS = 30
ROOM = "bench"
SENDERS = ("AgentSession.send_text", "Session.send_text", "bare publish_data")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _grant(ws_url: str, token: str, identity: str) -> LiveKitGrant:
    return LiveKitGrant(
        session_id=f"bench-{identity}",
        expires_at=datetime.now(UTC) + timedelta(minutes=5),
        max_duration_seconds=3600,
        livekit_url=ws_url,
        token=SecretStr(token),
    )


IDENTITIES = dict(zip(SENDERS, ("user-api", "user-session", "user-bare"), strict=True))


async def _senders(
    ws_url: str, tokens: dict[str, str], arrivals: asyncio.Queue[tuple[str, float]]
) -> dict[str, list[float]]:
    bare = rtc.Room()
    await bare.connect(ws_url, tokens["user-bare"])
    session = Session(_grant(ws_url, tokens["user-session"], "user-session"), spoken=False)
    ready = asyncio.Event()
    session.add_listener(
        lambda s, _e: ready.set() if s.status == "connected" and s.agent_ready else None
    )
    run = asyncio.ensure_future(session.run())
    await asyncio.wait_for(ready.wait(), 20)
    payload = p.encode_client_event(p.UserMessage(text="bench", audio=False))
    api_grant = _grant(ws_url, tokens["user-api"], "user-api")

    async with AgentSession(grant=api_grant, text_only=True) as api:

        async def one(kind: str, n: int) -> float:
            started = time.perf_counter()
            if kind == SENDERS[0]:
                await api.send_text(f"bench {n}")
            elif kind == SENDERS[1]:
                session.send_text(f"bench {n}")
            else:
                await bare.local_participant.publish_data(payload, topic=p.TOPIC_CLIENT_EVENT)
            identity, arrived = await asyncio.wait_for(arrivals.get(), 10)
            assert identity == IDENTITIES[kind], (identity, kind)
            return arrived - started

        results: dict[str, list[float]] = {name: [] for name in SENDERS}
        for n in range(WARMUP + TRIALS):
            order = SENDERS[n % 3 :] + SENDERS[: n % 3]
            for kind in order:
                took = await one(kind, n) * 1000
                if n >= WARMUP:
                    results[kind].append(took)
    session.hangup()
    await asyncio.wait_for(run, 10)
    await bare.disconnect()
    return results


async def _measure() -> dict[str, list[float]]:
    """The sim, the agent and the senders on one event loop."""
    async with SimServer() as server:
        arrivals: asyncio.Queue[tuple[str, float]] = asyncio.Queue()
        agent = rtc.Room()

        def on_data(packet: rtc.DataPacket) -> None:
            if packet.topic == p.TOPIC_CLIENT_EVENT and packet.participant is not None:
                arrivals.put_nowait((packet.participant.identity, time.perf_counter()))

        agent.on("data_received", on_data)
        await agent.connect(server.ws_url, server.mint_token(ROOM, "agent", kind="agent"))
        await agent.local_participant.set_attributes({p.ATTR_AGENT_STATE: "listening"})
        tokens = {name: server.mint_token(ROOM, name) for name in IDENTITIES.values()}
        try:
            return await _senders(server.ws_url, tokens, arrivals)
        finally:
            await agent.disconnect()


async def _measure_agent_process() -> dict[str, list[float]]:
    """The sim and the agent in a child process (see bench/agent_process.py)."""
    agent = await agent_process.start(list(IDENTITIES.values()))
    try:
        return await _senders(agent.ws_url, agent.tokens, agent.arrivals)
    finally:
        await agent.close()


def _import_ms(code: str) -> list[float]:
    times = []
    for _ in range(IMPORT_RUNS):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append((time.perf_counter() - started) * 1000)
    return times


def _table(results: dict[str, list[float]]) -> None:
    print("| sender | median ms | p95 ms | max ms |")
    print("|---|---:|---:|---:|")
    for name, values in results.items():
        print(
            f"| {name} | {statistics.median(values):.2f} | {_percentile(values, 0.95):.2f} | "
            f"{max(values):.2f} |"
        )
    bare = statistics.median(results[SENDERS[2]])
    api = statistics.median(results[SENDERS[0]])
    engine = statistics.median(results[SENDERS[1]])
    print()
    print(
        f"Ratio of medians: AgentSession / bare **{api / bare:.2f}**, "
        f"Session / bare **{engine / bare:.2f}**, AgentSession / Session "
        f"**{api / engine:.2f}**."
    )


def main() -> None:
    """Measure and print the markdown section."""
    load_before = os.getloadavg()[0]
    one = asyncio.run(_measure())
    apart = asyncio.run(_measure_agent_process())
    load_after = os.getloadavg()[0]
    imports = {
        "python -c pass": _import_ms("pass"),
        "import fishtalk": _import_ms("import fishtalk"),
        "from fishtalk import AgentSession": _import_ms("from fishtalk import AgentSession"),
    }
    print("## agent_session")
    print(
        "<!-- lead: A typed turn through `AgentSession.send_text` against `Session.send_text` "
        "and bare `publish_data`, until the agent receives it. -->"
    )
    print()
    for results, label in ((one, "sim in the same process"), (apart, "sim in its own process")):
        api, engine = (statistics.median(results[sender]) for sender in SENDERS[:2])
        print(
            f"<!-- summary: typed turn, `AgentSession` ({label}) | {api:.2f} ms | "
            f"`Session` {engine:.2f} ms | {api / engine:.2f}x | ≤1.05x -->"
        )
    print()
    print(
        f"A typed turn from the call until the agent's `data_received` fires, {TRIALS} trials "
        "each after a warm-up, rotating senders, same sim, same agent: "
        "`await AgentSession.send_text` (the Python API), `Session.send_text` (the engine "
        "under it) and the bare SDK `publish_data` of the same bytes. Two set-ups, as in "
        "*session*: the sim and the agent on the senders' loop, and in a process of their own."
    )
    print()
    print("One process (sim, agent and senders on one loop):")
    print()
    _table(one)
    print()
    print("Sim and agent in their own process:")
    print()
    _table(apart)
    print()
    print(
        f"Load average (1 min) on this 2-core machine: {load_before:.1f} before, "
        f"{load_after:.1f} after."
    )
    print()
    print(f"Wall time of a fresh interpreter, median of {IMPORT_RUNS} runs:")
    print()
    print("| command | median ms |")
    print("|---|---:|")
    for name, values in imports.items():
        print(f"| `{name}` | {statistics.median(values):.1f} |")


if __name__ == "__main__":
    sys.exit(main())
