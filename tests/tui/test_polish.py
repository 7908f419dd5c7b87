"""Pilot tests for what a person sees at the edges: narrow status bars, Ctrl+C, the
summary left on the normal screen after the app exits."""

from __future__ import annotations

import io

import pytest
from support.scripted import ScriptedSession
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Footer, Static

from fishtalk.cli.exits import EXIT_INTERRUPTED, exit_code_of
from fishtalk.core import conversation as c
from fishtalk.core.errors import AuthenticationError
from fishtalk.core.protocol import UserHangup
from fishtalk.engine.session import EndResult
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.run import report_end
from fishtalk.tui.screens.ended import EndedScreen
from fishtalk.tui.screens.help import help_table
from fishtalk.tui.widgets.meters import NO_AUDIO, LevelMeters
from fishtalk.tui.widgets.tools import ToolPanel
from fishtalk.tui.widgets.transcript import Transcript

from .helpers import (
    FakeDevices,
    agent_says,
    client_call,
    connected,
    drawn,
    make_app,
    tool_completed,
    tool_failed,
    tool_started,
    user_interim,
)


def sent(session: ScriptedSession) -> list[object]:
    return [e.event for e in session.effects if isinstance(e, c.SendClientEvent)]


SIZES = [(100, 30), (80, 24)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_no_audio_notice_stays_on_one_line(size: tuple[int, int]) -> None:
    session = ScriptedSession()  # NullAudio: no devices
    app = make_app(session)
    async with app.run_test(size=size) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        meters = app.query_one(LevelMeters)
        width, height = meters.size
        lines = [strip.text for strip in meters.render_lines(Region(0, 0, width, height))]
        assert lines == [NO_AUDIO.ljust(width)]  # one row, and the row below goes back


async def test_real_devices_get_two_meter_rows() -> None:
    session = ScriptedSession(audio=FakeDevices())
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        meters = app.query_one(LevelMeters)
        assert meters.size.height == 2
        transcript_height = app.query_one(Transcript).size.height
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        assert app.query_one(LevelMeters).size.height == 1
        assert app.query_one(Transcript).size.height == transcript_height + 1


async def _until_exit(pilot: Pilot[int]) -> None:
    for _ in range(300):
        if pilot.app.return_code is not None:
            return
        await pilot.pause(0.01)
    raise AssertionError("the app did not exit")


async def test_ctrl_c_hangs_up_and_exits_130_without_textual_hint() -> None:
    session = ScriptedSession()
    session.feed(*connected(), *agent_says("a1", ["Hi"], 2.0))
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        await drawn(pilot, session)
        # Neither Textual's "press ^q to quit" hint nor the input's copy: ours wins.
        assert app.active_bindings["ctrl+c"].binding.action == "abort"
        await pilot.press("h", "i")  # focus in the input, text in it
        session.advance(10.0)
        await pilot.press("ctrl+c")
        await _until_exit(pilot)
    assert UserHangup() in sent(session)
    assert session.commands.count("hangup") == 1
    assert session.state.end_reason == "interrupted"  # a signal, not the hang-up key
    assert app.interrupted
    assert exit_code_of(app.outcome) == EXIT_INTERRUPTED
    err = io.StringIO()
    report_end(app, stdout=io.StringIO(), stderr=err)
    assert err.getvalue() == "fishtalk: interrupted; hung up · 0:09 · 1 turn · 0 tools\n"


async def test_ctrl_c_on_the_ended_screen_just_leaves_with_the_session_code() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected(), c.Hangup(5.0))
        for _ in range(100):
            if isinstance(app.screen, EndedScreen):
                break
            await pilot.pause(0.01)
        assert isinstance(app.screen, EndedScreen)
        await pilot.press("ctrl+c")
        await _until_exit(pilot)
    assert not app.interrupted
    assert exit_code_of(app.outcome) == 0


def test_ctrl_c_is_on_the_help_screen() -> None:
    rows = help_table({}).columns
    keys_column = [str(cell) for cell in rows[0].cells]
    help_column = [str(cell) for cell in rows[1].cells]
    row = keys_column.index("^c")
    assert "130" in help_column[row]


async def test_hang_up_leaves_a_summary_line_on_stdout() -> None:
    session = ScriptedSession(c.initial_state(max_duration_seconds=1800))
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(
            *connected(),
            *agent_says("a1", ["Hi", " there"], 2.0),
            *user_interim("u1", 1, "what's the weather", 3.0, final=True),
            tool_started("t1", "lookup_weather", 4.0),
            tool_completed("t1", "lookup_weather", 5.0),
            tool_started("t2", "search", 5.0),
            tool_failed("t2", "search", 6.0, error="nope"),
            c.Hangup(48.5),
        )
        for _ in range(100):
            if isinstance(app.screen, EndedScreen):
                break
            await pilot.pause(0.01)
        await pilot.press("q")
        await _until_exit(pilot)
    out, err = io.StringIO(), io.StringIO()
    report_end(app, stdout=out, stderr=err)
    assert out.getvalue() == (
        "fishtalk: call ended — you hung up · 0:47 · 2 turns · 2 tools (1 failed)\n"
    )
    assert err.getvalue() == ""


