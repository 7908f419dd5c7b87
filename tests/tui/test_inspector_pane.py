"""The inspector beside a live transcript: the transcript keeps following while the pane
opens and closes, F12 leaves the focus where the user types, the record list always keeps
rows one can move through, and the pane's times and order are the journal's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.scripted import ScriptedSession
from textual.pilot import Pilot
from textual.widgets import Input, OptionList

from fishtalk.core import conversation as c
from fishtalk.engine import observe
from fishtalk.engine.journal.records import Recorder
from fishtalk.engine.journal.writer import JournalWriter
from fishtalk.tui.run import journal_info
from fishtalk.tui.session_like import JournalInfo
from fishtalk.tui.widgets.inspector import SUMMARY_CHARS, summary_line
from fishtalk.tui.widgets.message_input import MessageInput
from fishtalk.tui.widgets.transcript import Transcript

from .helpers import agent_says, connected, drawn, make_app

SIZES = [(80, 24), (200, 60)]


class ObservedSession(ScriptedSession):
    """A scripted session that tells its observers what the real one does: each input as
    it is fed, then the state it reduced to."""

    def __init__(self) -> None:
        super().__init__()
        self.observers: list[Callable[[observe.Observation], None]] = []

    def add_observer(self, fn: Callable[[observe.Observation], None]) -> Callable[[], None]:
        self.observers.append(fn)
        return lambda: None

    def feed(self, *inputs: c.Input) -> c.State:
        for inp in inputs:
            for fn in self.observers:
                fn(inp)
            previous = self.state
            state = super().feed(inp)
            for fn in self.observers:
                fn(observe.Reduced(state, inp.at, c.changes(previous, state)))
        return self.state


def tour(session: ScriptedSession, lines: int = 30) -> None:
    """More agent lines than any pane holds."""
    session.feed(*connected())
    for n in range(lines):
        words = ["Line", f" {n}", " of the tour,", " long enough to wrap at eighty columns."]
        session.feed(*agent_says(f"t{n}", words, 2.0 + n))


async def until(pilot: Pilot[int], condition: Callable[[], bool], what: str) -> None:
    for _ in range(300):
        await pilot.pause()
        if condition():
            return
        await pilot.pause(0.01)
    raise AssertionError(f"never happened: {what}")


def at_bottom(transcript: Transcript) -> bool:
    return transcript.max_scroll_y > 0 and transcript.scroll_y == transcript.max_scroll_y


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_transcript_keeps_following_as_the_inspector_opens_and_closes(
    size: tuple[int, int],
) -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=size) as pilot:
        tour(session, lines=60)
        await drawn(pilot, session)
        transcript = app.query_one(Transcript)
        await until(pilot, lambda: at_bottom(transcript), "the transcript at its end")
        await pilot.press("f12")
        await until(pilot, lambda: transcript.size.height < size[1] // 2, "a shorter pane")
        assert at_bottom(transcript)  # the newest line is still in view
        await pilot.press(*"hello", "enter")
        session.feed(*agent_says("r1", ["The reply", " to hello."], 100.0))
        await drawn(pilot, session)
        assert at_bottom(transcript)
        assert "to hello." in "\n".join(transcript.text_lines()[-3:])
        await pilot.press("f12")
        session.feed(*agent_says("r2", ["And", " one more."], 110.0))
        await drawn(pilot, session)
        assert at_bottom(transcript)
        # Scrolled up by hand, it stays put while the pane opens and lines arrive.
        transcript.scroll_to(y=0, animate=False, immediate=True)
        await pilot.press("f12")
        session.feed(*agent_says("r3", ["Not", " yanked."], 120.0))
        await drawn(pilot, session)
        assert transcript.scroll_y == 0


async def test_f12_leaves_the_focus_in_the_message_box_and_tab_reaches_the_pane() -> None:
    session = ObservedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        box = app.query_one("#input", MessageInput)
        assert app.focused is box
        await pilot.press("f12")
        assert app.inspector.shown
        assert app.focused is box
        await pilot.press(*"hi there", "enter")
        assert session.commands.count("send_text") == 1
        assert app.query_one("#inspector-filter", Input).value == ""
        stops = []
        for _ in range(5):
            await pilot.press("tab")
            stops.append(app.focused.id if app.focused is not None else None)
        assert stops == ["inspector-list", "inspector-filter", "transcript", "tools", "input"]
        await pilot.press("tab")  # in the list, then F12: the pane goes, the focus goes home
        await pilot.press("f12")
        assert not app.inspector.shown
        assert app.focused is box


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_record_list_keeps_visible_rows_and_a_visible_selection(
    size: tuple[int, int],
) -> None:
    session = ObservedSession()
    app = make_app(session)
    async with app.run_test(size=size) as pilot:
        tour(session, lines=12)  # a few hundred records, as after 20 s of the demo
        await drawn(pilot, session)
        await pilot.press("f12")
        options = app.query_one("#inspector-list", OptionList)
        await until(pilot, lambda: options.option_count > 50, "records listed")
        await pilot.press("tab")
        assert app.focused is options
        assert options.highlighted == options.option_count - 1  # the newest is picked
        await pilot.press("home")
        for _ in range(25):
            await pilot.press("down")
            await pilot.pause()
            rows = options.scrollable_content_region.height
            assert rows >= 3
            index = options.highlighted
            assert index is not None
            top = options.scroll_offset.y
            assert top <= index < top + rows, (top, index, rows, options.size)
        detail = app.query_one("#inspector-detail")
        assert detail.size.height > 0  # and its record is shown too
        for _ in range(10):
            await pilot.press("up")
        index = options.highlighted
        assert index is not None
        await until(pilot, lambda: options.scroll_offset.y <= index, "the selection in view")


async def test_the_inspector_times_records_as_the_journal_does(tmp_path: Path) -> None:
    mono0, wall0 = 1000.25, 1_700_000_000.0
    writer = JournalWriter(
        tmp_path / "call.jsonl",
        agent_id="a",
        front_end="tui",
        spoken=True,
        clock=lambda: mono0,
        wall=lambda: wall0,
    )
    try:
        info = journal_info(writer)
    finally:
        writer.close()
    assert info == JournalInfo(str(tmp_path / "call.jsonl"), mono0, wall0)
    session = ObservedSession()
    journal = Recorder(mono0, wall0)
    session.observers.append(lambda item: journal_records.extend(journal.records(item)))
    journal_records: list[dict[str, object]] = []
    app = make_app(session, journal=info)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f12")
        session.feed(*connected(at=1001.0), *agent_says("a1", ["Hi"], 1002.0))
        inspector = app.inspector
        await until(pilot, lambda: len(inspector.records) >= len(journal_records), "records")
    times = [(r["type"], r["t"], r["wall"]) for r in journal_records]
    shown = [(r["type"], r["t"], r["wall"]) for r in inspector.records]
    assert shown == times
    assert times[0][1] == pytest.approx(0.75)


async def test_what_happened_before_the_app_comes_first_in_the_inspector() -> None:
    session = ObservedSession()
    # The demo's launcher says so before the app exists (and long before the grant).
    session.feed(c.AddNotice("Starting the simulated agent…", 0.5))
    app = make_app(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f12")
        session.feed(*connected(at=2.0))
        inspector = app.inspector
        await until(pilot, lambda: len(inspector.records) >= 3, "records")
        first = inspector.records[0]
        assert "Starting the simulated agent" in str(first)
        assert all(r["t"] >= first["t"] for r in inspector.records)


def test_a_long_preview_ends_in_a_visible_ellipsis() -> None:
    record = {
        "type": "grant",
        "t": 0.5,
        "session_id": "s" * (SUMMARY_CHARS - 40),
        "max_duration_seconds": 1800,
    }
    line = summary_line(record)
    assert line.plain.endswith("…")
    assert '"max_duration_seconds":180' not in line.plain.replace("…", "")  # no 180 for 1800
    assert line.no_wrap
    assert line.overflow == "ellipsis"
    short = summary_line({"type": "grant", "t": 0.5, "max_duration_seconds": 1800})
    assert short.plain.endswith('"max_duration_seconds":1800}')


async def test_the_record_list_follows_new_records_until_one_is_picked() -> None:
    session = ObservedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("f12")
        tour(session, lines=6)
        options = app.query_one("#inspector-list", OptionList)
        await until(pilot, lambda: options.option_count > 40, "records listed")
        await until(pilot, lambda: options.scroll_y == options.max_scroll_y > 0, "at the end")
        await pilot.press("tab", "home")  # picked the first: the list stays there
        session.feed(*agent_says("more", ["More", " lines."], 50.0))
        count = options.option_count
        await until(pilot, lambda: options.option_count > count, "more records")
        await pilot.pause()
        assert options.scroll_y == 0
