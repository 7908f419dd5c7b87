"""`fishtalk doctor --online` against a real HTTP server on 127.0.0.1: it says what it is
about to do, creates one session and ends it at once; offline it sends nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Run = Callable[..., Any]  # the run_cli fixture


@pytest.fixture(autouse=True)
def no_sound_server(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULSE_SERVER", f"unix:{tmp_path}/nowhere")


def test_online_creates_and_ends_one_session(
    run_cli: Run, fish_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    monkeypatch.setenv("FISHTALK_API_URL", fish_api.url)
    monkeypatch.setenv("FISHTALK_AGENT", "agent-1")
    result = run_cli("doctor", "--online", "--mic-seconds", "0")
    lines = result.out.splitlines()
    assert lines[0].startswith("--online: creating a session")
    online = next(line for line in lines if "  online:" in line)
    assert online.startswith("ok")
    assert "sess-123" in online
    assert [(seen.method, seen.path) for seen in fish_api.seen] == [
        ("POST", "/v1/agent/sessions"),
        ("POST", "/v1/agent/sessions/sess-123/end"),
    ]
    assert fish_api.api_key not in result.out + result.err


def test_online_with_a_refused_key_fails(
    run_cli: Run, fish_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", "sk-wrong-key-0123456789")
    monkeypatch.setenv("FISHTALK_API_URL", fish_api.url)
    monkeypatch.setenv("FISHTALK_AGENT", "agent-1")
    result = run_cli("doctor", "--online", "--mic-seconds", "0")
    online = next(line for line in result.out.splitlines() if "  online:" in line)
    assert online.startswith("fail")
    assert result.code == 1
    assert "sk-wrong-key" not in result.out + result.err


def test_offline_sends_nothing(
    run_cli: Run, fish_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    monkeypatch.setenv("FISHTALK_API_URL", fish_api.url)
    result = run_cli("doctor", "--mic-seconds", "0")
    assert fish_api.seen == []
    assert "  online:" not in result.out
    key = next(line for line in result.out.splitlines() if "  api key:" in line)
    assert key.startswith("ok")
    assert "not checked online" in key


def test_online_with_a_profile_uses_its_agent(
    run_cli: Run, fish_api: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[api]\nurl = "{fish_api.url}"\n[agents.support]\nagent_id = "agent-support"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    result = run_cli("--config", str(config), "doctor", "support", "--online", "--mic-seconds", "0")
    assert "agent profile 'support'" in result.out
    assert fish_api.seen[0].body["agent_id"] == "agent-support"
    misspelt = run_cli("--config", str(config), "doctor", "suport", "--mic-seconds", "0")
    assert misspelt.code == 1
    config_line = next(line for line in misspelt.out.splitlines() if "  config:" in line)
    assert config_line.startswith("fail")
    assert "did you mean 'support'?" in config_line
