"""A call longer than the reducer's live window: the transcript and tool panel count what
dropped off, show the newest, and re-render nothing that stays when an old block drops; the
ended screen and the exit line count the whole call."""

from __future__ import annotations

from textual.pilot import Pilot

from fishtalk.core import conversation as c
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.screens.ended import EndedScreen
from fishtalk.tui.widgets.bounded_view import DEFAULT_MAX_ITEMS
from fishtalk.tui.widgets.tools import MAX_CARDS, ToolPanel
from fishtalk.tui.widgets.transcript import Transcript

from .helpers import (
    ScriptedSession,
    agent_says,
    connected,
    drawn,
    make_app,
    tool_completed,
    tool_failed,
    tool_started,
)


def turn(i: int) -> list[c.Input]:
    """One short agent turn (segment ``a{i}``)."""
    return agent_says(f"a{i}", [f"segment {i}"], 2.0 + i)


def next_append_drops(
    log: c.Log[c.Segment] | c.Log[c.ToolCard], limit: int = c.MAX_LIVE_SEGMENTS
) -> bool:
    """Whether appending one more item makes the log drop its oldest block."""
    tail = log.blocks[-1]
    return len(tail) == c.LOG_CHUNK - 1 and len(log) - len(tail) >= limit


async def feed_turns(pilot: Pilot[int], session: ScriptedSession, start: int, stop: int) -> None:
    for i in range(start, stop):
        session.feed(*turn(i))
        if i % 200 == 0:
            await pilot.pause()
    await drawn(pilot, session)


async def test_a_long_call_shows_the_newest_and_counts_every_earlier_segment() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        total = c.MAX_LIVE_SEGMENTS + 3 * c.LOG_CHUNK + 10
        await feed_turns(pilot, session, 0, total)
        state = session.state
        assert state.earlier_segments >= 3 * c.LOG_CHUNK  # the reducer dropped blocks
        transcript = app.query_one(Transcript)
        assert transcript.item_count == DEFAULT_MAX_ITEMS
        hidden = total - DEFAULT_MAX_ITEMS
        assert transcript.hidden_count == hidden
        assert transcript.text_lines()[0] == f"… {hidden} earlier segments not shown"
        items = transcript.plain_items()
        assert items[-1] == f"agent ▸ segment {total - 1}"
        assert items[0] == f"agent ▸ segment {hidden}"
        lines = transcript.text_lines()
        assert lines[1] == f"agent ▸ segment {hidden}"
        assert lines[-1] == f"agent ▸ segment {total - 1}"


async def test_a_block_dropping_off_the_front_re_renders_nothing_that_stays() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        i = 0
        # Past the live window, up to the turn that makes the reducer drop a block.
        while i < c.MAX_LIVE_SEGMENTS or not next_append_drops(session.state.segment_log):
            session.feed(*turn(i))
            i += 1
            if i % 200 == 0:
                await pilot.pause()
        await drawn(pilot, session)
        transcript = app.query_one(Transcript)
        earlier = session.state.earlier_segments
        wraps, layouts = transcript.renders, transcript.layouts
        session.feed(*turn(i))
        await drawn(pilot, session)
        assert session.state.earlier_segments == earlier + c.LOG_CHUNK
        # The new segment (maybe over a frame or two as it opens, grows and closes) is
        # the only one wrapped and placed; the 1,999 others keep their lines.
        assert transcript.renders - wraps <= 3
        assert transcript.layouts - layouts <= 3
        assert transcript.hidden_count == i + 1 - DEFAULT_MAX_ITEMS
        assert transcript.plain_items()[-1] == f"agent ▸ segment {i}"
        assert (
            transcript.text_lines()[0]
            == f"… {i + 1 - DEFAULT_MAX_ITEMS} earlier segments not shown"
        )


async def ended_screen(pilot: Pilot[int], app: FishtalkApp) -> EndedScreen:
    for _ in range(300):
        if isinstance(app.screen, EndedScreen):
            return app.screen
        await pilot.pause(0.01)
    raise AssertionError("the ended screen never showed")


