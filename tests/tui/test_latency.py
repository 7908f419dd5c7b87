"""Heard latency in the TUI: the per-turn badge, the status bar's rolling p50, the ended
screen and the exit line (synthetic waterfalls on the scripted driver)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from rich.console import Console
from rich.text import Text

from fishtalk.core import conversation as c
from fishtalk.core.conversation.latency import percentile, summarize
from fishtalk.tui.screens.ended import CallSummary, EndedScreen
from fishtalk.tui.widgets.latency import (
    MAX_BADGES,
    Badges,
    HeardP50,
    badge_text,
    new_turns,
    rolling_p50,
)
from fishtalk.tui.widgets.transcript import (
    BADGE_GLYPH,
    Transcript,
    render_segment,
    with_badge,
)

from .helpers import (
    LatencySession,
    agent_says,
    connected,
    drawn,
    make_app,
    measured,
    unmeasured,
    user_interim,
)


def conversation(session: LatencySession) -> None:
    session.feed(
        *connected(),
        *agent_says("a1", ["Hi!"], 2.0),
        *user_interim("u1", 1, "first question", 3.0, final=True),
        *agent_says("a2", ["First", " answer."], 4.0),
        *user_interim("u2", 1, "second question", 6.0, final=True),
        *agent_says("a3", ["Second", " answer."], 7.0),
    )


def badged(text: str, badge: str) -> str:
    return f"{text}  {BADGE_GLYPH} {badge}"


# --- pure parts ------------------------------------------------------------------------------


def test_rolling_p50_is_over_the_latest_measured_turns() -> None:
    assert rolling_p50(()) is None
    assert rolling_p50((unmeasured(1, "a", "text-only"),)) is None
    turns = [measured(i, f"a{i}", 0.1 * i) for i in range(1, 13)]  # 0.1 .. 1.2 s
    turns.insert(5, unmeasured(99, "x", "no audio"))
    # The last ten measured: 0.3 .. 1.2 s; nearest-rank median: the 5th, 0.7 s.
    p50 = rolling_p50(turns)
    assert p50 == pytest.approx(0.7)
    assert rolling_p50(turns, count=2) == pytest.approx(1.1)


def test_badges_only_report_what_changed() -> None:
    badges = Badges()
    first = measured(1, "a2", 0.42)
    lat = c.Latency(turns=(first,))
    assert badges.update(lat) == ["a2"]
    assert badges.by_segment == {"a2": badge_text(first)}
    assert badges.update(lat) == []  # the same latency: nothing to do
    assert badges.update(replace(lat, rtt=0.05)) == []  # only the round trip moved
    second = unmeasured(2, "a3", "text-only")
    assert badges.update(c.Latency(turns=(first, second))) == ["a3"]
    # The open turn gets its badge once it has a heard figure.
    opened = replace(measured(3, "a4", 0.5), audio_handed_at=None)
    assert badges.update(c.Latency(turns=(first, second), open=opened)) == []
    heard = measured(3, "a4", 0.5)
    assert badges.update(c.Latency(turns=(first, second), open=heard)) == ["a4"]
    # The agent's greeting had no user turn: no badge.
    greeting = c.Waterfall(
        turn=4, kind="unprompted", user_ended_at=1.0, segment_id="a1", incomplete="no user turn"
    )
    assert badges.update(c.Latency(turns=(first, second, greeting), open=heard)) == []
    assert "a1" not in badges.by_segment
    # The oldest dropped off the reducer's bound: its segment keeps its badge.
    assert badges.update(c.Latency(turns=(second, greeting, heard))) == []
    assert set(badges.by_segment) == {"a2", "a3", "a4"}
    # Only the newest MAX_BADGES are remembered.
    many = tuple(measured(i, f"m{i}", 0.3) for i in range(MAX_BADGES + 5))
    badges.update(c.Latency(turns=many))
    assert len(badges.by_segment) == MAX_BADGES
    assert "m0" not in badges.by_segment
    assert f"m{MAX_BADGES + 4}" in badges.by_segment


def test_badge_text_is_a_figure_or_the_reason() -> None:
    assert badge_text(measured(1, "a", 0.42)) == "0.42 s"
    text_only = badge_text(unmeasured(1, "a", "text-only"))
    assert "text-only" in text_only
    assert "no audio" in badge_text(unmeasured(1, "a", "no audio"))


def test_render_segment_badge_is_literal_and_agent_only() -> None:
    agent = c.Segment(1, "a", "agent", "agent", "Hello", final=True, open=False)
    user = c.Segment(2, "u", "user", "you", "Hi", final=True, open=False)
    markup = "[bold red]420 ms[/]"
    rendered = render_segment(agent, badge=markup)
    assert rendered.plain == badged("agent ▸ Hello", markup)
    assert "dim" in str(rendered.spans[-1].style)
    assert render_segment(user, badge=markup).plain == "you ▸ Hi"
    assert render_segment(agent).plain == "agent ▸ Hello"


def test_a_badge_is_never_split_across_lines() -> None:
    console = Console(width=200)
    long = "agent ▸ " + "word " * 5 + "end."  # 37 cells
    # Fits on the last line: it stays there.
    fits = with_badge(Text(long), "0.42 s", console, 60)
    assert [line.plain for line in fits.wrap(console, 60)] == [badged(long, "0.42 s")]
    # Does not fit: the whole badge goes on a line of its own, under the text.
    moved = with_badge(Text(long), "no user turn", console, 40)
    lines = [line.plain.rstrip() for line in moved.wrap(console, 40)]
    assert lines == [long, f"        {BADGE_GLYPH} no user turn"]


# --- in the app ------------------------------------------------------------------------------


async def test_badges_sit_on_their_agent_turns() -> None:
    session = LatencySession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        conversation(session)
        await drawn(pilot, session)
        transcript = app.query_one(Transcript)
        before = transcript.plain_items()
        assert not any("text-only" in item for item in before)
        a2, a3 = measured(1, "a2", 0.42), unmeasured(2, "a3", "text-only")
        session.set_latency(c.Latency(turns=(a2, a3)))
        await drawn(pilot, session)
        items = transcript.plain_items()
        assert items[0] == before[0]  # the greeting had no user turn: no badge
        assert items[2] == badged(before[2], "0.42 s")
        assert items[4] == badged(before[4], "text-only")
        assert "text-only" in items[4]
        assert items[1] == before[1]  # user turns: none
        assert items[3] == before[3]


async def test_a_badge_rewraps_only_its_segment() -> None:
    session = LatencySession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        conversation(session)
        await drawn(pilot, session)
        transcript = app.query_one(Transcript)
        renders = transcript.renders
        session.set_latency(c.Latency(turns=(measured(1, "a2", 0.42),)))
        await drawn(pilot, session)
        assert transcript.renders == renders + 1
        renders = transcript.renders
        # A state whose latency did not change re-wraps nothing.
        session.feed(c.SignalActivity(9.0))
        await drawn(pilot, session)
        assert transcript.renders == renders


async def test_status_bar_rolling_p50() -> None:
    session = LatencySession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        conversation(session)
        await drawn(pilot, session)
        p50 = app.query_one(HeardP50)
        assert p50.text is None  # nothing before the first figure
        assert not p50.display
        session.set_latency(c.Latency(turns=(unmeasured(1, "a2", "no audio"),)))
        await drawn(pilot, session)
        assert p50.text is None  # still nothing measured
        assert not p50.display
        turns = (measured(1, "a2", 0.42), measured(2, "a3", 0.9), measured(3, "a4", 0.61))
        session.set_latency(c.Latency(turns=turns))
        await drawn(pilot, session)
        assert p50.display
        assert p50.text == "heard p50 0.61 s"
        status = "\n".join(s.text for s in app.screen._compositor.render_strips())
        assert "heard p50 0.61 s" in status


def test_new_turns_is_what_was_appended() -> None:
    turns = tuple(measured(i, f"a{i}", 0.1) for i in range(1, 6))
    assert new_turns((), turns) is None  # nothing seen yet: start again
    assert new_turns(turns[:3], turns) == turns[3:]
    assert new_turns(turns, turns) == ()
    assert new_turns(turns[:3], turns[1:]) == turns[3:]  # the oldest dropped off
    assert new_turns(turns[:3], (turns[4],)) is None  # not a continuation


async def test_rolling_p50_follows_turns_as_they_close_and_drop_off() -> None:
    session = LatencySession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        conversation(session)
        p50 = app.query_one(HeardP50)
        figures = [0.3, 0.9, 0.5, None, 1.4, 0.2, 0.8, None, 0.6, 1.1, 0.7, 0.4, 1.3, 0.35]
        turns: tuple[c.Waterfall, ...] = ()
        for n, heard in enumerate(figures * 3, start=1):
            turn = (
                measured(n, f"a{n}", heard)
                if heard is not None
                else unmeasured(n, f"a{n}", "no audio")
            )
            turns = (*turns, turn)[-8:]  # a bound, as the reducer's: the oldest drop off
            session.set_latency(c.Latency(turns=turns))
            await drawn(pilot, session)
            want = rolling_p50(turns)
            if n > 8:
                # What dropped off still counts: the p50 is over the last ten measured.
                kept = [h for h in (figures * 3)[:n] if h is not None][-10:]
                want = percentile(kept, 0.5)
            assert p50.text == (None if want is None else f"heard p50 {want:.2f} s"), n


def test_summary_gives_p50_p95_and_the_worst_turn() -> None:
    turns = tuple(measured(i, f"a{i}", 0.1 * i) for i in range(1, 21))
    turns += (unmeasured(21, "a21", "text-only"),)
    state = c.initial_state()
    for inp in connected():
        state, _ = c.reduce(state, inp)
    state = replace(state, latency=c.Latency(turns=turns))
    summary = CallSummary.from_state(state, reason="user_hangup", ended_well=True)
    assert summary.latency == summarize(turns)
    heard = summary.latency_line()
    assert heard is not None
    line = summary.line()
    assert line.endswith(f" · {heard}")
    assert summary.latency is not None
    assert summary.latency.worst is not None
    assert summary.latency.worst.turn == 20
    assert line.endswith(
        " · latency: p50 1.00 s, p95 1.90 s, worst 2.00 s (your turn 20); 20 of 21 replies measured"
    )
    # Turns, none measured: the ended screen says so; the exit line keeps to figures.
    none = CallSummary.from_state(
        replace(state, latency=c.Latency(turns=(unmeasured(1, "a", "text-only"),))),
        reason="user_hangup",
        ended_well=True,
    )
    assert none.latency_line() == "latency: no measured turns"
    assert "latency" not in none.line()
    # Only the agent's greeting (no user turn): nothing to say about latency.
    greeting = c.Waterfall(
        turn=1, kind="unprompted", user_ended_at=1.0, segment_id="a1", incomplete="no user turn"
    )
    greeted = CallSummary.from_state(
        replace(state, latency=c.Latency(turns=(greeting,))), reason="user_hangup", ended_well=True
    )
    assert greeted.latency is None
    # No measured turn at all: nothing about latency.
    quiet = CallSummary.from_state(
        replace(state, latency=c.Latency()), reason="user_hangup", ended_well=True
    )
    assert quiet.latency is None
    assert quiet.latency_line() is None
    assert "latency" not in quiet.line()


async def test_ended_screen_shows_heard_latency() -> None:
    session = LatencySession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        conversation(session)
        turns = (measured(1, "a2", 0.42), measured(2, "a3", 0.9))
        session.set_latency(c.Latency(turns=turns))
        await drawn(pilot, session)
        session.feed(c.Hangup(20.0))
        for _ in range(200):
            if isinstance(app.screen, EndedScreen):
                break
            await pilot.pause(0.01)
        assert isinstance(app.screen, EndedScreen)
        await pilot.pause()
        summary = app.summary
        assert summary is not None
        assert summary.latency is not None
        screen_lines = [s.text for s in app.screen._compositor.render_strips()]
        # One row per part, label and value on one line (nothing wraps in the box).
        for label, value in c.summary_parts(summary.latency):
            assert any(f"{label}  " in line and value in line for line in screen_lines), (
                label,
                value,
            )
        assert any("(your turn 2)" in line for line in screen_lines)
