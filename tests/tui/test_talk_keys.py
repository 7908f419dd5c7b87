"""Talk modes in the TUI, through Textual's pilot: the talk key (F5) in toggle and push
mode, the status bar's "● TALKING" / "mic closed" line, key releases, and push-to-talk's
fallback to toggle where the terminal reports no releases."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from support.scripted import ScriptedSession
from textual.pilot import Pilot

from fishtalk.core import conversation as c
from fishtalk.core.protocol import UserActivity
from fishtalk.core.talk import NO_RELEASE
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.release_keys import ANSWER_WAIT, KeyReleased, ReleaseSupport
from fishtalk.tui.widgets.status import ModeFlags

from .helpers import FakeDevices, connected, drawn, make_app


def _activities(session: ScriptedSession) -> int:
    return sum(
        1
        for effect in session.effects
        if isinstance(effect, c.SendClientEvent) and isinstance(effect.event, UserActivity)
    )


def _flags(app: FishtalkApp) -> str:
    return str(app.query_one(ModeFlags).render())


def _footer_keys(app: FishtalkApp) -> set[str]:
    return {binding.action for (_, binding, enabled, _) in app.active_bindings.values() if enabled}


async def _until(pilot: Pilot[int], check: Callable[[], bool], within: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            raise AssertionError("condition not reached")
        await pilot.pause(0.02)


async def test_toggle_opens_and_closes_the_mic_with_one_key() -> None:
    session = ScriptedSession(audio=FakeDevices())
    app = make_app(session, talk_mode="toggle")
    async with app.run_test(size=(120, 30)) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        assert session.state.muted  # toggle starts with the mic closed
        assert "mic closed — press F5 to talk" in _flags(app)
        assert "talk" in _footer_keys(app)
        await pilot.press("f5")
        await drawn(pilot, session)
        assert not session.state.muted
        assert _activities(session) == 1  # opening sent user.activity
        assert "● TALKING" in _flags(app)
        assert app.query_one(ModeFlags).has_class("-talking")
        await pilot.press("f5")
        await drawn(pilot, session)
        assert session.state.muted
        assert c.SetMicrophoneMuted(True) in session.effects
        assert "mic closed" in _flags(app)
        assert _activities(session) == 1  # closing sends none


async def test_always_has_no_talk_key() -> None:
    session = ScriptedSession(audio=FakeDevices())
    app = make_app(session)
    async with app.run_test(size=(120, 30)) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        assert not session.state.muted
        assert "talk" not in _footer_keys(app)
        await pilot.press("f5")
        await pilot.press("ctrl+o")  # the mute key still works
        await drawn(pilot, session)
        assert session.commands == ["set_muted"]
        assert "mic: MUTED" in _flags(app)


async def test_push_to_talk_opens_while_the_key_is_held() -> None:
    session = ScriptedSession(audio=FakeDevices())
    app = make_app(session, talk_mode="push")
    async with app.run_test(size=(120, 30)) as pilot:
        session.feed(*connected())
        app.post_message(ReleaseSupport(True))  # what the driver posts for a kitty terminal
        await drawn(pilot, session)
        await _until(pilot, lambda: app.talk.releases is True)
        assert "mic closed — hold F5 to talk" in _flags(app)
        await pilot.press("f5")
        await drawn(pilot, session)
        assert not session.state.muted
        assert _activities(session) == 1
        app.post_message(KeyReleased("f1"))  # another key's release: nothing
        app.post_message(KeyReleased("f5"))
        await _until(pilot, lambda: session.state.muted)
        await drawn(pilot, session)
        assert "mic closed — hold F5 to talk" in _flags(app)
        assert app.talk.effective == "push"


async def test_push_without_key_releases_says_so_once_and_toggles() -> None:
    """No answer from the terminal (the headless driver, like a terminal without the kitty
    protocol, never reports releases): after the wait, one notice, and F5 toggles."""
    session = ScriptedSession(audio=FakeDevices())
    app = make_app(session, talk_mode="push")
    notices: list[str] = []
    async with app.run_test(size=(120, 30)) as pilot:
        original = app.notify

        def notify(message: str, **kw: object) -> None:
            notices.append(message)
            original(message, **kw)  # type: ignore[arg-type]

        app.notify = notify  # type: ignore[method-assign]
        session.feed(*connected())
        await _until(pilot, lambda: app.talk.releases is False, within=ANSWER_WAIT + 10)
        assert app.talk.effective == "toggle"
        expected = NO_RELEASE.format(key="F5")
        await _until(pilot, lambda: expected in notices)
        app.post_message(ReleaseSupport(False))  # a late answer changes nothing
        await drawn(pilot, session)
        assert "mic closed — press F5 to talk" in _flags(app)
        await pilot.press("f5")
        await drawn(pilot, session)
        assert not session.state.muted
        app.post_message(KeyReleased("f5"))  # (no terminal sends it here; it would not close)
        await pilot.press("f5")
        await drawn(pilot, session)
        assert session.state.muted
        assert notices.count(expected) == 1


async def test_the_talk_key_can_be_rebound() -> None:
    session = ScriptedSession(audio=FakeDevices())
    app = make_app(session, talk_mode="toggle", keymap={"talk": "f7"})
    async with app.run_test(size=(120, 30)) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        assert "press F7 to talk" in _flags(app)
        await pilot.press("f7")
        await drawn(pilot, session)
        assert not session.state.muted
