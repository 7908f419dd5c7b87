"""fishtalk.engine.paths: platform locations, computed when asked, redirectable for tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from fishtalk.engine import paths


def test_locations_follow_xdg_and_fishtalk_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("FISHTALK_CONFIG", raising=False)
    assert paths.config_file() == tmp_path / "cfg" / "fishtalk" / "config.toml"
    assert paths.default_config_file() == paths.config_file()
    assert paths.log_dir().is_relative_to(tmp_path / "state")
    assert paths.transcript_dir() == tmp_path / "data" / "fishtalk" / "transcripts"
    monkeypatch.setenv("FISHTALK_CONFIG", str(tmp_path / "elsewhere.toml"))
    assert paths.config_file() == tmp_path / "elsewhere.toml"
    assert paths.default_config_file() == tmp_path / "cfg" / "fishtalk" / "config.toml"
