"""Which reply a received frame belongs to (issue 29), on states from the reducer and frames
made here (no network): a line's audio pairs with its transcript however the audio lags
the text, the line is cut short and the audio stalls."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest

from fishtalk.core import conversation as c
from fishtalk.core.conversation.reply_audio import ReplyAudioReport
from fishtalk.core.protocol import ATTR_AGENT_STATE
from fishtalk.engine.replyaudio import ReplyAudio
from fishtalk.engine.replyaudio.reporter import ReplyReporter, measure_all

ME = "user-1"
AGENT = "agent"
RATE = 48_000
STEP = 0.01
_T = np.arange(480) / RATE
LOUD = (np.sin(2 * math.pi * 300 * _T) * 8000).astype(np.int16).tobytes()
QUIET = np.zeros(480, np.int16).tobytes()

Event = tuple[float, int, object]
"""(session time, tie-break order, an input for the reducer or ``"loud"``/``"quiet"``)."""


def _line(seg: str, opens: float, closes: float) -> list[Event]:
    stream = f"s-{seg}"
    return [
        (opens, 0, c.TranscriptStreamOpened(stream, seg, AGENT, False, opens)),
        (opens, 1, c.TranscriptStreamChunk(stream, seg, "You said: ", opens)),
        (closes, 0, c.TranscriptStreamClosed(stream, seg, closes, final=True)),
    ]


def _audio(start: float, seconds: float, stall: float) -> list[Event]:
    """``seconds`` of audible frames from ``start``, silent for ``stall`` halfway."""
    out: list[Event] = []
    n = round(seconds / STEP)
    at = start
    for i in range(n):
        if i == n // 2 and stall:
            for _ in range(round(stall / STEP)):
                at += STEP
                out.append((at, 2, "quiet"))
        at += STEP
        out.append((at, 2, "loud"))
    return out


def _session(lag: float, stall: float, interrupt_at: float | None) -> tuple[ReplyAudio, c.State]:
    """Two typed turns, each answered by one line; every line's audio arrives ``lag``
    after its text (stalling ``stall`` halfway); the second line is interrupted at
    ``interrupt_at`` (the audio goes on regardless, as a stubborn voice's does)."""
    events: list[Event] = [
        (1.0, 0, c.Connected(ME, 1.0)),
        (1.1, 0, c.AttributesChanged(AGENT, {ATTR_AGENT_STATE: "listening"}, 1.1)),
        (2.0, 0, c.SendText("go", 2.0)),
        *_line("a1", 2.2, 3.4),
        *_audio(2.2 + lag, 1.2, stall),
        (6.0, 0, c.SendText("again", 6.0)),
        *_line("a2", 6.2, 6.7),  # a short line: its text can close before its audio
        *_audio(6.2 + lag, 0.5, stall),
    ]
    if interrupt_at is not None:
        events.append((interrupt_at, 0, c.Interrupt(interrupt_at)))
    return _run(events)


def _run(
    events: list[Event],
    capture: ReplyAudio | None = None,
    tick: Callable[[c.State, float], object] | None = None,
) -> tuple[ReplyAudio, c.State]:
    """``events`` fed in time order to the reducer and ``capture``, with a silent frame
    every 10 ms where no audio was given (as the wire delivers); ``tick`` is called after
    each frame, as the session's media calls its reply reporter."""
    last = max(e[0] for e in events)
    # The wire delivers a frame every 10 ms, silent ones between the lines' audio.
    heard = {round(e[0] / STEP) for e in events if isinstance(e[2], str)}
    ticks = range(round(1.0 / STEP), round((last + 2.0) / STEP))
    events += [(i * STEP, 2, "quiet") for i in ticks if i not in heard]
    capture = capture or ReplyAudio()
    state = c.initial_state(spoken=True)
    for at, _, what in sorted(events, key=lambda e: (e[0], e[1])):
        if isinstance(what, str):
            capture.agent_frame(at, LOUD if what == "loud" else QUIET, RATE, 1, played=True)
            if tick is not None:
                tick(state, at)
        else:
            state, _ = c.reduce(state, what)  # type: ignore[arg-type]  # an input
            capture.state(state)
            if isinstance(what, c.Interrupt):
                capture.interrupted(at)
    return capture, state


@pytest.mark.parametrize(
    ("lag", "stall", "interrupt_at"),
    [
        # The run that broke: the second line's text closed before its audio came, and
        # the interrupt (0.3 s after its first audio) found no line open to cut.
        (0.9, 0.0, 7.4),
        *itertools.product((0.0, 0.3, 0.9, 2.0), (0.0, 0.8), (None, 6.3, 6.6, 8.0)),
    ],
)
def test_a_lines_audio_pairs_with_its_transcript(
    lag: float, stall: float, interrupt_at: float | None
) -> None:
    capture, state = _session(lag, stall, interrupt_at)
    clips = capture.replies()
    assert [(clip.turn, clip.segment_ids) for clip in clips] == [(1, ["a1"]), (2, ["a2"])]
    loud = [sum(f.audible for f in clip.frames) for clip in clips]
    assert loud == [120, 50]
    assert not capture.held_frames
    reports = measure_all(capture, state)
    assert [(r.turn, r.mismatch) for r in reports] == [(1, None), (2, None)]
    assert [r.longest_gap for r in reports] == pytest.approx([stall, stall], abs=1e-9)


def test_each_reply_measures_its_leading_silence_from_its_own_text() -> None:
    """One typed turn, answered at once; then the agent goes on by itself, 20 and 50 s
    later, with no user turn between (a tour, an idle prompt): all three lines answer
    that turn, and the live reporter reports each as its own reply once it is over. Each
    line's audio comes 0.1 s after its text, so no reply has a leading silence of 20 or
    50 s (the demo's exit line once said "leading silence of 57.81 s after its first
    text": measured from the turn's first line, the one its latency was measured on)."""
    events: list[Event] = [
        (1.0, 0, c.Connected(ME, 1.0)),
        (1.1, 0, c.AttributesChanged(AGENT, {ATTR_AGENT_STATE: "listening"}, 1.1)),
        (2.0, 0, c.SendText("go", 2.0)),
    ]
    for seg, opens in (("a1", 2.2), ("a2", 22.2), ("a3", 52.2)):
        over = opens + 1.3
        events += [
            (opens, 0, c.AttributesChanged(AGENT, {ATTR_AGENT_STATE: "speaking"}, opens)),
            *_line(seg, opens, opens + 1.2),
            *_audio(opens + 0.1, 1.0, 0.0),
            (over, 0, c.AttributesChanged(AGENT, {ATTR_AGENT_STATE: "listening"}, over)),
        ]
    live = ReplyReporter(ReplyAudio())
    reports: list[ReplyAudioReport] = []
    _, state = _run(events, live.capture, lambda state, at: reports.extend(live.tick(state, at)))
    reports += live.due(state, 0.0, final=True)
    assert [(r.turn, r.segment_ids) for r in reports] == [(1, ("a1",)), (1, ("a2",)), (1, ("a3",))]
    for r in reports:
        assert r.leading_from_text == pytest.approx(0.1, abs=0.011), r
