"""Talk modes as logic: where the mode comes from (flag > profile > config), the talk
control's open/close rules, and reading key releases off kitty-protocol input."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fishtalk.cli.config import load_settings
from fishtalk.core.errors import ConfigError
from fishtalk.core.talk import (
    ASK_FOR_RELEASES,
    NO_RELEASE,
    KeyEvent,
    KittyKeys,
    Support,
    TalkControl,
)
from fishtalk.tui.release_keys import key_name

CONFIG = """
[audio]
talk_mode = "toggle"

[agents.pusher]
agent_id = "a1"
talk_mode = "push"

[agents.plain]
agent_id = "a2"
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def test_the_default_is_always(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    assert load_settings(empty, env={}).audio.talk_mode == "always"


def test_flag_beats_profile_beats_config(config: Path) -> None:
    assert load_settings(config, env={}).audio.talk_mode == "toggle"
    assert load_settings(config, env={}, profile="pusher").audio.talk_mode == "push"
    # A profile that says nothing leaves the config's mode.
    assert load_settings(config, env={}, profile="plain").audio.talk_mode == "toggle"
    flagged = load_settings(
        config, env={}, profile="pusher", overrides={"audio.talk_mode": "always"}
    )
    assert flagged.audio.talk_mode == "always"
    # The environment sits between the file and the profile, as for every key.
    env = {"FISHTALK_AUDIO__TALK_MODE": "always"}
    assert load_settings(config, env=env).audio.talk_mode == "always"
    assert load_settings(config, env=env, profile="pusher").audio.talk_mode == "push"


def test_a_bad_mode_is_one_line_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[audio]\ntalk_mode = "shout"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"audio\.talk_mode .*line 2"):
        load_settings(path, env={})


@dataclass
class _State:
    muted: bool = False


@dataclass
class FakeSession:
    """Pure logic only: records what the control asked of the session."""

    state: _State = field(default_factory=_State)
    calls: list[str] = field(default_factory=list)

    def set_muted(self, muted: bool) -> None:
        self.state.muted = muted
        self.calls.append("mute" if muted else "unmute")

    def activity(self) -> None:
        self.calls.append("activity")


def test_always_leaves_the_mic_open_and_ignores_the_key() -> None:
    session = FakeSession()
    talk = TalkControl(session, "always")
    assert not talk.keyed
    talk.press()
    talk.release()
    assert session.calls == []
    assert talk.is_open


def test_toggle_starts_closed_and_one_key_opens_and_closes() -> None:
    session = FakeSession()
    talk = TalkControl(session, "toggle", key="F5")
    assert session.calls == ["mute"]
    assert talk.look().text == "mic closed — press F5 to talk"
    talk.press()
    assert session.calls[-2:] == ["unmute", "activity"]  # opening sends user.activity
    assert talk.look().open
    assert "TALKING" in talk.look().text
    talk.release()  # a release means nothing in toggle
    assert talk.is_open
    talk.press()
    assert session.calls[-1] == "mute"
    assert not talk.is_open


def test_push_opens_while_held() -> None:
    session = FakeSession()
    talk = TalkControl(session, "push", key="F5")
    assert talk.releases_known(True) is None
    assert talk.look().text == "mic closed — hold F5 to talk"
    talk.press()
    talk.press()  # a repeat while held: still open, no second activity
    assert session.calls == ["mute", "unmute", "activity"]
    talk.release()
    assert session.calls[-1] == "mute"


def test_push_without_releases_says_so_once_and_toggles() -> None:
    session = FakeSession()
    talk = TalkControl(session, "push", key="F5")
    notice = talk.releases_known(False)
    assert notice == NO_RELEASE.format(key="F5")
    assert talk.effective == "toggle"
    assert talk.releases_known(False) is None  # once
    talk.press()
    assert talk.is_open
    talk.press()
    assert not talk.is_open


def test_toggle_mode_needs_no_notice_without_releases() -> None:
    talk = TalkControl(FakeSession(), "toggle")
    assert talk.releases_known(False) is None
    assert talk.effective == "toggle"


def test_line_mode_look() -> None:
    session = FakeSession()
    talk = TalkControl(session, "push", key="/talk")
    assert talk.look(line_mode=True).text == "mic closed — /talk to talk"
    talk.toggle()
    assert talk.look(line_mode=True).text == "● TALKING — /talk to stop"


# --- the terminal's input -------------------------------------------------------------------


def test_releases_are_taken_out_and_reported() -> None:
    keys = KittyKeys()
    # F5 press, repeat, release (kitty: CSI 15 ; mods:event ~), then "t" typed, then
    # Ctrl+Space down and up (CSI 32 ; 5:3 u).
    text, found = keys.feed("\x1b[15~\x1b[15;1:2~\x1b[15;1:3~\x1b[116u\x1b[32;5u\x1b[32;5:3u")
    assert text == "\x1b[15~\x1b[15;1~\x1b[116u\x1b[32;5u"  # repeats become presses
    assert found == [
        KeyEvent("press", "\x1b[15~"),
        KeyEvent("repeat", "\x1b[15;1~"),
        KeyEvent("release", "\x1b[15;1~"),
        KeyEvent("press", "\x1b[116u"),
        KeyEvent("press", "\x1b[32;5u"),
        KeyEvent("release", "\x1b[32;5u"),
    ]
    # The names Textual gives them, which the app compares with the talk key.
    assert key_name(found[2].press) == "f5"
    assert key_name(found[5].press) == "ctrl+space"


def test_a_release_cut_between_reads_waits_for_the_rest() -> None:
    keys = KittyKeys()
    text, found = keys.feed("ab\x1b[1;1")
    assert (text, found) == ("ab", [])
    text, found = keys.feed(":3Q")
    assert text == ""
    assert found == [KeyEvent("release", "\x1b[1;1Q")]


def test_a_lone_escape_is_handed_on_when_input_pauses() -> None:
    keys = KittyKeys()
    assert keys.feed("\x1b") == ("", [])
    assert keys.flush() == "\x1b"


def test_other_sequences_pass_untouched() -> None:
    keys = KittyKeys()
    data = "\x1b[A\x1b[1;5C\x1b[<0;10;5M\x1b[200~pasted\x1b[201~\x1b[?2026;2$y"
    text, found = keys.feed(data)
    assert text == data
    assert all(isinstance(item, KeyEvent) for item in found)


def test_the_terminal_says_it_reports_releases() -> None:
    keys = KittyKeys()
    assert ASK_FOR_RELEASES.endswith("\x1b[?u\x1b[c")
    text, found = keys.feed("\x1b[?27u\x1b[?62;22c")  # flags 27 = 25 (Textual's) + 2
    assert text == ""
    assert found == [Support(True)]
    assert keys.answered


def test_a_terminal_without_the_protocol_answers_only_the_device_attributes() -> None:
    keys = KittyKeys()
    text, found = keys.feed("x\x1b[?1;2c")
    assert text == "x"
    assert found == [Support(False)]


def test_a_terminal_with_the_protocol_but_no_event_types() -> None:
    keys = KittyKeys()
    _, found = keys.feed("\x1b[?25u\x1b[?62c")
    assert found == [Support(False)]
