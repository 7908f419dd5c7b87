"""The small things a person noticed on the chat, replay and ended screens (issue 24,
item 16; issue 26, outcome 6): one mark per cut reply, tool card headers that break in one
place, a declined call's message once, the footer's keys in one order, a replay's own keys,
the real reason for no audio, and how to open the session's page."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from support.scripted import ScriptedSession
from textual.pilot import Pilot
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from fishtalk.core import conversation as c
from fishtalk.core.conversation.state import ClientCall, ToolCard
from fishtalk.engine.audio.base import NullAudio
from fishtalk.engine.journal.reader import read_journal
from fishtalk.tui.replay import REPLAY_KEYS, ReplayApp
from fishtalk.tui.run import report_end
from fishtalk.tui.screens.ended import EndedScreen
from fishtalk.tui.screens.help import HelpScreen, help_table
from fishtalk.tui.session_like import JournalInfo
from fishtalk.tui.widgets.footer import KeyFooter
from fishtalk.tui.widgets.meters import LevelMeters, no_audio_text
from fishtalk.tui.widgets.tools import render_card
from fishtalk.tui.widgets.transcript import Transcript
from fishtalk.workbench.journal.replay_session import ReplaySession

from .helpers import LatencySession, agent_says, connected, drawn, make_app, unmeasured

REPLAY_JOURNAL = Path(__file__).parent.parent / "journal" / "data" / "everything.jsonl"


async def test_a_cut_reply_says_interrupted_once() -> None:
    session = LatencySession(c.initial_state(spoken=True))
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(
            *connected(),
            c.SendText("Tell me a story.", 2.0),
            *agent_says("r1", ["Once", " upon", " a time"], 3.0, close=False),
            c.Interrupt(4.0),
        )
        session.set_latency(c.Latency(turns=(unmeasured(1, "r1", "interrupted", at=2.0),)))
        await drawn(pilot, session)
        items = app.query_one(Transcript).plain_items()
    [reply] = [i for i in items if "Once upon a time" in i]
    assert reply.count("interrupted") == 1, reply
    assert "⏹ interrupted" in reply


def _card(**kw: object) -> ToolCard:
    fields: dict[str, object] = {
        "seq": 1,
        "call_id": "c1",
        "tool_name": "get_local_context",
        "source": "client",
        "status": "completed",
        "input": "{}",
        "started_at": 1.0,
        "ended_at": 1.3,
    }
    fields.update(kw)
    return ToolCard(**fields)  # type: ignore[arg-type]


def _lines(card: ToolCard, width: int) -> list[str]:
    text = render_card(card, 2.0, expanded=False, width=width)
    console = Console(width=width, color_system=None)
    return [line.plain.rstrip() for line in text.wrap(console, width)]


@pytest.mark.parametrize("width", range(20, 60))
def test_a_tool_card_header_breaks_in_one_place_only(width: int) -> None:
    full = "✓ get_local_context  client  0.3s  completed"
    lines = _lines(_card(), width)
    if len(full) <= width:
        assert lines[0] == full
    else:  # the name on one line, the details whole on the next (cut with … if need be)
        assert lines[0] == "✓ get_local_context"[:width]
        details = "  client  0.3s  completed"
        assert lines[1] == details if len(details) <= width else lines[1].endswith("…")
        assert lines[2].startswith("in ")


def test_a_declined_call_says_its_message_once() -> None:
    message = "The user declined to run tool 'open_url'"
    card = _card(
        tool_name="open_url",
        status="failed",
        error=message,
        client=ClientCall(
            "open_url",
            {"url": "https://example.com"},
            True,
            status="declined",
            result_preview=message,
            error=message,
            started_at=1.0,
            ended_at=1.1,
        ),
    )
    for expanded in (False, True):
        text = render_card(card, 2.0, expanded=expanded, width=None).plain
        assert text.count("declined to run") == 1, text
        assert "local ⊘ declined" in text


def footer_actions(pilot: Pilot[int]) -> list[str]:
    return [key.action for key in pilot.app.screen.query(FooterKey)]


async def test_the_footer_keeps_one_order_wherever_the_focus_is() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(120, 30)) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        assert app.query_one(KeyFooter)
        first = footer_actions(pilot)
        assert first[:2] == ["hangup", "quit"]
        seen = [first]
        await pilot.press("f12")
        for _ in range(4):  # inspector list, inspector filter, transcript, tools
            await pilot.press("tab")
            await pilot.pause()
            seen.append(footer_actions(pilot))
        for actions in seen:
            assert actions == first, (app.focused, actions)


async def test_a_replay_shows_replay_keys_in_its_footer_and_help() -> None:
    session = ReplaySession(read_journal(REPLAY_JOURNAL), speed=0.01)
    app = ReplayApp(session, title="replay", live_timers=False, ended_linger=None)
    async with app.run_test(size=(120, 30)) as pilot:
        for _ in range(300):
            await pilot.pause(0.01)
            labels = {key.action: key.description for key in app.screen.query(FooterKey)}
            if "replay_pause" in labels:
                break
        assert labels["hangup"] == "Stop"
        assert "Hang up" not in labels.values()
        assert "replay_pause" in labels
        assert not {"interrupt", "toggle_mute", "toggle_spoken"} & set(labels)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        meters = app.query_one(LevelMeters)
        assert meters.reason == "no audio in a replay"
    shown = "\n".join(
        str(cell)
        for column in help_table({}, REPLAY_KEYS, replay=True).columns
        for cell in column.cells
    )
    assert "Pause or play on." in shown
    for live in ("Stop the agent talking.", "Mute or unmute", "Send the typed message.", "Hang up"):
        assert live not in shown
    assert "Stop the replay" in shown


def test_the_no_audio_line_says_why() -> None:
    assert no_audio_text("text-only: no audio devices found") == "no audio devices found"
    assert no_audio_text("text-only: audio disabled") == "no audio: audio disabled"
    assert no_audio_text("text-only") == "no audio"
    assert "text only" not in no_audio_text("text-only: PortAudio missing")


async def test_the_status_bar_keeps_the_reason_for_no_audio() -> None:
    session = ScriptedSession(audio=NullAudio("text-only: no audio devices found"))
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected(), *agent_says("a1", ["Spoken,", " but not here."], 2.0))
        await drawn(pilot, session)
        meters = app.query_one(LevelMeters)
        shown = str(meters.render())
        assert shown == "no audio devices found"
        assert "text only" not in shown


async def hung_up(pilot: Pilot[int], session: ScriptedSession) -> None:
    """Connect, hang up, and wait (bounded) for the ended screen."""
    session.feed(*connected(), c.Hangup(5.0))
    for _ in range(200):
        if isinstance(pilot.app.screen, EndedScreen):
            return
        await pilot.pause(0.01)


async def test_the_ended_screen_says_how_to_open_the_session_page() -> None:
    session = ScriptedSession()
    info = JournalInfo("20261202-015959-ab12", 0.0, 0.0)
    app = make_app(session, journal=info)
    async with app.run_test(size=(80, 24)) as pilot:
        await hung_up(pilot, session)
        assert isinstance(app.screen, EndedScreen)
        page = str(app.screen.query_one("#ended-page", Static).render())
        assert "fishtalk export 20261202-015959-ab12 --format html" in page
        assert "-o 20261202-015959-ab12.html" in page
        await pilot.press("q")
    out = io.StringIO()
    report_end(app, stdout=out, stderr=io.StringIO())  # left on the normal screen too
    assert out.getvalue().splitlines()[-1] == (
        "fishtalk: the session as a web page: "
        "fishtalk export 20261202-015959-ab12 --format html -o 20261202-015959-ab12.html"
    )
    session = ScriptedSession()
    app = make_app(session)  # no journal: nothing to export, nothing said
    async with app.run_test(size=(80, 24)) as pilot:
        await hung_up(pilot, session)
        assert not app.screen.query("#ended-page")
