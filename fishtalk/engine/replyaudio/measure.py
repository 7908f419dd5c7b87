"""The measures of one reply's received audio (issue 29), numpy only, from a
:class:`~fishtalk.engine.replyaudio.capture.ReplyClip`.

Positions inside a reply are counted in *samples of the received stream* (the frames one
after the other), not from arrival times: the wire delivers a frame every 10 ms, silent
ones included, so a gap is exactly the silent frames between two audible ones, free of
network jitter. Times on the session clock (``first_audio_at``, talk-over, the interrupt)
use arrival times. Resolution: one frame (10 ms).

- leading silence: the first audible frame's first sample (its arrival less its length)
  minus the reply's first text, and minus the end of the user's turn;
- gaps: runs of silent frames between audible ones; the longest, and each over
  :data:`~fishtalk.core.conversation.reply_audio.GAP_REPORTED`;
- clipping: the share of the audible frames' samples with ``|x| >= CLIP_LEVEL`` (the
  silence between them left out: a voice that stalls, or pauses long, is no less
  clipped; counted over the whole span, a stall of a few seconds on a busy machine took a
  voice clipped in 3.5% of its samples under a 1% budget);
- loudness: integrated LUFS per ITU-R BS.1770-4 by pyloudnorm (the ``audio-checks``
  extra), over the same span; under its 0.4 s block, or without pyloudnorm, ``None`` with
  a note. pyloudnorm is the maintained reference implementation (K-weighting filters and
  gating as the standard gives them), so nothing here re-derives the filters;
- talk-over: the seconds of audible agent frames that arrived while the user was
  speaking (voiced microphone frames, :attr:`ReplyAudio.user_speech`);
- after the interrupt: from the interrupt to the last audible frame that still arrived.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Final

import numpy as np

from fishtalk.core.conversation.reply_audio import GAP_REPORTED, Mismatch, ReplyAudioReport
from fishtalk.engine.replyaudio.capture import ReplyClip

CLIP_LEVEL: Final = 32000
"""A sample this close to full scale (of 32767) counts as clipped."""
LOUDNESS_BLOCK: Final = 0.4
"""pyloudnorm's gating block: shorter audio has no integrated loudness."""


def warm_up() -> None:
    """Import pyloudnorm (and scipy), if installed, now: before the call connects. Its
    import holds the interpreter for a second on a busy machine; during a room connect
    (or on a thread beside it) that starves the SDK's callbacks, which it does not
    survive."""
    import contextlib

    with contextlib.suppress(ImportError):
        import pyloudnorm  # noqa: F401


def loudness(samples: np.ndarray, rate: int) -> tuple[float | None, str | None]:
    """Integrated loudness (LUFS) of int16 mono ``samples``, or None and why (pyloudnorm
    not installed, or not loaded before the call: :func:`warm_up`)."""
    if samples.size < LOUDNESS_BLOCK * rate:
        return None, "shorter than 0.4 s"
    pyloudnorm = sys.modules.get("pyloudnorm")
    if pyloudnorm is None:
        # Never imported here, mid-call: see warm_up.
        return None, "not measured: pip install 'fishtalk[audio-checks]'"
    value = float(pyloudnorm.Meter(rate).integrated_loudness(samples.astype(np.float64) / 32768.0))
    if not np.isfinite(value):
        return None, "silent"
    return value, None


def overlap(runs: Sequence[tuple[float, float]], others: Sequence[tuple[float, float]]) -> float:
    """Seconds where intervals of ``runs`` and ``others`` (each sorted) overlap."""
    total, j = 0.0, 0
    for start, end in runs:
        while j < len(others) and others[j][1] <= start:
            j += 1
        k = j
        while k < len(others) and others[k][0] < end:
            total += max(0.0, min(end, others[k][1]) - max(start, others[k][0]))
            k += 1
    return total


def measure(
    clip: ReplyClip,
    number: int,
    *,
    has_text: bool,
    cut: bool = False,
    first_text_at: float | None,
    turn_ended_at: float | None,
    user_speech: Sequence[tuple[float, float]] = (),
    interrupts: Sequence[float] = (),
) -> ReplyAudioReport:
    """The report of ``clip``, reply ``number`` of the session; ``has_text``: its lines
    hold transcript text; ``cut``: one was interrupted, or the reply was asked for as
    text (its audio may rightly never have come)."""
    rate, width = clip.sample_rate, 2 * clip.channels
    lengths = np.array([len(f.data) // width for f in clip.frames], dtype=np.int64)
    audible = np.array([f.audible for f in clip.frames], dtype=bool)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    loud = np.flatnonzero(audible)
    mismatch: Mismatch | None = None
    if not loud.size:
        if has_text and not cut:
            mismatch = "transcript_without_audio"
        return ReplyAudioReport(
            number,
            clip.turn,
            tuple(clip.segment_ids),
            first_text_at=first_text_at,
            turn_ended_at=turn_ended_at,
            mismatch=mismatch,
        )
    if not clip.segment_ids or not has_text:
        mismatch = "audio_without_transcript"
    first, last = int(loud[0]), int(loud[-1])
    origin = int(starts[first])
    frame0 = clip.frames[first]
    first_audio_at = float(frame0.at - lengths[first] / rate)
    # Gaps: silent frames between two audible ones, in samples of the stream.
    silent_before = starts[loud[1:]] - ends[loud[:-1]]
    gaps = [
        ((int(ends[loud[i]]) - origin) / rate, int(n) / rate)
        for i, n in enumerate(silent_before)
        if n > 0
    ]
    longest = max(gaps, key=lambda g: g[1], default=None)
    every = clip.samples()
    voiced = every[np.repeat(audible, lengths)] if every.size == int(ends[-1]) else every
    clipped = float(np.count_nonzero(np.abs(voiced.astype(np.int32)) >= CLIP_LEVEL)) / max(
        1, voiced.size
    )
    pcm = every[origin : int(ends[last])]
    lufs, note = loudness(pcm, rate)
    runs = [(f.at - float(lengths[i]) / rate, f.at) for i, f in enumerate(clip.frames) if f.audible]
    pressed = [t for t in interrupts if first_audio_at <= t <= clip.frames[last].at]
    return ReplyAudioReport(
        number,
        clip.turn,
        tuple(clip.segment_ids),
        duration=(int(ends[last]) - origin) / rate,
        audible=True,
        first_audio_at=first_audio_at,
        first_text_at=first_text_at,
        turn_ended_at=turn_ended_at,
        leading_from_text=None if first_text_at is None else first_audio_at - first_text_at,
        leading_from_turn=None if turn_ended_at is None else first_audio_at - turn_ended_at,
        longest_gap=longest[1] if longest else 0.0,
        longest_gap_at=longest[0] if longest else None,
        gaps=tuple(g for g in gaps if g[1] > GAP_REPORTED),
        clipping=clipped,
        loudness=lufs,
        loudness_note=note,
        talk_over=overlap(_merged(runs), user_speech),
        mismatch=mismatch,
        interrupted_at=pressed[0] if pressed else None,
        after_interrupt=clip.frames[last].at - pressed[0] if pressed else None,
    )


def _merged(runs: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for start, end in runs:
        if out and start <= out[-1][1] + 1e-3:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


__all__ = ["CLIP_LEVEL", "LOUDNESS_BLOCK", "loudness", "measure", "overlap", "warm_up"]
