"""Agent profiles (`[agents.NAME]`, `fishtalk agents`, `chat NAME`) and the session-override
flags of `chat` and `session create`, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fishtalk.cli.config import load_settings
from fishtalk.cli.exits import EXIT_USAGE
from fishtalk.core.errors import ConfigError

Run = Callable[..., Any]  # the run_cli fixture

PROFILES = """
[session]
agent_id = "default-agent"
language = "de"

[tools.notify]
builtin = true

[tools.open_url]
builtin = true

[agents.support]
agent_id = "agent-support"
description = "Customer support"
talk_mode = "toggle"
tools = ["notify"]

[agents.support.session]
language = "en"
voice_id = "voice-7"
first_message = "Hello from support"

[agents.shop]
agent_id = "agent-shop"
public = true
origin = "https://shop.example"
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(PROFILES, encoding="utf-8")
    return path


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def test_profile_layers_between_file_and_flags(config: Path) -> None:
    s = load_settings(config, env={}, profile="support")
    assert s.session.agent_id == "agent-support"
    assert s.session.language == "en"  # the profile beats [session]
    assert s.session.voice_id == "voice-7"
    assert s.profile_name == "support"
    assert s.profile is not None
    assert s.profile.talk_mode == "toggle"
    assert s.offered_tools == ["notify"]
    flagged = load_settings(config, env={}, profile="support", overrides={"session.language": "ja"})
    assert flagged.session.language == "ja"  # flags beat the profile
    plain = load_settings(config, env={})
    assert plain.session.agent_id == "default-agent"
    assert plain.profile is None


def test_unknown_profile_suggests_the_closest(config: Path) -> None:
    with pytest.raises(ConfigError, match=r"no agent profile 'suport'.*did you mean 'support'"):
        load_settings(config, env={}, profile="suport")


