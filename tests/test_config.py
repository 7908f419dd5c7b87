"""fishtalk.cli.config: layering, environment, validation messages, secrecy, the example file."""

from __future__ import annotations

import itertools
import re
import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from fishtalk.cli.config import load_settings, redacted_dict
from fishtalk.cli.exits import EXIT_USAGE, exit_code_for
from fishtalk.cli.settings import AgentProfile, Settings
from fishtalk.core.errors import ConfigError, FishtalkError
from fishtalk.engine import paths
from fishtalk.engine.tools.declared import ToolDecl
from fishtalk.engine.tools.secret_env import SECRET_ENV_NAMES, is_secret_env_name

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "config.example.toml"
PACKAGED_EXAMPLE = REPO / "fishtalk" / "data" / "config.example.toml"
SECRET = "sk-live-7f3a9c-do-not-print"


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Never read the developer's real config file.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("FISHTALK_CONFIG", raising=False)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_any_file(tmp_path: Path) -> None:
    s = load_settings(env={paths.CONFIG_PATH_ENV: str(tmp_path / "absent.toml")})
    assert s.api.url == "https://api.fish.audio"
    assert s.api.api_key is None
    assert s.session.tool_events is True
    assert s.session.client_tool_timeout == 15.0
    assert s.audio.echo_cancellation is True
    assert s.ui.plain is None
    assert s.tools == {}


def test_precedence_defaults_file_env_flags(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[session]\nagent_id = "from-file"\nlanguage = "de"\n'
        '[api]\nurl = "https://file.example"\ntimeout = 3\n',
    )
    env = {"FISHTALK_AGENT": "from-env", "FISHTALK_API_URL": "https://env.example"}
    s = load_settings(path, env=env, overrides={"session.agent_id": "from-flag", "api.url": None})
    assert s.session.agent_id == "from-flag"  # flag beats env beats file
    assert s.api.url == "https://env.example"  # None override = flag not given
    assert s.session.language == "de"  # file beats default
    assert s.api.timeout == 3.0
    assert s.audio.enabled is True  # default


def test_env_aliases_and_generic_variables(tmp_path: Path) -> None:
    env = {
        "FISH_API_KEY": SECRET,
        "FISHTALK_ORIGIN": "https://shop.example",
        "FISHTALK_AUDIO__ECHO_CANCELLATION": "false",
        "FISHTALK_AUDIO__INPUT_DEVICE": "3",
        "FISHTALK_SESSION__CLIENT_TOOL_TIMEOUT": "20",
        "FISHTALK_SESSION__DYNAMIC_VARIABLES": '{"name": "Ada"}',
        "FISHTALK_UI__PLAIN": "true",
        "FISHTALK_CONFIG": str(tmp_path / "absent.toml"),
        "FISHTALK_SOMETHING_ELSE": "ignored",  # no "__": not a setting
    }
    s = load_settings(env=env)
    assert s.api.api_key is not None
    assert s.api.api_key.get_secret_value() == SECRET
    assert s.api.origin == "https://shop.example"
    assert s.audio.echo_cancellation is False
    assert s.audio.input_device == 3
    assert s.session.client_tool_timeout == 20.0
    assert s.session.dynamic_variables == {"name": "Ada"}
    assert s.ui.plain is True


def test_fishtalk_config_env_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[session]\nagent_id = "via-env-path"\n')
    s = load_settings(env={"FISHTALK_CONFIG": str(path)})
    assert s.session.agent_id == "via-env-path"


def test_unknown_env_key_names_the_variable_and_suggests() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env={"FISHTALK_AUDIO__ECHO_CANCELATION": "false"})
    message = str(info.value)
    assert "FISHTALK_AUDIO__ECHO_CANCELATION" in message
    assert "audio.echo_cancelation" in message
    assert "echo_cancellation" in message.split("did you mean")[1]


