"""The measures of one reply's audio on frames made here (no network): each figure is the
injected value within one 10 ms frame; and the one wording of what is wrong."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fishtalk.core import conversation as conv
from fishtalk.core.conversation.reply_audio import DEFAULT_BUDGETS, problems, worst
from fishtalk.engine.replyaudio import ReceivedFrame, ReplyClip, measure
from fishtalk.engine.replyaudio.measure import overlap, warm_up

warm_up()  # as a session keeping reply audio does before it connects

RATE = 48_000
FRAME = 480
STEP = FRAME / RATE


def _clip(pattern: str, *, amplitude: float = 0.25, start: float = 100.0) -> ReplyClip:
    """``#`` an audible 10 ms frame (a 1 kHz sine), ``.`` a silent one; arriving in order."""
    t = np.arange(FRAME) / RATE
    tone = np.clip(np.sin(2 * math.pi * 1000 * t) * amplitude * 32767, -32768, 32767)
    loud = tone.astype(np.int16).tobytes()
    quiet = np.zeros(FRAME, np.int16).tobytes()
    frames = [
        ReceivedFrame(start + (i + 1) * STEP, loud if c == "#" else quiet, c == "#", True)
        for i, c in enumerate(pattern)
    ]
    return ReplyClip(1, ["seg"], RATE, 1, frames)


def test_leading_silence_gaps_and_duration_to_the_frame() -> None:
    clip = _clip("." * 30 + "#" * 50 + "." * 84 + "#" * 50 + "." * 20 + "#" * 60 + "." * 10)
    report = measure(clip, 2, has_text=True, first_text_at=100.0, turn_ended_at=99.5)
    assert report.leading_from_text == pytest.approx(0.30, abs=STEP)
    assert report.leading_from_turn == pytest.approx(0.80, abs=STEP)
    assert report.longest_gap == pytest.approx(0.84, abs=1e-9)
    assert report.longest_gap_at == pytest.approx(0.50, abs=1e-9)
    assert report.gaps == ((0.5, 0.84),)
    assert report.duration == pytest.approx(2.64, abs=1e-9)
    assert report.mismatch is None
    assert [p.text for p in problems(report, conv.AudioBudgets(max_gap=0.5))] == [
        "reply 2: gap of 0.84 s at 0.50 s into the reply (max_gap 0.5)"
    ]


def test_clipping_and_loudness() -> None:
    clean = measure(_clip("#" * 100), 1, has_text=True, first_text_at=None, turn_ended_at=None)
    assert clean.clipping == 0.0
    # A 1 kHz sine at -12 dBFS peak: BS.1770 gives about -15 LUFS (-12 dB less 3 dB RMS).
    assert clean.loudness == pytest.approx(-15.0, abs=0.5)
    hot = measure(
        _clip("#" * 100, amplitude=4.0), 1, has_text=True, first_text_at=None, turn_ended_at=None
    )
    assert hot.clipping > 0.5
    # A stall (or a long pause) in a clipped voice leaves it as clipped.
    stalled = measure(
        _clip("#" * 50 + "." * 300 + "#" * 50, amplitude=4.0),
        1,
        has_text=True,
        first_text_at=None,
        turn_ended_at=None,
    )
    assert stalled.clipping == pytest.approx(hot.clipping)
    quiet = measure(
        _clip("#" * 100, amplitude=0.25 / 31.62),
        1,
        has_text=True,
        first_text_at=None,
        turn_ended_at=None,
    )
    assert quiet.loudness is not None
    assert clean.loudness is not None
    assert clean.loudness - quiet.loudness == pytest.approx(30.0, abs=0.1)


def test_mismatches_and_silent_replies() -> None:
    silent = measure(_clip("." * 50), 3, has_text=True, first_text_at=None, turn_ended_at=None)
    assert silent.mismatch == "transcript_without_audio"
    assert not silent.audible
    cut = measure(
        _clip("." * 50), 3, has_text=True, cut=True, first_text_at=None, turn_ended_at=None
    )
    assert cut.mismatch is None
    clip = _clip("#" * 50)
    clip.segment_ids.clear()
    orphan = measure(clip, 4, has_text=False, first_text_at=None, turn_ended_at=None)
    assert orphan.mismatch == "audio_without_transcript"
    assert [p.check for p in problems(silent, conv.AudioBudgets(no_silent_replies=True))] == [
        "no_silent_replies"
    ]
    assert [p.check for p in problems(orphan, conv.AudioBudgets(no_mismatch=True))] == [
        "no_mismatch"
    ]
    found = worst([silent, orphan])
    assert found is not None
    assert found.reply in (3, 4)


def test_talk_over_and_the_interrupt() -> None:
    clip = _clip("#" * 100, start=10.0)  # audible from 10.0 to 11.0
    report = measure(
        clip,
        1,
        has_text=True,
        first_text_at=None,
        turn_ended_at=None,
        user_speech=[(9.0, 10.25), (10.5, 10.6)],
        interrupts=[10.4],
    )
    assert report.talk_over == pytest.approx(0.35, abs=1e-6)
    assert report.interrupted_at == 10.4
    assert report.after_interrupt == pytest.approx(0.6, abs=1e-6)
    assert [p.check for p in problems(report, DEFAULT_BUDGETS)] == []
    assert overlap([(0.0, 1.0)], [(0.5, 2.0)]) == 0.5
    assert problems(report, conv.AudioBudgets(stops_within=0.5))[0].text == (
        "reply 1: kept talking 0.60 s after the interrupt (stops_within 0.5)"
    )


def test_the_event_reads_back_from_json() -> None:
    from fishtalk.core.events import event_from_json

    report = measure(
        _clip("#" * 10 + "." * 40 + "#" * 10),
        1,
        has_text=True,
        first_text_at=100.0,
        turn_ended_at=None,
    )
    event = conv.ReplyAudio(report, at=101.0)
    assert event_from_json(event.to_json()) == event
