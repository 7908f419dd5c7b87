"""Heard-latency marks end to end: the real session, the sim agent, virtual devices.

The session feeds conv.LatencyMark inputs for what only IO sees; these tests read the
marks themselves (through an observer, which sees every input before it is reduced), not
what the reducer makes of them. Needs the network namespace and PulseAudio::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/audio -q
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict

import pytest
from audio_signals import tone
from support.virtual_audio import MIC, SPEAKER, VirtualAudio

from fishtalk.cli.config import load_settings
from fishtalk.cli.launch import build_session
from fishtalk.cli.settings import Settings
from fishtalk.core import conversation as conv
from fishtalk.engine import observe
from fishtalk.engine.paths import CONFIG_PATH_ENV
from fishtalk.engine.session import Session
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.fish.speech import ECHO_TAIL
from fishtalk.sim.runner import run_sim

pytestmark = [pytest.mark.webrtc, pytest.mark.audio, pytest.mark.timeout(120)]

WAIT = 20.0

_TALKER = parse_scenario(
    """
    then = "converse"
    [agent]
    greeting = ""
    voice = "tones"
    idle_seconds = 0
    """,
    name="talker",
)


class MarkLog:
    """Every LatencyMark the session feeds, in order, with a wake-up per new mark."""

    def __init__(self, session: Session) -> None:
        self.marks: list[conv.LatencyMark] = []
        self._changed = asyncio.Event()
        session.add_observer(self._observe)

    def _observe(self, item: observe.Observation) -> None:
        if isinstance(item, conv.LatencyMark):
            self.marks.append(item)
            self._changed.set()

    def of(self, kind: str) -> list[conv.LatencyMark]:
        return [m for m in self.marks if m.kind == kind]

    async def wait(self, kind: str, count: int = 1, within: float = WAIT) -> conv.LatencyMark:
        """The ``count``-th mark of ``kind`` (waiting for it, bounded)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while len(self.of(kind)) < count:
            left = deadline - loop.time()
            if left <= 0:
                pytest.fail(f"no {kind} mark #{count} within {within} s; marks: {self.marks}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)
        return self.of(kind)[count - 1]


def _settings(sim_url: str, dev_key: str, **session: object) -> Settings:
    overrides: dict[str, object] = {
        "api.url": sim_url,
        "api.api_key": dev_key,
        "session.agent_id": "talker",
        "audio.input_device": MIC,
        "audio.output_device": SPEAKER,
    }
    overrides.update({f"session.{k}": v for k, v in session.items()})
    return load_settings(env={CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"}, overrides=overrides)


async def _ready(session: Session) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not (session.state.status == "connected" and session.state.agent_ready):
        if loop.time() > deadline:
            pytest.fail(f"the agent was not ready in time; state: {session.state}")
        await asyncio.sleep(0.02)


async def test_a_typed_and_a_spoken_turn_and_an_interrupt_leave_their_marks_in_order(
    vaudio: VirtualAudio,
) -> None:
    async with run_sim(scenarios={"talker": _TALKER}) as sim:
        session = build_session(_settings(sim.api_url, sim.dev_key))
        log = MarkLog(session)
        run = asyncio.create_task(session.run())
        try:
            await _ready(session)

            # A typed turn asking for a text-only reply: its publish is marked, and nothing
            # waits for a first audio frame.
            session.send_text("quietly", audio=False)
            await log.wait("typed_sent")
            await _until_said(session, "You said: quietly")
            await _until_quiet(session)
            assert [m.kind for m in log.marks if m.kind != "rtt"] == ["typed_sent"]

            # A typed turn: the publish, then the reply's first audible frame, then the
            # moment it was handed to the speaker with the device's latency. Its reply (the
            # sim repeats the words, a few seconds of voice) outlasts the sound made over it
            # below by far, also on the sim's side, which finishes sending before the
            # speaker finishes playing: the sim must hear all of that sound over its voice.
            before = time.monotonic()
            session.send_text("hello there, " + " ".join(["and", "so", "on"] * 4))
            heard = await log.wait("audio_heard")
            typed = log.of("typed_sent")[1:]
            received = log.of("audio_received")
            assert len(typed) == len(received) == 1
            assert before <= typed[0].at <= received[0].at <= heard.at <= time.monotonic()
            assert heard.value is not None
            assert 0.0 < heard.value < 0.5
            assert log.marks.index(typed[0]) < log.marks.index(received[0])
            assert log.marks.index(received[0]) < log.marks.index(heard)

            # The user speaks over the reply, without interrupting: what keeps playing is
            # the earlier reply, not an answer (the sim does not answer sound over its own
            # voice), so this turn marks its end and no first audio frame.
            feeder = vaudio.feed_mic(tone(440, 0.5, amplitude=0.3).tobytes())
            try:
                over = await log.wait("speech_ended")
            finally:
                await asyncio.to_thread(feeder.wait, 10)
            assert session.state.agent_state == "speaking"  # it did talk over the reply
            assert over.at > heard.at
            await _until_quiet(session)
            assert len(log.of("audio_received")) == 1

            # The network round trip, from the SDK's RTC stats.
            rtt = await log.wait("rtt")
            assert rtt.value is not None
            assert 0.0 < rtt.value < 1.0

            # A spoken turn: a tone into the virtual mic; its end is found by the detector.
            # Only once the reply is over (a turn that ends while the agent's audio still
            # plays would be marked at that audio), and past the sim's echo tail (it does
            # not answer sound that starts just after its own voice).
            await _until_quiet(session)
            await asyncio.sleep(ECHO_TAIL + 0.1)
            feeder = vaudio.feed_mic(tone(440, 1.0, amplitude=0.3).tobytes())
            try:
                spoken = await log.wait("speech_ended", 2)
            finally:
                await asyncio.to_thread(feeder.wait, 10)
            second_heard = await log.wait("audio_heard", 2)
            second_received = log.of("audio_received")[1]
            assert heard.at < spoken.at < second_received.at <= second_heard.at
            assert log.marks.index(spoken) < log.marks.index(second_received)

            # An interrupt during a long reply: the local flush and the wire's end.
            await _until_quiet(session)
            session.send_text(" ".join(["word"] * 40))
            await log.wait("audio_heard", 3)
            pressed = time.monotonic()
            session.interrupt()
            flushed = await log.wait("interrupt_flushed")
            stopped = await log.wait("interrupt_wire_stopped")
            assert pressed < flushed.at
            assert pressed <= stopped.at <= time.monotonic()
            # Each kind once per event, never per frame.
            counts: dict[str, int] = defaultdict(int)
            for mark in log.marks:
                counts[mark.kind] += 1
            assert counts["interrupt_flushed"] == counts["interrupt_wire_stopped"] == 1
            assert counts["speech_ended"] == 2
            assert counts["audio_received"] == counts["audio_heard"] == 3

            print(
                "typed: heard latency "
                f"{(heard.at + heard.value - typed[0].at) * 1000:.0f} ms, client share "
                f"{(heard.at - received[0].at) * 1000:.1f} ms, output latency "
                f"{heard.value * 1000:.1f} ms; spoken: heard latency "
                f"{(second_heard.at + (second_heard.value or 0) - spoken.at) * 1000:.0f} ms; "
                f"rtt {rtt.value * 1000:.1f} ms; interrupt: flushed "
                f"{(flushed.at - pressed) * 1000:.1f} ms, wire stopped "
                f"{(stopped.at - pressed) * 1000:.1f} ms after the press"
            )
            session.hangup()
            await asyncio.wait_for(run, 15)
        finally:
            if not run.done():
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await run


async def _until_said(session: Session, text: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not any(
        seg.role == "agent" and seg.final and not seg.open and text in seg.text
        for seg in session.state.transcript
    ):
        if loop.time() > deadline:
            pytest.fail(f"the agent never said {text!r}; state: {session.state}")
        await asyncio.sleep(0.02)


async def _until_quiet(session: Session) -> None:
    """Wait until the agent's reply is over (it listens again)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while session.state.mode != "listening":
        if loop.time() > deadline:
            pytest.fail(f"the agent kept talking; state: {session.state}")
        await asyncio.sleep(0.02)
