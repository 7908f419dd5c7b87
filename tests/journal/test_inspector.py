"""The TUI's protocol inspector: raw events in and out, filter, detail, literal text."""

from __future__ import annotations

from collections.abc import Callable

from support.scripted import ScriptedSession
from textual.widgets import OptionList, Static

from fishtalk.core import conversation as conv
from fishtalk.engine import observe
from fishtalk.tui.app import FishtalkApp


class ObservedSession(ScriptedSession):
    """A scripted session with the real session's observer hook."""

    def __init__(self) -> None:
        super().__init__()
        self.observers: list[Callable[[observe.Observation], None]] = []

    def add_observer(self, fn: Callable[[observe.Observation], None]) -> Callable[[], None]:
        self.observers.append(fn)
        return lambda: None

    def emit(self, item: observe.Observation) -> None:
        for fn in self.observers:
            fn(item)


NASTY = b'{"type":"error","code":"x","message":"boom \\u001b[31mred\\u001b[0m [b]bold[/b]"}'


async def wait_for(pilot: object, check: Callable[[], bool]) -> None:
    for _ in range(200):
        await pilot.pause()  # type: ignore[attr-defined]
        if check():
            return
        await pilot.pause(0.01)  # type: ignore[attr-defined]
    raise AssertionError("condition never held")


async def test_f12_shows_raw_events_filters_and_pretty_prints_them_literally() -> None:
    session = ObservedSession()
    app = FishtalkApp(
        session, title="inspect", clock=lambda: 10.0, live_timers=False, ended_linger=None
    )
    async with app.run_test(size=(120, 40)) as pilot:
        assert session.observers, "the app attaches the inspector to a live session"
        session.emit(observe.PacketIn("agent-event", NASTY, "agent", 1.0))
        session.emit(observe.PacketOut("client-event", b'{"type":"user.message","text":"hi"}', 2))
        session.emit(conv.SendText(text="hi", at=2.0))
        inspector = app.inspector
        assert not inspector.shown
        await pilot.press("f12")
        assert inspector.shown
        await wait_for(pilot, lambda: len(inspector.shown_records) == 3)
        assert [r["type"] for r in inspector.shown_records] == ["packet_in", "packet_out", "input"]
        await pilot.press("tab", "tab")  # F12 left the focus in the input: list, filter
        await pilot.press(*"client")
        await wait_for(pilot, lambda: len(inspector.shown_records) == 1)
        assert inspector.shown_records[0]["topic"] == "client-event"
        for _ in "client":
            await pilot.press("backspace")
        await wait_for(pilot, lambda: len(inspector.shown_records) == 3)
        options = app.query_one("#inspector-list", OptionList)
        options.focus()
        options.highlighted = 0
        await pilot.pause()
        detail = app.query_one("#inspector-detail", Static)
        shown = str(detail.render())
        assert '"type": "error"' in shown  # the raw JSON, parsed and indented
        assert "\x1b" not in shown  # the escape is shown, not sent to the terminal
        assert "\\u001b[31mred" in shown  # JSON's own escape, as text
        assert "[b]bold[/b]" in shown  # literally: not markup
        await pilot.press("f12")
        assert not inspector.shown


async def test_the_inspector_is_on_the_help_screen_and_in_the_palette() -> None:
    from rich.console import Console

    from fishtalk.tui.screens.help import help_table

    console = Console(record=True, width=120)
    console.print(help_table({}))
    text = console.export_text()
    assert "f12" in text.lower()
    assert "protocol inspector" in text
    session = ObservedSession()
    app = FishtalkApp(
        session, title="inspect", clock=lambda: 10.0, live_timers=False, ended_linger=None
    )
    async with app.run_test(size=(120, 40)):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert any("nspector" in title for title in titles), titles