def test_invalid_env_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"audio\.enabled from \$FISHTALK_AUDIO__ENABLED"):
        load_settings(
            env={"FISHTALK_AUDIO__ENABLED": "maybe", "FISHTALK_CONFIG": str(tmp_path / "x")}
        )


def test_broken_toml_names_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, '[api]\nurl = "https://x.example"\ntimeout = = 3\n')
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    message = str(info.value)
    assert str(path) in message
    assert "line 3" in message
    assert "column" in message
    assert "\n" not in message
    assert exit_code_for(None, info.value) == EXIT_USAGE == 2
    assert isinstance(info.value, FishtalkError)


def test_unknown_key_in_file_names_dotted_key_file_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path, "[api]\ntimeout = 5\n\n[audio]\nenabled = true\necho_cancelation = false\n"
    )
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    message = str(info.value)
    assert "unknown setting audio.echo_cancelation" in message
    assert f"{path}, line 6" in message
    assert "did you mean 'echo_cancellation'" in message


def test_unknown_section(tmp_path: Path) -> None:
    path = write(tmp_path, "[audoi]\nenabled = true\n")
    with pytest.raises(ConfigError, match=r"unknown setting audoi .*line 1.*did you mean 'audio'"):
        load_settings(path, env={})


def test_invalid_value_names_key_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "[session]\nclient_tool_timeout = 500\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    message = str(info.value)
    assert "invalid setting session.client_tool_timeout" in message
    assert "line 2" in message
    assert "120" in message


def test_explicit_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(tmp_path / "nope.toml", env={})


def test_url_must_be_http(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"api\.url .*http:// or https://"):
        load_settings(env={"FISHTALK_API_URL": "ftp://x", "FISHTALK_CONFIG": str(tmp_path / "x")})


# --- tools -------------------------------------------------------------------------------


def test_tool_declarations(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "[tools.lookup]\n"
        'command = ["python3", "lookup.py"]\n'
        'approve = "always"\ntimeout = 120\ncwd = "/tmp"\nenv = ["HOME", "LANG"]\n'
        "[tools.open_url]\nbuiltin = true\n",
    )
    s = load_settings(path, env={})
    assert s.tools["lookup"] == ToolDecl(
        command=["python3", "lookup.py"],
        approve="always",
        timeout=120.0,
        cwd="/tmp",
        env=["HOME", "LANG"],
    )
    assert s.tools["open_url"].builtin is True
    assert s.tools["open_url"].approve is None  # front ends apply the per-kind default


