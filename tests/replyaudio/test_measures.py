"""Each reply's audio measures against defects the sim injects (issue 29): the figures
match the injected values within one frame of the sim's voice (20 ms), and the reply's
``reply_audio`` event carries them (JSON and back)."""

from __future__ import annotations

import asyncio

import pytest

from fishtalk import AgentSession
from fishtalk.core import conversation as conv
from fishtalk.core.conversation.reply_audio import problems
from fishtalk.core.events import event_from_json
from fishtalk.sim.fish.voice import SAMPLE_RATE, ToneVoice, split_words
from fishtalk.sim.runner import SimInfo
from fishtalk.workbench.agenttest.wavmic import WavMicrophone

from .conftest import LINE, WAIT

pytestmark = pytest.mark.webrtc

FRAME = 0.02
"""The sim's audio chunk: the resolution a figure is checked to."""
TIME_STRETCH = 0.1
"""How much shorter a silence may reach the client than it was sent: the receiver's jitter
buffer (libwebrtc's NetEq) time-compresses ("accelerates") playout to drain audio that
arrived in a burst, and does so mostly in silence. CI saw a 0.655 s stall received as
0.63 s after a stalled moment; unloaded, the figures hold to the frame (test_measure_pure)."""


async def _reply(sim: SimInfo, agent: str, *, interrupt: bool = False) -> conv.ReplyAudioReport:
    async with AgentSession(
        agent, api_url=sim.api_url, api_key=sim.dev_key, audio=WavMicrophone(), reply_audio=True
    ) as session:
        # Wait for the agent to be in the call, as a person waits for it. A turn typed
        # sooner is queued and leaves as the agent joins, and the agent's first lines are
        # then its opening (issue 24's rule for a greeting that races a queued turn): these
        # agents neither greet nor think, so their reply would be taken for the opening.
        # Under load the agent's first state came after ``connected`` and did just that.
        if not session.state.agent_ready:
            await session.wait_for(lambda _e: session.state.agent_ready, WAIT)
        await session.send_text("go")
        if interrupt:
            await session.wait_for(
                lambda e: isinstance(e, conv.SegmentGrew) and e.segment.role == "agent", WAIT
            )
            await asyncio.sleep(0.3)  # into the reply's audio (what is measured is relative)
            session.interrupt()
        event = await session.wait_for(
            lambda e: isinstance(e, conv.ReplyAudio) and e.report.turn == 1, WAIT
        )
        assert isinstance(event, conv.ReplyAudio)
        assert event_from_json(event.to_json()) == event
        assert session.state.reply_audio[-1] == event.report
        return event.report


def _padded(samples: int) -> float:
    chunk = SAMPLE_RATE * 20 // 1000
    return (samples + (-samples) % chunk) / SAMPLE_RATE


async def test_a_clean_reply_has_no_problem(sim: SimInfo) -> None:
    report = await _reply(sim, "clean")
    assert report.audible
    assert report.mismatch is None
    assert report.clipping == 0.0
    assert report.talk_over == 0.0
    assert report.after_interrupt is None
    assert report.loudness is not None
    assert -30.0 < report.loudness < -5.0
    # Time budgets aside: a busy machine stalls the in-process sim's voice.
    signal = conv.AudioBudgets(max_clipping=0.01, no_silent_replies=True, no_mismatch=True)
    assert problems(report, signal) == []


async def test_a_gap_mid_reply_is_found_where_and_as_long_as_injected(sim: SimInfo) -> None:
    report = await _reply(sim, "gap")
    words = split_words(LINE)
    voice = ToneVoice()
    middle = len(words) // 2
    before = [voice.word_audio(w) for w in words[:middle]]
    # The stall follows the middle word's predecessor: its pause, padded to the chunk.
    pause = _padded(before[-1].size) - (before[-1].size / SAMPLE_RATE - 0.05)
    expected_gap = 0.6 + pause
    expected_at = sum(_padded(pcm.size) for pcm in before) - pause
    # The injected stall is there, no sooner and no shorter than put, to the frame, but for
    # what the receiver's jitter buffer may take out of silences (a busy machine may stall
    # the in-process sim too, which only adds silence).
    shortest = expected_gap - FRAME - TIME_STRETCH
    earliest = expected_at - FRAME - TIME_STRETCH  # the pauses before it may shrink too
    assert any(length >= shortest and at >= earliest for at, length in report.gaps), (
        expected_at,
        expected_gap,
        report.gaps,
    )
    assert report.longest_gap >= shortest
    text = [p.text for p in problems(report, conv.AudioBudgets(max_gap=0.5))]
    assert text == [
        f"reply {report.reply}: gap of {report.longest_gap:.2f} s at "
        f"{report.longest_gap_at:.2f} s into the reply (max_gap 0.5)"
    ]


async def test_silence_before_speech_is_at_least_what_was_injected(sim: SimInfo) -> None:
    late = await _reply(sim, "lead")
    # The sim writes the first word, waits 0.5 s, then sends its audio: the audio cannot
    # arrive sooner after the text than that, less the text's own trip (one frame here).
    assert late.leading_from_text is not None
    assert late.leading_from_text >= 0.5 - FRAME
    # ... nor sooner after the user's turn than the agent's think time plus that.
    assert late.leading_from_turn is not None
    assert late.leading_from_turn >= 0.1 + 0.5
    worded = problems(late, conv.AudioBudgets(max_leading_silence=0.3))
    assert [p.check for p in worded] == ["max_leading_silence"]


async def test_clipping_and_a_quiet_voice(sim: SimInfo) -> None:
    clean = await _reply(sim, "clean")
    loud = await _reply(sim, "loud")
    quiet = await _reply(sim, "quiet")
    # A square-ish wave through Opus: its peaks ring, and some samples reach full scale.
    assert loud.clipping > 0.02
    assert [p.check for p in problems(loud, conv.AudioBudgets(max_clipping=0.01))] == [
        "max_clipping"
    ]
    assert clean.loudness is not None
    assert quiet.loudness is not None
    # BS.1770 loudness is linear in gain: 30 dB quieter is 30 LU lower.
    assert abs(clean.loudness - quiet.loudness - 30.0) <= 0.5
    budgets = conv.AudioBudgets(loudness_range=(-26.0, -14.0))
    assert [p.check for p in problems(quiet, budgets)] == ["loudness_range"]


async def test_a_voice_that_goes_on_after_the_interrupt(sim: SimInfo) -> None:
    report = await _reply(sim, "stubborn", interrupt=True)
    assert report.interrupted_at is not None
    assert report.after_interrupt is not None
    # The sim hears the interrupt after it was sent, then goes on 1.0 s of real-time audio.
    assert report.after_interrupt >= 1.0 - FRAME
    worded = problems(report, conv.AudioBudgets(stops_within=0.5))
    assert worded[0].text.startswith(f"reply {report.reply}: kept talking ")
