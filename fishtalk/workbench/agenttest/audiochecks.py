"""How the replies sound, checked (issue 29): a turn's or the session's audio expectations
against the reports the session measured (``State.reply_audio``, one per reply, see
:mod:`fishtalk.core.conversation.reply_audio`), worded once by
:func:`~fishtalk.core.conversation.reply_audio.problems`: ``reply 2: gap of 0.84 s at
1.92 s into the reply (max_gap 0.5)``.

A turn's replies are those whose audio (or, with none, whose first text) began in the
turn's window; the session's ``[expect]`` covers every reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from fishtalk.core import conversation as conv
from fishtalk.core.conversation.reply_audio import AudioBudgets, problems
from fishtalk.workbench.agenttest.expect import Expect
from fishtalk.workbench.agenttest.results import Failure

if TYPE_CHECKING:
    from fishtalk.workbench.agenttest.listening import HeardReply

CUT_SLACK: Final = 2
"""Words a cut reply's transcript may hold past what its audio said: a word is written as
its first sound is queued, and a voice is fed a little ahead of real time (the sim's by
up to 80 ms), so the word the cut fell in and the one queued after it may be in the
transcript with too little sound to align (seen: "you said tell me" cut with "tell me"
not aligned; a transcript written whole ahead of the voice keeps many more)."""
KEEPS_TALKING: float = 1.0
"""With a turn's ``interrupt`` and no ``stops_within``: the agent's audio must stop within
this many seconds of it (a voice that goes on fails, naming how long)."""


def budgets(expect: Expect, *, interrupted: bool = False) -> AudioBudgets:
    """The audio budgets of ``expect`` (an interrupting turn always has ``stops_within``)."""
    stops = expect.stops_within
    if stops is None and interrupted:
        stops = KEEPS_TALKING
    return AudioBudgets(
        max_leading_silence=expect.max_leading_silence,
        max_gap=expect.max_gap,
        max_clipping=expect.max_clipping,
        loudness_range=expect.loudness_range,
        max_talk_over=expect.max_talk_over,
        no_silent_replies=expect.no_silent_replies,
        no_mismatch=expect.no_mismatch,
        stops_within=stops,
    )


def began_in(
    reports: Sequence[conv.ReplyAudioReport], start: float, end: float | None
) -> list[conv.ReplyAudioReport]:
    """The replies whose audio (else first text) began in ``[start, end)``."""
    out = []
    for report in reports:
        at = report.first_audio_at if report.first_audio_at is not None else report.first_text_at
        if at is not None and at >= start and (end is None or at < end):
            out.append(report)
    return out


def check_audio(
    expect: Expect,
    where: str,
    reports: Sequence[conv.ReplyAudioReport],
    *,
    interrupted: bool = False,
) -> list[Failure]:
    """The audio expectations of ``expect`` that ``reports`` break (one failure each)."""
    if not (expect.checks_sound or interrupted):
        return []
    limits = budgets(expect, interrupted=interrupted)
    failures = []
    for report in reports:
        for problem in problems(report, limits):
            expected = problem.text[problem.text.rindex("(") + 1 : -1]
            failures.append(Failure(where, expected, problem.text))
    loudness = expect.loudness_range
    for report in reports:
        note = report.loudness_note or ""
        if loudness is not None and report.audible and note.startswith("not measured"):
            seen = f"reply {report.reply}: loudness not measured ({report.loudness_note})"
            failures.append(Failure(where, f"loudness_range {list(loudness)}", seen))
    return failures


def check_cut(
    where: str, heard: HeardReply | None, reports: Sequence[conv.ReplyAudioReport]
) -> list[Failure]:
    """``expect.transcript_cut`` of an interrupting turn: its reply's transcript holds at
    most :data:`CUT_SLACK` words past what its audio said (``heard``: the reply heard with
    ``cut``, None: no reply). Named as the audio checks are: ``reply 2: 9 unspoken words
    in its transcript after the 3 its audio said ('a small fish ...') (transcript_cut
    true: 2 words of slack)``."""
    expected = "transcript_cut true"
    if heard is None or not heard.transcript.strip():
        return [Failure(where, expected, "no agent reply to check")]
    unspoken = heard.unspoken
    if len(unspoken) <= CUT_SLACK:
        return []
    ids = set(heard.segment_ids)
    numbers = [r.reply for r in reports if ids & set(r.segment_ids)]
    label = f"reply {numbers[0]}" if numbers else where
    shown = " ".join(unspoken[:8]) + (" ..." if len(unspoken) > 8 else "")
    said = heard.spoken_words or 0
    seen = (
        f"{label}: {len(unspoken)} unspoken words in its transcript after the {said} its "
        f"audio said ({shown!r}) (transcript_cut true: {CUT_SLACK} words of slack)"
    )
    return [Failure(where, expected, seen)]


__all__ = ["CUT_SLACK", "KEEPS_TALKING", "began_in", "budgets", "check_audio", "check_cut"]
