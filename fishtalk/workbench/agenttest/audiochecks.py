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

from fishtalk.core import conversation as conv
from fishtalk.core.conversation.reply_audio import AudioBudgets, problems
from fishtalk.workbench.agenttest.expect import Expect
from fishtalk.workbench.agenttest.results import Failure

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


__all__ = ["KEEPS_TALKING", "began_in", "budgets", "check_audio"]