def test_tool_command_as_string_says_argv_list(tmp_path: Path) -> None:
    path = write(tmp_path, '[tools.lookup]\ncommand = "python3 lookup.py | sh"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    message = str(info.value)
    assert "tools.lookup.command" in message
    assert "argv list" in message
    assert "line 2" in message


@pytest.mark.parametrize("name", ["_private", "1abc", "has space", "x" * 65, "dots.bad"])
def test_invalid_tool_names(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, f'[tools."{name}"]\ncommand = ["true"]\n')
    with pytest.raises(ConfigError, match="invalid tool name"):
        load_settings(path, env={})


def test_tool_timeout_capped_at_120(tmp_path: Path) -> None:
    path = write(tmp_path, '[tools.slow]\ncommand = ["sleep", "1"]\ntimeout = 121\n')
    with pytest.raises(ConfigError, match=r"tools\.slow\.timeout .*120"):
        load_settings(path, env={})


def test_tool_command_and_builtin_are_exclusive(tmp_path: Path) -> None:
    path = write(tmp_path, '[tools.notify]\nbuiltin = true\ncommand = ["true"]\n')
    with pytest.raises(ConfigError, match="not both"):
        load_settings(path, env={})


def test_tool_unknown_key_and_bad_approve(tmp_path: Path) -> None:
    path = write(tmp_path, '[tools.t]\ncommand = ["true"]\ntimout = 3\n')
    with pytest.raises(ConfigError, match=r"unknown setting tools\.t\.timout .*'timeout'"):
        load_settings(path, env={})
    path = write(tmp_path, '[tools.t]\ncommand = ["true"]\napprove = "sometimes"\n')
    with pytest.raises(ConfigError, match=r"tools\.t\.approve"):
        load_settings(path, env={})


def test_tools_cannot_come_from_env() -> None:
    with pytest.raises(ConfigError, match="only be declared in the config file"):
        load_settings(env={"FISHTALK_TOOLS__X": "{}"})


# --- secrecy -----------------------------------------------------------------------------


def test_api_key_never_shown(tmp_path: Path) -> None:
    path = write(tmp_path, f'[api]\napi_key = "{SECRET}"\n')
    s = load_settings(path, env={})
    assert SECRET not in repr(s)
    assert SECRET not in str(s)
    assert SECRET not in s.model_dump_json()
    assert SECRET not in repr(redacted_dict(s))
    assert redacted_dict(s)["api"]["api_key"] == "<hidden>"
    assert s.api.api_key is not None
    assert s.api.api_key.get_secret_value() == SECRET


def test_api_key_not_in_error_messages(tmp_path: Path) -> None:
    # A bad value for the key itself, and a bad value elsewhere while the key is set.
    path = write(tmp_path, f'[api]\napi_key = ["{SECRET}"]\n')
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    assert "api.api_key" in str(info.value)
    assert SECRET not in str(info.value)
    with pytest.raises(ConfigError) as info2:
        load_settings(env={"FISH_API_KEY": SECRET, "FISHTALK_API__TIMEOUT": "soon"})
    assert SECRET not in str(info2.value)
    assert SECRET not in repr(info2.value)
    assert info2.value.__cause__ is None


# --- the example file --------------------------------------------------------------------


def _all_fields() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for section, field in Settings.model_fields.items():
        model = field.annotation
        if section == "tools":
            model = ToolDecl
        if section == "agents":
            model = AgentProfile
        assert isinstance(model, type)
        assert issubclass(model, BaseModel)
        out.extend((section, key) for key in model.model_fields)
    return out


def test_example_documents_every_setting() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    missing = [
        f"{section}.{key}"
        for section, key in _all_fields()
        if not re.search(rf"^#?\s*{key}\s*=", text, flags=re.MULTILINE)
    ]
    assert missing == []
    for section in Settings.model_fields:
        assert f"[{section}" in text


def test_example_loads_as_is_and_uncommented(tmp_path: Path) -> None:
    load_settings(EXAMPLE, env={})
    lines = []
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^# ((?:[a-z_]+ = |\[(?:tools|agents)\.).*)$", line)
        lines.append(match.group(1) if match else line)
    uncommented = "\n".join(lines) + "\n"
    data = tomllib.loads(uncommented)
    assert "api_key" in data["api"]
    s = load_settings(write(tmp_path, uncommented), env={})
    assert set(s.tools) == {
        "list_todos",
        "open_url",
        "copy_to_clipboard",
        "notify",
        "get_local_context",
        "lookup_order",
    }
    assert s.tools["list_todos"].command is not None
    assert set(s.agents) == {"support", "shop"}
    assert load_settings(write(tmp_path, uncommented), env={}, profile="shop").api.public


def test_packaged_example_is_identical() -> None:
    # `fishtalk config init` ships fishtalk/data/config.example.toml; keep it in sync.
    assert PACKAGED_EXAMPLE.read_bytes() == EXAMPLE.read_bytes()


def test_every_name_the_key_is_read_from_is_a_secret_name(tmp_path: Path) -> None:
    """Every case of FISHTALK_API__API_KEY's suffix (all 1,024) is read as the API key, and
    each is a name the tool environment refuses."""
    letters = [i for i, c in enumerate("API__API_KEY") if c.isalpha()]
    for uppers in itertools.product((False, True), repeat=len(letters)):
        chars = list("api__api_key")
        for i, up in zip(letters, uppers, strict=True):
            chars[i] = chars[i].upper() if up else chars[i]
        name = "FISHTALK_" + "".join(chars)
        env = {paths.CONFIG_PATH_ENV: str(tmp_path / "absent.toml"), name: SECRET}
        key = load_settings(env=env).api.api_key
        assert key is not None, name
        assert key.get_secret_value() == SECRET, name  # read...
        assert is_secret_env_name(name), name  # ...so never passed to a tool
        assert is_secret_env_name(name.lower()), name


def test_secret_env_names() -> None:
    # The LiveKit key, secret and token (a direct join) follow the Fish key's rules.
    assert SECRET_ENV_NAMES == (
        "FISHTALK_API__API_KEY",
        "FISHTALK_LIVEKIT__API_KEY",
        "FISHTALK_LIVEKIT__API_SECRET",
        "FISHTALK_LIVEKIT__TOKEN",
        "FISH_API_KEY",
        "LIVEKIT_API_KEY",
        "LIVEKIT_API_SECRET",
    )
    for name in ("FISHTALK_API__URL", "FISHTALK_API_KEY", "FISH_API_KEYS", "PATH", "API_KEY"):
        assert not is_secret_env_name(name), name


# --- [ui] keys: checked when the config loads, not when the TUI starts -------------------


def test_bad_key_action_in_config_is_a_usage_error() -> None:
    """(Moved from tests/tui/test_app.py: the check now happens at load, before run_tui.)"""
    with pytest.raises(ConfigError, match=r"ui.keys.explode.*unknown key action 'explode'") as info:
        load_settings(
            env={paths.CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"},
            overrides={"ui.keys": {"explode": "f9"}, "session.agent_id": "a"},
        )
    assert exit_code_for(None, info.value) == 2


def test_unknown_key_action_names_file_line_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, '[api]\nurl = "https://x.example"\n\n[ui]\nkeys = {bogus = "f3"}\n')
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    message = str(info.value)
    assert message.startswith(f"invalid setting ui.keys.bogus in {path}, line 5: ")
    assert "unknown key action 'bogus'" in message
    assert "known: abort, focus, hangup, help, inspector, interrupt, mute, quit, spoken" in message
    assert exit_code_for(None, info.value) == EXIT_USAGE


def test_a_key_taken_from_another_action_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, '[ui.keys]\nmute = "f3"\ninterrupt = "ctrl+x"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    message = str(info.value)
    assert message.startswith(f"invalid setting ui.keys.interrupt in {path}, line 3: ")
    assert "ctrl+x is already hangup's key (its default)" in message
    assert exit_code_for(None, info.value) == EXIT_USAGE


def test_two_actions_on_one_key_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, '[ui.keys]\nmute = "f3"\nspoken = "f4,f3"\n')
    with pytest.raises(ConfigError, match=r"ui.keys.spoken .*line 3: .*f3 is already mute's key;"):
        load_settings(path, env={})


def test_reserved_keys_are_refused_from_any_layer() -> None:
    env = {paths.CONFIG_PATH_ENV: "/nonexistent/x.toml", "FISHTALK_UI__KEYS": '{"hangup": "enter"}'}
    with pytest.raises(ConfigError, match=r"ui.keys.hangup from \$FISHTALK_UI__KEYS: .*enter"):
        load_settings(env=env)


def test_good_rebindings_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[ui.keys]\ninterrupt = "ctrl+x"\nhangup = "escape"\nmute = ""\nhelp = "f1"\n',
    )
    keys = load_settings(path, env={}).ui.keys
    assert keys == {"interrupt": "ctrl+x", "hangup": "escape", "mute": "", "help": "f1"}


def test_the_action_table_is_free_of_textual() -> None:
    import subprocess
    import sys

    probe = "import sys, fishtalk.cli.config, fishtalk.tui.actions; print('textual' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
