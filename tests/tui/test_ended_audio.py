"""The worst audio problem of a call on the TUI's ended screen and its exit line (issue 29,
outcome 4), worded once (:func:`~fishtalk.core.conversation.reply_audio.worst_note`) for the
screen, the exit line and line mode's closing note alike. The sim end to end is in
``tests/replyaudio/test_where_people_look.py``."""

from __future__ import annotations

from support.ended import leave_ended
from support.scripted import ScriptedSession

from fishtalk.core import conversation as c
from fishtalk.core.conversation.reply_audio import audio_note, worst_note
from fishtalk.plain.render import closing_notes

from .helpers import agent_says, connected, make_app

GAP = c.ReplyAudioReport(
    reply=2,
    turn=1,
    segment_ids=("a2",),
    duration=3.5,
    audible=True,
    leading_from_text=0.2,
    longest_gap=1.84,
    longest_gap_at=1.92,
    gaps=((1.92, 1.84),),
)
"""A gap over the default budget (max_gap 1): 84 % over."""
CLIPPED = c.ReplyAudioReport(
    reply=1, turn=None, segment_ids=("a1",), duration=1.0, audible=True, clipping=0.015
)
"""Clipping just over its budget (1 %): 50 % over, so the gap is the worse."""
CLEAN = c.ReplyAudioReport(
    reply=3, turn=2, segment_ids=("a3",), duration=1.0, audible=True, leading_from_text=0.1
)

WORST = "worst of 2 problems: reply 2: gap of 1.84 s at 1.92 s into the reply (max_gap 1)"


async def _ended(reports: list[c.ReplyAudioReport]) -> tuple[str, str, c.State]:
    """The ended screen's text and the exit line after a call whose replies measured so."""
    session = ScriptedSession(c.initial_state(spoken=True))
    app = make_app(session)
    async with app.run_test(size=(160, 30)) as pilot:
        session.feed(*connected(), *agent_says("a1", ["Hello"], 2.0))
        session.feed(*(c.ReplyAudioMeasured(r, 3.0 + r.reply) for r in reports))
        session.feed(c.Hangup(9.0))
        _, shown, line = await leave_ended(pilot)
    return shown, line, session.state


def test_the_worst_problem_is_the_one_most_over_its_budget() -> None:
    assert worst_note([CLIPPED, GAP, CLEAN]) == WORST
    assert worst_note([CLIPPED, CLEAN]) == (
        "worst: reply 1: clipping in 1.5% of samples (max_clipping 0.01)"
    )
    assert worst_note([CLEAN]) is None
    assert worst_note([]) is None
    assert audio_note([CLEAN]) == "no problem in 1 reply"
    assert audio_note([CLEAN, CLEAN]) == "no problem in 2 replies"
    assert audio_note([CLEAN, GAP]) == (
        "worst: reply 2: gap of 1.84 s at 1.92 s into the reply (max_gap 1)"
    )
    assert audio_note([]) is None


async def test_the_ended_screen_and_the_exit_line_name_the_worst_problem() -> None:
    shown, line, state = await _ended([CLIPPED, GAP, CLEAN])
    assert f"audio {WORST}" in shown.splitlines()
    assert line.startswith("fishtalk: call ended — you hung up · ")
    assert line.endswith(f" · audio: {WORST}")
    # Line mode closes with the same words (one function says them all).
    assert closing_notes(state)[-1] == f"* audio: {WORST}"


async def test_a_call_that_sounded_fine_says_so_on_the_screen_only() -> None:
    shown, line, state = await _ended([CLEAN])
    assert "audio no problem in 1 reply" in shown.splitlines()
    assert "audio" not in line
    assert not [n for n in closing_notes(state) if n.startswith("* audio")]


async def test_a_call_with_no_measured_reply_has_no_audio_row() -> None:
    shown, line, _ = await _ended([])
    assert "Session ended" in shown
    assert not [r for r in shown.splitlines() if r.startswith("audio")]
    assert "audio" not in line