async def test_tool_panel_and_ended_screen_count_the_whole_call() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        cards = c.MAX_LIVE_TOOLS + 2 * c.LOG_CHUNK + 5
        failed = 0
        for k in range(cards):
            at = 2.0 + k
            session.feed(tool_started(f"t{k}", "lookup", at))
            if k % 4 == 0:
                session.feed(tool_failed(f"t{k}", "lookup", at + 0.5, error="no"))
                failed += 1
            else:
                session.feed(tool_completed(f"t{k}", "lookup", at + 0.5))
            if k % 200 == 0:
                await pilot.pause()
        turns = c.MAX_LIVE_SEGMENTS + c.LOG_CHUNK + 3
        await feed_turns(pilot, session, 0, turns)
        state = session.state
        assert state.earlier_tools >= 2 * c.LOG_CHUNK
        assert state.earlier_segments >= c.LOG_CHUNK
        panel = app.query_one(ToolPanel)
        assert len(panel.card_views) == MAX_CARDS
        assert panel.hidden_count == cards - MAX_CARDS
        assert panel.card_views[-1].card.call_id == f"t{cards - 1}"
        assert panel.card_views[0].card.call_id == f"t{cards - MAX_CARDS}"
        note = panel.query(".tools-note").first()
        assert str(note.render()) == f"… {cards - MAX_CARDS} earlier tool calls not shown"

        # One more card that makes the reducer drop a block: only it is painted.
        while not next_append_drops(session.state.tool_log, c.MAX_LIVE_TOOLS):
            session.feed(tool_started(f"t{cards}", "lookup", 9e3 + cards))
            session.feed(tool_completed(f"t{cards}", "lookup", 9e3 + cards))
            cards += 1
        await drawn(pilot, session)
        earlier, paints = session.state.earlier_tools, panel.paints
        session.feed(tool_started(f"t{cards}", "lookup", 9.5e3))
        cards += 1
        await drawn(pilot, session)
        assert session.state.earlier_tools == earlier + c.LOG_CHUNK
        assert panel.paints - paints == 1
        assert panel.hidden_count == cards - MAX_CARDS
        assert panel.card_views[-1].card.call_id == f"t{cards - 1}"

        await pilot.press("ctrl+x")
        screen = await ended_screen(pilot, app)
        summary = screen.summary
        assert (summary.turns, summary.user_turns, summary.agent_turns) == (turns, 0, turns)
        assert (summary.tools, summary.tool_failures) == (cards, failed)
        shown = "\n".join(s.text for s in app.screen._compositor.render_strips())
        assert f"{turns} (0 you, {turns} agent)" in shown
        assert f"{cards} ({failed} failed)" in shown
        assert app.summary is not None
        assert f"{turns} turns · {cards} tools ({failed} failed)" in app.summary.line()
        await pilot.press("q")


async def test_set_items_with_an_offset_keeps_what_stays() -> None:
    """The generic view: items given with their absolute offset line up with what it
    holds, so dropping old ones from the front re-wraps nothing."""
    from rich.text import Text
    from textual.app import App, ComposeResult

    from fishtalk.tui.widgets.bounded_view import TranscriptView

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield TranscriptView[str](Text, max_items=100)

    items = [f"line {i}" for i in range(150)]
    async with Host().run_test(size=(60, 20)) as pilot:
        view = pilot.app.query_one(TranscriptView)
        view.set_items(items)
        await pilot.pause()
        assert (view.item_count, view.hidden_count) == (100, 50)
        wraps = view.renders
        # 64 old items dropped before the list given, 3 new at the end.
        view.set_items([*items[64:], "new 1", "new 2", "new 3"], offset=64)
        await pilot.pause()
        assert view.renders - wraps == 3
        assert (view.item_count, view.hidden_count) == (89, 64)
        assert view.plain_items()[0] == "line 64"
        assert view.text_lines()[0] == "… 64 earlier segments not shown"
        assert view.text_lines()[-1] == "new 3"
