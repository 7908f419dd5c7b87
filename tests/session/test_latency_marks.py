"""Heard-latency marks of a text-only session against the sim agent: the typed turn's
publish and the network round trip are marked; nothing audio is (no device plays)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from session_harness import WAIT, until

from fishtalk.cli.launch import build_session
from fishtalk.cli.settings import Settings
from fishtalk.core import conversation as conv
from fishtalk.engine import observe
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle

pytestmark = pytest.mark.webrtc

AUDIO_MARKS = {
    "speech_ended",
    "audio_received",
    "audio_heard",
    "interrupt_flushed",
    "interrupt_wire_stopped",
}

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


def _settings(sim: SimHandle) -> Settings:
    return Settings.model_validate(
        {
            "api": {"url": sim.api_url, "api_key": sim.dev_key},
            "session": {"agent_id": "talker", "text_only": True},
        }
    )


async def test_a_text_only_session_marks_the_publish_and_the_round_trip_only() -> None:
    from fishtalk.sim.runner import run_sim

    async with run_sim(scenarios={"talker": _TALKER}) as sim:
        session = build_session(_settings(sim))
        marks: list[conv.LatencyMark] = []

        def collect(item: observe.Observation) -> None:
            if isinstance(item, conv.LatencyMark):
                marks.append(item)

        session.add_observer(collect)
        run = asyncio.ensure_future(session.run())
        try:
            await until(session, lambda s: s.status == "connected" and s.agent_ready)
            session.send_text("hello")
            await until(
                session,
                lambda s: any(
                    seg.role == "agent" and seg.final and "You said" in seg.text
                    for seg in s.transcript
                ),
            )
            await until(session, lambda s: s.mode == "listening")
            # The round trip comes a second after the connect: by then the reply's audio
            # (none, text-only) would have been marked too.
            await until(session, lambda _: any(m.kind == "rtt" for m in marks))
            session.interrupt()
            session.hangup()
            await asyncio.wait_for(run, WAIT)
        finally:
            if not run.done():
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await run
    kinds = [m.kind for m in marks]
    assert kinds.count("typed_sent") == 1
    assert not AUDIO_MARKS & set(kinds), marks
    rtt = next(m for m in marks if m.kind == "rtt")
    assert rtt.value is not None
    assert 0.0 < rtt.value < 1.0
