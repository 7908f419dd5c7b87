"""The direct-join flags as settings (pure): the way to join given as flags wins over the
other one set in the environment or the config file; both given as flags is an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from fishtalk.cli.config import load_settings
from fishtalk.cli.launch import livekit_target
from fishtalk.cli.livekit_options import LiveKitFlags
from fishtalk.core.errors import ConfigError

TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJ2aWRlbyI6eyJyb29tIjoiciJ9fQ.c2ln"  # room "r", unsigned
ENV = {"LIVEKIT_API_KEY": "env-key", "LIVEKIT_API_SECRET": "env-secret"}


def test_a_token_flag_wins_over_a_key_and_secret_in_the_environment() -> None:
    flags = LiveKitFlags(url="ws://127.0.0.1:9", token=TOKEN)
    target = livekit_target(load_settings(env=ENV, overrides=flags.overrides()))
    assert target is not None
    assert target.token is not None
    assert target.token.get_secret_value() == TOKEN
    assert (target.api_key, target.api_secret) == (None, None)


def test_minting_flags_win_over_a_token_in_the_config(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[livekit]\ntoken = "{TOKEN}"\n', "utf-8")
    flags = LiveKitFlags(url="ws://127.0.0.1:9", api_key="k", room="r")
    target = livekit_target(load_settings(config, env=ENV, overrides=flags.overrides()))
    assert target is not None
    assert target.token is None
    assert target.api_key is not None
    assert target.api_key.get_secret_value() == "k"
    assert target.api_secret is not None
    assert target.api_secret.get_secret_value() == "env-secret"


def test_both_ways_as_flags_is_an_error() -> None:
    flags = LiveKitFlags(url="ws://127.0.0.1:9", token=TOKEN, api_key="k", api_secret="s")
    with pytest.raises(ConfigError, match="not both"):
        livekit_target(load_settings(env={}, overrides=flags.overrides()))


def test_sessions_at_once_and_rooms_of_their_own() -> None:
    minted = livekit_target(
        load_settings(env=ENV, overrides=LiveKitFlags(url="ws://h:1", room="r").overrides())
    )
    assert minted is not None
    minted.check_at_once(5)
    rooms = {minted.one_of_many().room for _ in range(20)}
    assert len(rooms) == 20
    assert all(room is not None and room.startswith("r-") and len(room) == 10 for room in rooms)
    token = livekit_target(
        load_settings(env=ENV, overrides=LiveKitFlags(url="ws://h:1", token=TOKEN).overrides())
    )
    assert token is not None
    assert token.one_of_many() == token
    token.check_at_once(1)
    with pytest.raises(ConfigError, match="one participant"):
        token.check_at_once(2)