async def test_failures_go_to_stderr_and_a_call_that_never_started_has_no_counts() -> None:
    class Refused(AuthenticationError):  # exits 3, by the CLI's table
        def __init__(self, message: str) -> None:
            super().__init__(message, status=401)

    class Failing(ScriptedSession):
        async def run(self) -> EndResult:
            raise Refused("the API key was rejected (401)")

    app = make_app(Failing())
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            if isinstance(app.screen, EndedScreen):
                break
            await pilot.pause(0.01)
        await pilot.press("q")
        await _until_exit(pilot)
    out, err = io.StringIO(), io.StringIO()
    report_end(app, stdout=out, stderr=err)
    assert (out.getvalue(), err.getvalue()) == ("", "fishtalk: the API key was rejected (401)\n")

    lost = ScriptedSession()
    app = make_app(lost)
    async with app.run_test(size=(80, 24)) as pilot:
        lost.feed(*connected(), c.Disconnected(65.0, "UNKNOWN_REASON"))
        for _ in range(100):
            if isinstance(app.screen, EndedScreen):
                break
            await pilot.pause(0.01)
        await pilot.press("q")
        await _until_exit(pilot)
    out, err = io.StringIO(), io.StringIO()
    report_end(app, stdout=out, stderr=err)
    assert out.getvalue() == ""
    assert err.getvalue() == (
        "fishtalk: call ended — the connection to the agent was lost · 1:04 · 0 turns · 0 tools\n"
    )


async def _settled(pilot: Pilot[int], session: ScriptedSession) -> None:
    await drawn(pilot, session)
    for _ in range(5):  # cards re-cut their lines after layout: let that land too
        await pilot.pause(0.02)


async def test_collapsed_tool_cards_keep_each_payload_on_one_line() -> None:
    session = ScriptedSession()
    app = make_app(session)
    long_input = '{"query": "a very long question", "padding": "' + "x" * 300 + '"}'
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(
            *connected(),
            client_call("t1", "get_local_context", 2.0, {}),
            c.ClientToolFinished("t1", "ok", 2.1, result_preview='{"local_time": "' + "9" * 80),
            tool_started("t2", "search_docs", 3.0, source="mcp", input=long_input),
            tool_failed("t2", "search_docs", 3.5, source="mcp", error="upstream " * 20),
        )
        await _settled(pilot, session)
        panel = app.query_one(ToolPanel)
        for view in panel.card_views:
            outer = view.outer_size
            strips = view.render_lines(Region(0, 0, outer.width, outer.height))
            lines = [s.text.removeprefix("▊").strip() for s in strips]
            payloads = [line for line in lines if line.startswith(("in ", "out", "→", "✕ up"))]
            assert payloads, lines
            for line in payloads:
                assert line.endswith("…"), lines  # cut to the card, not wrapped under it
            # header (maybe wrapped once) + one line per payload / result / error
            assert outer.height <= 2 + len(payloads) + 1, lines
        expanded = panel.view("t2")
        assert expanded is not None
        expanded.set_expanded(True)
        await pilot.pause(0.05)
        assert "x" * 20 in str(expanded.render())  # expanded: everything, wrapped


async def test_tool_panel_keeps_the_newest_card_in_view_when_a_card_grows() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected())
        for i in range(4):
            session.feed(tool_started(f"w{i}", f"tool_{i}", 2.0 + i, input='{"n": 1}'))
            session.feed(tool_completed(f"w{i}", f"tool_{i}", 2.5 + i, output='{"ok": true}'))
        session.feed(client_call("c1", "get_local_context", 7.0, {}))
        await _settled(pilot, session)
        panel = app.query_one(ToolPanel)
        assert panel.max_scroll_y > 0
        assert panel.scroll_offset.y == panel.max_scroll_y
        before = panel.max_scroll_y
        # The last card grows (its local result arrives): still followed to the end.
        session.feed(c.ClientToolFinished("c1", "ok", 7.2, result_preview='{"tz": "UTC"}'))
        await _settled(pilot, session)
        assert panel.max_scroll_y > before
        assert panel.scroll_offset.y == panel.max_scroll_y
        newest = panel.view("c1")
        assert newest is not None
        assert newest.region.bottom <= panel.region.bottom


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_empty_transcript_hint_is_not_clipped(size: tuple[int, int]) -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        transcript = app.query_one(Transcript)
        assert transcript.render_line(0).text.strip() == "Nothing said yet. Type below, or speak."


def _footer_actions(app: FishtalkApp) -> list[str]:
    footer = app.screen_stack[0].query_one(Footer)
    return [str(getattr(key, "action", "")) for key in footer.query("FooterKey")]


async def test_once_the_call_ended_the_footer_only_offers_to_leave() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        assert {"hangup", "toggle_mute", "interrupt", "quit"} <= set(_footer_actions(app))
        session.feed(c.Hangup(5.0))
        for _ in range(100):
            if isinstance(app.screen, EndedScreen):
                break
            await pilot.pause(0.01)
        await pilot.pause(0.05)
        assert _footer_actions(app) == ["quit"]
        assert app.check_action("hangup", ()) is False
        await pilot.press("ctrl+x")  # no second hang-up: the key now just leaves
        await _until_exit(pilot)
    assert session.commands.count("hangup") == 0  # the scripted end was not ours


async def test_the_ended_screen_says_it_leaves_by_itself() -> None:
    session = ScriptedSession()
    app = make_app(session, ended_linger=30.0)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected(), c.Hangup(5.0))
        for _ in range(100):
            if isinstance(app.screen, EndedScreen):
                break
            await pilot.pause(0.01)
        assert isinstance(app.screen, EndedScreen)
        hint = app.screen.query_one("#ended-hint", Static)
        assert str(hint.render()) == "Leaving in 30 s; any key leaves now."
        await pilot.press("space")
        await _until_exit(pilot)
