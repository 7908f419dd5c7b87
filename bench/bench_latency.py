"""Heard latency on the sim, as fishtalk measures it, with injected think times.

The real session (:class:`fishtalk.engine.session.Session`, audio on the virtual PulseAudio
speaker and mic) talks to the sim agent, which runs in a process of its own
(``fishtalk sim serve --agent-setting ...``, as a remote agent would). For each injected
think time (the sim agent's ``think_seconds``: how long it shows ``thinking`` before its
reply) it sends typed turns one after another, each once the previous reply is over, and
reads each turn's waterfall from ``state.latency``; then a row of spoken turns (a tone
played into the virtual mic). Per row:

* heard: end of the user's turn (the publish, or the end of speech) to the first audible
  agent sample leaving the speaker (handed to the device + its reported output latency);
* heard minus injected: what is not injected (the agent's own steps, the network, Opus
  and the jitter buffer, the client, the device);
* first text: end of the turn to the agent's first transcript chunk;
* voice: first transcript chunk to first audible agent audio received;
* client share: first audible agent frame received to handed to the device, the part
  fishtalk itself adds (its target: one 10 ms frame plus the device block).

p50 and p95 by the nearest-rank method (:func:`fishtalk.core.conversation.percentile`).
Needs the private network namespace and PulseAudio::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/bench_latency.py \
        [--turns 20] [--think 0 0.3 0.8] [--spoken 10]

Prints one markdown section.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from support.virtual_audio import MIC, SPEAKER, VirtualAudio, virtual_audio

from fishtalk.core.conversation import State, Waterfall
from fishtalk.core.conversation.latency import percentile
from fishtalk.sim.fish.endpoint import DEFAULT_DEV_KEY

TURN_WAIT = 30.0


@dataclass
class Row:
    label: str
    think: float
    """Injected think time, seconds."""
    before_think: float
    """What else the sim waits for before it thinks (its endpointing for spoken turns)."""
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


@contextlib.asynccontextmanager
async def _sim_serve(agent_settings: dict[str, object]) -> AsyncIterator[str]:
    """``fishtalk sim serve`` in a process of its own (as a remote agent would be: its
    relay and agent do not share the session's event loop); yields its API URL."""
    args = [f"--agent-setting={key}={value}" for key, value in agent_settings.items()]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "fishtalk",
        "sim",
        "serve",
        "--port",
        "0",
        "--scenario",
        "converse",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    try:
        api_url = ""
        while not api_url:
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            if not line:
                raise RuntimeError("fishtalk sim serve did not start")
            if "API URL:" in line:
                api_url = line.split("API URL:")[1].strip()
        yield api_url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(proc.wait(), 20)
        except TimeoutError:
            proc.kill()
            await proc.wait()


SPEECH_SECONDS = 0.8
"""Length of the tone played into the virtual mic for a spoken turn."""


async def measure(think: float, turns: int, speak: VirtualAudio | None = None) -> Row:
    """``turns`` turns against the sim agent thinking ``think`` s: typed, or with
    ``speak``, spoken (a tone played into its virtual mic)."""
    from fishtalk.cli.config import load_settings
    from fishtalk.cli.launch import build_session
    from fishtalk.engine.paths import CONFIG_PATH_ENV
    from fishtalk.sim.fish.voice import silence, tone

    overrides = {"greeting": "", "idle_seconds": 0, "voice": "tones", "think_seconds": think}
    speech = np.concatenate([tone(440.0, SPEECH_SECONDS, amplitude=0.3), silence(0.2)])
    async with _sim_serve(overrides) as api_url:
        settings = load_settings(
            env={CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"},
            overrides={
                "api.url": api_url,
                "api.api_key": DEFAULT_DEV_KEY,
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
                feeder = None
                if speak is None:
                    session.send_text(f"turn {n}")
                else:
                    feeder = speak.feed_mic(speech.tobytes())
                try:
                    state = await _until(now, _closed(n))
                    await _until(now, lambda s: s.agent_state == "listening")
                    await _quiet(session)
                except TimeoutError:
                    break
                finally:
                    if feeder is not None:
                        await asyncio.to_thread(feeder.wait, 10)
                measured.append(state.latency.turns[n - 1])
        finally:
            session.hangup()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(run, 15)
            if not run.done():
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await run
    if speak is None:
        return Row("typed", think, 0.0, measured, turns - len(measured))
    return Row("spoken", think, _endpointing(), measured, turns - len(measured))


async def _quiet(session: Any, seconds: float = 0.3) -> None:
    """Until the speaker has been silent for ``seconds`` (the last reply's audio played):
    each turn then measures one reply, not the rest of the one before."""
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


def _endpointing() -> float:
    from fishtalk.sim.fish.voice import SpeechDetector

    return SpeechDetector().hangover


def _final(t: Waterfall) -> float | None:
    """Spoken turns: end of speech to the user's final transcript (the mic's trip and the
    sim's endpointing)."""
    return None if t.user_final_at is None else t.user_final_at - t.user_ended_at


def _gap(t: Waterfall) -> float | None:
    """First transcript chunk to first audible audio received (the voice's trip)."""
    if t.first_text_at is None or t.audio_received_at is None:
        return None
    return t.audio_received_at - t.first_text_at


async def main(thinks: Sequence[float], turns: int, spoken: int, va: VirtualAudio) -> str:
    load_before = os.getloadavg()
    rows = [await measure(think, turns) for think in thinks]
    if spoken:
        rows.append(await measure(SPOKEN_THINK, spoken, speak=va))
    load_after = os.getloadavg()
    first_row = rows[0]
    injected = first_row.think + first_row.before_think
    lines = [
        "## Heard latency (sim agent, virtual devices)",
        "<!-- lead: Heard latency of typed and spoken turns through the virtual speaker and mic, "
        "against the think time injected into the sim agent. -->",
        "",
        f"<!-- summary: heard p50, {first_row.label} turn, think {first_row.think * 1000:.0f} ms "
        f"| {_ms(_p(first_row.values(lambda t: t.heard), 0.5))} ms | injected "
        f"{injected * 1000:.0f} ms | – | – -->",
        "",
        "The real session against the sim agent (`fishtalk sim serve` in its own process); "
        "each turn starts once the previous reply "
        "was over and 0.3 s of silence had left the speaker. Audio on the virtual PulseAudio "
        "speaker and mic (10 ms device blocks). The sim agent's think time is injected "
        "(`think_seconds`); its voice is tones, its first audio frame goes out with its first "
        "transcript chunk. Typed turns: heard runs from the publish of the turn. Spoken "
        f"turns: a {SPEECH_SECONDS:.1f} s tone into the virtual mic; heard runs from the end "
        "of speech found by the session's detector, and the sim waits for "
        f"{_endpointing():.1f} s of quiet (its endpointing) before it thinks, so that is "
        "injected too. "
        "Heard ends when the first audible agent sample leaves the speaker (handed to the "
        "device + reported output latency). Columns: heard − injected = what is not "
        "injected; final transcript = end of speech to the user's final transcript (the "
        "mic's trip to the sim and its endpointing); voice = first transcript chunk to "
        "first audible audio received (the "
        "agent's audio through Opus, the sim's relay and the jitter buffer); client share = "
        "that frame received to handed to the device (fishtalk's own part; its target is one "
        "10 ms frame plus the device block). Milliseconds, nearest-rank percentiles over the "
        f"measured turns; one run on a shared 2-core machine (load average, 1 min: "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after).",
        "",
        "| turns | think | measured | heard p50 | heard p95 | heard − injected p50 | "
        "final transcript p50 | first text p50 | voice p50 | client share p50 | "
        "client share p95 | output latency p50 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        heard = row.values(lambda t: t.heard)
        final = row.values(_final)
        first = row.values(lambda t: t.first_text)
        voice = row.values(_gap)
        share = row.values(lambda t: t.client_share)
        output = row.values(lambda t: t.output_latency)
        over = [h - row.think - row.before_think for h in heard]
        total = len(row.turns) + row.unanswered
        lines.append(
            f"| {row.label} | {row.think * 1000:.0f} | {len(heard)} of {total} | "
            f"{_ms(_p(heard, 0.5))} | {_ms(_p(heard, 0.95))} | {_ms(_p(over, 0.5))} | "
            f"{_ms(_p(final, 0.5))} | {_ms(_p(first, 0.5))} | {_ms(_p(voice, 0.5))} | "
            f"{_ms(_p(share, 0.5))} | "
            f"{_ms(_p(share, 0.95))} | {_ms(_p(output, 0.5))} |"
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


SPOKEN_THINK = 0.3
"""Think time of the spoken row."""


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20, help="typed turns per think time")
    parser.add_argument("--think", type=float, nargs="+", default=[0.0, 0.3, 0.8])
    parser.add_argument("--spoken", type=int, default=10, help="spoken turns (0: none)")
    args = parser.parse_args()
    with virtual_audio() as va:
        print(asyncio.run(main(args.think, args.turns, args.spoken, va)))
