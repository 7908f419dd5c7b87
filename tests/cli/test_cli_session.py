"""`fishtalk session create|end` against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import pytest

from fishtalk import __version__
from fishtalk.cli.exits import EXIT_AUTH, EXIT_NOT_FOUND, EXIT_UNAVAILABLE, EXIT_USAGE

Run = Callable[..., Any]  # the run_cli fixture


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def test_create_with_key_hides_token(
    run_cli: Run, fish_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    result = run_cli("session", "create", "--agent", "agent-1", "--api-url", fish_api.url)
    assert result.code == 0, result.err
    assert "sess-123" in result.out
    assert "wss://lk.example.test" in result.out
    assert fish_api.token not in result.out + result.err
    assert fish_api.api_key not in result.out + result.err
    assert "--show-token" in result.out
    (seen,) = fish_api.seen
    assert seen.path == "/v1/agent/sessions"
    assert seen.headers["Authorization"] == f"Bearer {fish_api.api_key}"
    assert seen.body["agent_id"] == "agent-1"
    assert seen.body["tool_events"] is True


def test_create_json_and_show_token(
    run_cli: Run, fish_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    monkeypatch.setenv("FISHTALK_AGENT", "agent-env")
    monkeypatch.setenv("FISHTALK_API_URL", fish_api.url)
    hidden = run_cli("session", "create", "--json")
    assert hidden.code == 0, hidden.err
    grant = json.loads(hidden.out)
    assert grant["session_id"] == "sess-123"
    assert grant["transport"] == "livekit"
    assert grant["max_duration_seconds"] == 1800
    assert grant["token"] != fish_api.token
    assert fish_api.token not in hidden.out
    assert fish_api.seen[0].body["agent_id"] == "agent-env"

    shown = run_cli("session", "create", "--json", "--show-token")
    assert shown.code == 0, shown.err
    assert json.loads(shown.out)["token"] == fish_api.token


def test_create_public_sends_origin_and_sdk_header_not_key(
    run_cli: Run, fish_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)  # present, but --public ignores it
    result = run_cli(
        "session", "create", "--agent", "pub", "--api-url", fish_api.url,
        "--public", "--origin", "https://shop.example",
    )  # fmt: skip
    assert result.code == 0, result.err
    headers = fish_api.seen[0].headers
    assert "Authorization" not in headers
    assert headers["Origin"] == "https://shop.example"
    assert headers["X-Fish-SDK"] == f"fishtalk/{__version__}"


def test_public_without_origin_is_usage_error(run_cli: Run, fish_api: Any) -> None:
    result = run_cli("session", "create", "--agent", "pub", "--api-url", fish_api.url, "--public")
    assert result.code == EXIT_USAGE
    assert "origin" in one_line(result.err)
    assert fish_api.seen == []


def test_no_key_is_usage_error(run_cli: Run, fish_api: Any) -> None:
    result = run_cli("session", "create", "--agent", "a", "--api-url", fish_api.url)
    assert result.code == EXIT_USAGE
    assert "FISH_API_KEY" in one_line(result.err)


def test_no_agent_is_usage_error(
    run_cli: Run, fish_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    result = run_cli("session", "create", "--api-url", fish_api.url)
    assert result.code == EXIT_USAGE
    assert "--agent" in one_line(result.err)


def test_bad_key_exit_auth_one_line(
    run_cli: Run, fish_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", "sk-wrong-key-987654")
    result = run_cli("session", "create", "--agent", "a", "--api-url", fish_api.url)
    assert result.code == EXIT_AUTH
    line = one_line(result.err)
    assert line.startswith("fishtalk: ")
    assert "sk-wrong-key-987654" not in result.err + result.out


def test_unknown_agent_exit_not_found(
    run_cli: Run, fish_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    result = run_cli("session", "create", "--agent", "missing", "--api-url", fish_api.url)
    assert result.code == EXIT_NOT_FOUND
    one_line(result.err)


def test_connection_refused_exit_unavailable(run_cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("FISH_API_KEY", "sk-anything-123456")
    result = run_cli("session", "create", "--agent", "a", "--api-url", f"http://127.0.0.1:{port}")
    assert result.code == EXIT_UNAVAILABLE
    one_line(result.err)


def test_end_session(run_cli: Run, fish_api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    result = run_cli("session", "end", "sess-123", "--api-url", fish_api.url)
    assert result.code == 0, result.err
    assert "sess-123" in result.out
    assert fish_api.seen[-1].path == "/v1/agent/sessions/sess-123/end"
    assert fish_api.seen[-1].headers["Authorization"] == f"Bearer {fish_api.api_key}"

    missing = run_cli("session", "end", "sess-404", "--api-url", fish_api.url)
    assert missing.code == EXIT_NOT_FOUND
    one_line(missing.err)
