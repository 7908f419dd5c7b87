"""``fishtalk replay`` in the TUI: the journal's conversation plays into the real app."""

from __future__ import annotations

from pathlib import Path

from fishtalk.journal.reader import read_journal, summarise
from fishtalk.journal.replay import states
from fishtalk.journal.replay_session import ReplaySession
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.widgets.tools import ToolPanel
from fishtalk.tui.widgets.transcript import Transcript, render_segment

FIXTURE = Path(__file__).parent / "data" / "everything.jsonl"


async def test_replay_ends_with_the_transcript_and_tool_cards_of_the_session() -> None:
    journal = read_journal(FIXTURE)
    session = ReplaySession(journal, speed=0)
    app = FishtalkApp(
        session, title="replay", clock=lambda: 10.0, live_timers=False, ended_linger=None
    )
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(400):
            await pilot.pause()
            if app.finished is not None and app.drawn_state is session.state:
                break
            await pilot.pause(0.01)
        assert session.finished
        assert app.drawn_state is session.state
        final = [s for _, s in states(journal)][-1]
        transcript = app.query_one(Transcript)
        expected = [render_segment(seg).plain for seg in final.transcript]
        assert transcript.plain_items() == expected
        items = "\n".join(transcript.plain_items())
        assert "hello journal" in items
        assert "Hello from the journal test." in items
        panel = app.query_one(ToolPanel)
        calls = [t.call_id for t in summarise(journal).tools]
        assert [v.card.call_id for v in panel.card_views] == calls
        assert all(not v.running for v in panel.card_views)


async def test_hanging_up_stops_the_replay() -> None:
    journal = read_journal(FIXTURE)
    session = ReplaySession(journal, speed=0.001)  # a thousand times slower than live
    app = FishtalkApp(
        session, title="replay", clock=lambda: 10.0, live_timers=False, ended_linger=None
    )
    async with app.run_test(size=(120, 40)) as pilot:
        session.hangup()
        for _ in range(400):
            await pilot.pause()
            if app.finished is not None:
                break
            await pilot.pause(0.01)
        assert app.finished is not None
        assert not session.finished
        assert session.state.ended
