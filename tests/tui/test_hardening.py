"""Rough edges a new user hit: errors kept in the transcript, a status bar that does not
contradict itself, muting without a microphone, and screenshots with no ~/Downloads."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from fishtalk.core import conversation as c
from fishtalk.core.protocol import AgentError
from fishtalk.tui.app import NO_MIC, NO_SPEAKER, FishtalkApp
from fishtalk.tui.widgets.meters import NO_AUDIO
from fishtalk.tui.widgets.status import ModeFlags
from fishtalk.tui.widgets.transcript import Transcript

from .helpers import FakeDevices, ScriptedSession, agent_says, connected, drawn, make_app


def screen_text(app: FishtalkApp) -> str:
    """Every character on the screen, as the terminal would show it."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def notices(app: FishtalkApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


def svg_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


async def until_notified(pilot: Pilot[int], app: FishtalkApp, part: str) -> str:
    for _ in range(300):
        for message in notices(app):
            if part in message:
                return message
        await pilot.pause(0.01)
    raise AssertionError(f"no notification with {part!r}: {notices(app)}")


async def test_errors_stay_in_the_transcript_literally() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(
            *connected(),
            *agent_says("a1", ["Before"], 2.0),
            c.AgentEventReceived(AgentError(code="llm_failed", message="x"), 3.0),
            *agent_says("a2", ["After"], 4.0),
        )
        session.feed(c.LocalError("weird", 4.5, detail="[b]x[/b]\x1b[31m"))
        await drawn(pilot, session)
        items = app.query_one(Transcript).plain_items()
        errors = [i for i, item in enumerate(items) if item.startswith("⚠ error: ")]
        assert len(errors) == len(session.state.errors) >= 2, items
        # In time order with what was said, and shown literally (no markup, no escapes).
        assert items[0].startswith("agent ▸ Before")
        assert items[-1].startswith("⚠ error: ")
        assert items[-1].endswith("— [b]x[/b]␛[31m")
        assert any(item.startswith("agent ▸ After") for item in items[errors[0] :])
        shown = screen_text(app)
        assert "⚠ error:" in shown
        assert "[b]x[/b]␛[31m" in shown
        assert "\x1b" not in shown


async def test_without_audio_the_status_bar_says_so_once() -> None:
    session = ScriptedSession()  # NullAudio: no devices at all
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        shown = screen_text(app)
        assert shown.count(NO_AUDIO) == 1
        assert "mic:" not in shown
        assert "replies: spoken" not in shown
        assert not app.query_one(ModeFlags).display


async def test_with_audio_the_flags_show() -> None:
    session = ScriptedSession(audio=FakeDevices())
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        shown = screen_text(app)
        assert "mic: live" in shown
        assert NO_AUDIO not in shown


async def test_mute_without_a_microphone_says_there_is_none() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        await pilot.press("ctrl+o")
        message = await until_notified(pilot, app, "no microphone")
        assert message == NO_MIC
        assert not session.state.muted
        assert "set_muted" not in session.commands


@pytest.mark.parametrize("downloads", [False, True], ids=["no-downloads", "downloads"])
async def test_palette_screenshot_saves_where_it_can_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, downloads: bool
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    if downloads:
        (home / "Downloads").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    app = make_app(ScriptedSession())
    async with app.run_test(size=(80, 24)) as pilot:
        (command,) = [
            cmd for cmd in app.get_system_commands(app.screen) if cmd.title == "Screenshot"
        ]
        command.callback()
        message = await until_notified(pilot, app, "Saved to ")
        saved = Path(message.removeprefix("Saved to "))
        assert svg_text(saved).startswith("<svg")
        folder = home / "Downloads" if downloads else tmp_path / "state/fishtalk/screenshots"
        assert saved.parent == folder


async def test_spoken_replies_without_audio_output_say_they_stay_text() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        await pilot.press("ctrl+t")
        assert await until_notified(pilot, app, "no audio output") == NO_SPEAKER
        await drawn(pilot, session)
        assert "replies: spoken" not in screen_text(app)