def test_bad_profile_names_the_key_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[agents.x]\nagent_id = "a"\ntalk_mode = "shout"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})
    message = str(caught.value)
    assert "agents.x.talk_mode" in message
    assert "line 3" in message
    path.write_text('[agents.x]\nagent_id = "a"\nlanguage = "en"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown setting agents\.x\.language"):
        load_settings(path, env={})
    path.write_text('[agents.x]\ndescription = "no id"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"agents\.x\.agent_id"):
        load_settings(path, env={})


def test_agents_lists_profiles(run_cli: Run, config: Path) -> None:
    result = run_cli("--config", str(config), "agents")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("shop ")
    assert "public, origin https://shop.example" in lines[0]
    assert lines[1].startswith("support ")
    assert "agent agent-support" in lines[1]
    assert "talk toggle" in lines[1]
    assert "tools: notify" in lines[1]
    assert "Customer support" in lines[2]
    as_json = json.loads(run_cli("--config", str(config), "agents", "--json").out)
    assert as_json["support"]["session"] == {
        "language": "en",
        "voice_id": "voice-7",
        "first_message": "Hello from support",
    }


def test_agents_without_profiles_says_how(run_cli: Run) -> None:
    result = run_cli("agents")
    assert result.code == 0
    assert "[agents.NAME]" in result.out


def test_session_create_with_a_profile(
    run_cli: Run, fish_api: Any, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    result = run_cli(
        "--config", str(config), "session", "create", "support", "--api-url", fish_api.url
    )
    assert result.code == 0, result.err
    body = fish_api.seen[0].body
    assert body["agent_id"] == "agent-support"
    assert body["language"] == "en"
    assert body["overrides"] == {"voice_id": "voice-7", "first_message": "Hello from support"}
    # --agent NAME is the same profile; --agent with any other value is an agent id.
    run_cli(
        "--config",
        str(config),
        "session",
        "create",
        "--agent",
        "support",
        "--api-url",
        fish_api.url,
    )
    assert fish_api.seen[1].body["agent_id"] == "agent-support"
    other = run_cli(
        "--config",
        str(config),
        "session",
        "create",
        "--agent",
        "agent-x",
        "--api-url",
        fish_api.url,
    )
    assert other.code == 0, other.err
    assert fish_api.seen[2].body["agent_id"] == "agent-x"
    assert fish_api.seen[2].body["language"] == "de"  # no profile: the file's [session]


def test_public_profile_sends_origin_without_key(
    run_cli: Run, fish_api: Any, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    result = run_cli(
        "--config", str(config), "session", "create", "shop", "--api-url", fish_api.url
    )
    assert result.code == 0, result.err
    headers = fish_api.seen[0].headers
    assert "Authorization" not in headers
    assert headers["Origin"] == "https://shop.example"


def test_misspelt_profile_is_one_line_exit_2(run_cli: Run, config: Path) -> None:
    for argv in (("chat", "suport"), ("session", "create", "suport")):
        result = run_cli("--config", str(config), *argv)
        assert result.code == EXIT_USAGE
        line = one_line(result.err)
        assert "'suport'" in line
        assert "did you mean 'support'?" in line


def test_agent_flag_close_to_a_profile_notes_it(
    run_cli: Run, fish_api: Any, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    result = run_cli(
        "--config", str(config), "session", "create", "--agent", "suport", "--api-url", fish_api.url
    )
    assert result.code == 0, result.err
    assert "did you mean 'support'?" in result.err
    assert fish_api.seen[0].body["agent_id"] == "suport"


def test_profile_tools_limit_what_is_offered(config: Path) -> None:
    from fishtalk.engine.tools.build import build_registry

    everything = build_registry(load_settings(config, env={}))
    assert {"notify", "open_url"} <= set(everything.names())
    offered = build_registry(load_settings(config, env={}, profile="support"))
    assert offered.names() == ["notify"]


def test_profile_offering_an_unknown_tool_is_a_config_error(tmp_path: Path) -> None:
    from fishtalk.engine.tools.build import build_registry

    path = tmp_path / "c.toml"
    path.write_text(
        '[tools.notify]\nbuiltin = true\n[agents.a]\nagent_id = "x"\ntools = ["notfy"]\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"'notfy'.*did you mean 'notify'"):
        build_registry(load_settings(path, env={}, profile="a"))


# --- session overrides from the command line -------------------------------------------------


def test_every_override_flag_reaches_the_request(
    run_cli: Run, fish_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    result = run_cli(
        "session", "create", "--agent", "a1", "--api-url", fish_api.url,
        "--language", "ja", "--timezone", "Asia/Tokyo", "--voice", "v-9",
        "--first-message-prompt", "greet warmly", "--system-prompt", "Be brief.",
        "--session-name", "doc test", "--end-user-id", "u-1",
        "--var", "name=Ada", "--var", "plan=pro", "--metadata", '{"source": "cli"}',
        "--no-server-recording", "--no-world-context", "--no-tool-events",
    )  # fmt: skip
    assert result.code == 0, result.err
    body = fish_api.seen[0].body
    assert body["language"] == "ja"
    assert body["timezone"] == "Asia/Tokyo"
    assert body["overrides"] == {
        "voice_id": "v-9",
        "first_message_prompt": "greet warmly",
        "system_prompt": "Be brief.",
    }
    assert body["name"] == "doc test"
    assert body["end_user_id"] == "u-1"
    assert body["dynamic_variables"] == {"name": "Ada", "plan": "pro"}
    assert body["metadata"] == {"source": "cli"}
    assert body["record_audio"] is False
    assert body["world_context"] is False
    assert body["tool_events"] is False


def test_no_override_flags_send_no_overrides(
    run_cli: Run, fish_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    assert run_cli("session", "create", "--agent", "a1", "--api-url", fish_api.url).code == 0
    body = fish_api.seen[0].body
    for absent in ("overrides", "name", "record_audio", "world_context", "language"):
        assert absent not in body


@pytest.mark.parametrize(
    ("flags", "names"),
    [
        (("--timezone", "Mars/Olympus"), "session.timezone"),
        (("--language", "english please"), "session.language"),
        (("--var", "novalue"), "--var"),
        (("--metadata", "[1, 2]"), "--metadata"),
        (("--metadata", "{nope"), "--metadata"),
        (("--voice", ""), "session.voice_id"),
        (("--first-message", "hi", "--first-message-prompt", "greet"), "first_message"),
        (("--end-user-id", "x" * 300), "session.end_user_id"),
    ],
    ids=lambda v: v if isinstance(v, str) else " ".join(v)[:30],
)
@pytest.mark.parametrize("command", [("chat",), ("session", "create")], ids=" ".join)
def test_a_bad_value_is_one_line_and_exit_2(
    run_cli: Run,
    fish_api: Any,
    monkeypatch: pytest.MonkeyPatch,
    command: tuple[str, ...],
    flags: tuple[str, ...],
    names: str,
) -> None:
    monkeypatch.setenv("FISH_API_KEY", fish_api.api_key)
    result = run_cli(*command, "--agent", "a1", "--api-url", fish_api.url, *flags)
    assert result.code == EXIT_USAGE, result.err
    assert names in one_line(result.err)
    assert fish_api.seen == []  # nothing was sent
