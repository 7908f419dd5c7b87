"""The TUI's latency badges follow the one rule of who answers whom (issue 24): the
greeting finishes after the first typed turn was sent, the next turn is typed while a
finished reply was still open; fed through the reducer, drawn by a Pilot."""

from __future__ import annotations

from fishtalk.core import conversation as c
from fishtalk.tui.widgets.transcript import BADGE_GLYPH, Transcript

from .helpers import LatencySession, agent_says, agent_state, connected, drawn, make_app

GREETING = "Hello, I am the agent."


def _closed(seg: str, at: float) -> c.Input:
    return c.TranscriptStreamClosed(f"stream-{seg}", seg, at)


async def test_the_badge_sits_on_the_answering_line_and_a_finished_reply_is_not_interrupted() -> (
    None
):
    session = LatencySession(c.initial_state(spoken=True))  # spoken replies, no audio came
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(
            *connected(),
            agent_state("speaking", 1.5),
            *agent_says("greet", ["Hello,", " I am the agent."], 2.0, close=False),
            c.SendText("What can you do?", 2.5),  # while the greeting is spoken
            _closed("greet", 3.0),
            agent_state("thinking", 3.1),
            *agent_says("r1", ["You said:", " What can you do?"], 4.0, close=False),
            c.SendText("Thanks.", 5.0),  # while reply 1 is still open
            _closed("r1", 5.5),
            *agent_says("r2", ["You said:", " Thanks."], 6.0),
            agent_state("listening", 6.5),
        )
        await drawn(pilot, session)
        items = app.query_one(Transcript).plain_items()
    [greeting] = [i for i in items if GREETING in i]
    assert BADGE_GLYPH not in greeting, items  # the greeting answers no turn
    [reply1] = [i for i in items if "You said: What can you do?" in i]
    [reply2] = [i for i in items if "You said: Thanks." in i]
    assert BADGE_GLYPH in reply1, items
    assert BADGE_GLYPH in reply2, items
    assert reply1.endswith(f"{BADGE_GLYPH} no audio"), items  # it finished uncut
    assert not any("interrupted" in i for i in items), items
