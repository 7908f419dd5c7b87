"""Heard latency on the sim, as fishtalk measures it, with injected think times.

The real session (:class:`fishtalk.session.Session`, audio on the virtual PulseAudio
speaker and mic) talks to the sim agent. For each injected think time (the sim agent's
``think_seconds``: how long it shows ``thinking`` before its reply) it sends typed turns
one after another, each once the previous reply is over, and reads the turn's waterfall
from ``state.latency``:

* heard: end of the user's turn (the publish) to the first audible agent sample leaving
  the speaker (handed to the device + the device's reported output latency);
* heard minus think: what is not injected (the agent's own steps, the network, Opus and
  the jitter buffer, the client, the device);
* first text: end of the turn to the agent's first transcript chunk;
* client share: first audible agent frame received to handed to the device, the part
  fishtalk itself adds (its target: one 10 ms frame plus the device block).

p50 and p95 by the nearest-rank method (:func:`fishtalk.conversation.percentile`).
Needs the private network namespace and PulseAudio::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/bench_latency.py \
        [--turns 20] [--think 0 0.3 0.8]

Prints one markdown section.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fishtalk.conversation import State, Waterfall
from fishtalk.conversation.latency import percentile
from fishtalk.testing.virtual_audio import MIC, SPEAKER, virtual_audio

TURN_WAIT = 30.0


@dataclass
class Row:
    think: float
    turns: list[Waterfall]
    unanswered: int
    """Turns the sim did not answer in time (the row stops at the first)."""

    def values(self, pick: Callable[[Waterfall], float | None]) -> list[float]:
        return [v for v in (pick(t) for t in self.turns) if v is not None]


async def _until(state: Callable[[], State], predicate: Callable[[State], Any]) -> State:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TURN_WAIT
    while not predicate(state()):
        if loop.time() > deadline:
            raise TimeoutError("the sim did not answer in time")
        await asyncio.sleep(0.01)
    return state()


async def measure(think: float, turns: int) -> Row:
    """``turns`` typed turns against the sim agent thinking ``think`` s."""
    from fishtalk.config import load_settings
    from fishtalk.launch import build_session
    from fishtalk.paths import CONFIG_PATH_ENV
    from fishtalk.sim import run_sim
    from fishtalk.sim.fish.voice import ToneVoice

    overrides = {"greeting": "", "idle_seconds": 0, "voice": "tones", "think_seconds": think}
    async with run_sim("converse", voice=ToneVoice(), agent_overrides=overrides) as sim:
        settings = load_settings(
            env={CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"},
            overrides={
                "api.url": sim.api_url,
                "api.api_key": sim.dev_key,
                "session.agent_id": "converse",
                "audio.input_device": MIC,
                "audio.output_device": SPEAKER,
            },
        )
        session = build_session(settings)
        run = asyncio.create_task(session.run())
        measured: list[Waterfall] = []
        try:

            def now() -> State:
                return session.state

            def ready(s: State) -> bool:
                return s.status == "connected" and s.agent_ready and s.agent_state == "listening"

            await _until(now, ready)
            for n in range(1, turns + 1):
                session.send_text(f"turn {n}")
                try:
                    state = await _until(now, _closed(n))
                    await _until(now, lambda s: s.agent_state == "listening")
                    await _quiet(session)
                except TimeoutError:
                    break
                measured.append(state.latency.turns[n - 1])
        finally:
            session.hangup()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(run, 15)
            if not run.done():
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await run
        return Row(think, measured, turns - len(measured))


async def _quiet(session: Any, seconds: float = 0.3) -> None:
    """Until the speaker has been silent for ``seconds`` (the last reply's audio played):
    a turn sent earlier would take that reply's tail for its own first audio."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TURN_WAIT
    quiet_since: float | None = None
    while True:
        now = loop.time()
        if session.audio_levels().agent_peak > 1e-3:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= seconds:
            return
        if now > deadline:
            raise TimeoutError("the agent's audio never went quiet")
        await asyncio.sleep(0.02)


def _closed(n: int) -> Callable[[State], bool]:
    def check(s: State) -> bool:
        return len(s.latency.turns) >= n

    return check


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value * 1000:.0f}"


def _p(values: Sequence[float], q: float) -> float | None:
    return percentile(values, q)


async def main(thinks: Sequence[float], turns: int) -> str:
    load_before = os.getloadavg()
    rows = [await measure(think, turns) for think in thinks]
    load_after = os.getloadavg()
    lines = [
        "## Heard latency (sim agent, virtual devices)",
        "",
        f"The real session against the sim agent, {turns} typed turns per row, each sent once "
        "the previous reply was over and 0.3 s of silence had left the speaker; audio on "
        "the virtual PulseAudio speaker (10 ms device "
        "blocks). The sim agent's think time is injected (`think_seconds`); its voice is "
        "tones, its first audio frame goes out with its first transcript chunk. Heard = "
        "publish of the turn to the first audible agent sample leaving the speaker (handed "
        "to the device + reported output latency). Client share = that frame received to "
        "handed to the device. Milliseconds, nearest-rank percentiles over the measured "
        f"turns; one run on a shared machine (load average, 1 min: {load_before[0]:.1f} "
        f"before, {load_after[0]:.1f} after).",
        "",
        "| think | turns measured | heard p50 | heard p95 | heard − think p50 | "
        "first text p50 | client share p50 | client share p95 | output latency p50 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        heard = row.values(lambda t: t.heard)
        first = row.values(lambda t: t.first_text)
        share = row.values(lambda t: t.client_share)
        output = row.values(lambda t: t.output_latency)
        over = [h - row.think for h in heard]
        lines.append(
            f"| {row.think * 1000:.0f} | {len(heard)} of {turns} | {_ms(_p(heard, 0.5))} | "
            f"{_ms(_p(heard, 0.95))} | {_ms(_p(over, 0.5))} | {_ms(_p(first, 0.5))} | "
            f"{_ms(_p(share, 0.5))} | {_ms(_p(share, 0.95))} | {_ms(_p(output, 0.5))} |"
        )
    incomplete = {
        reason: sum(1 for row in rows for t in row.turns if t.incomplete == reason)
        for reason in {t.incomplete for row in rows for t in row.turns if t.incomplete}
    }
    rtts = [t.rtt for row in rows for t in row.turns if t.rtt is not None]
    missing = ", ".join(f"{n} {why}" for why, n in sorted(incomplete.items())) or "none"
    unanswered = sum(r.unanswered for r in rows)
    if unanswered:
        missing += f"; {unanswered} not answered in time"
    lines += [
        "",
        f"Turns without a heard figure: {missing}. Network round trip (RTC stats, loopback "
        f"in a namespace) p50 {_ms(_p(rtts, 0.5))} ms.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--think", type=float, nargs="+", default=[0.0, 0.3, 0.8])
    args = parser.parse_args()
    with virtual_audio():
        print(asyncio.run(main(args.think, args.turns)))
