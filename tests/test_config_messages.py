"""No pydantic phrasing in any config, flag or file error: every validator, every field.

The scan walks every setting of every section (and tool and agent-profile tables), gives
each a value of the wrong kind, an empty one, a negative and a huge one, and reads the
ConfigError's one line. Pure: no sim, no network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from fishtalk.cli.config import load_settings
from fishtalk.cli.settings import Settings
from fishtalk.core.errors import ConfigError, ScenarioError, TestFileError
from fishtalk.core.validation import PYDANTIC_PHRASES, plain_message

BAD_VALUES: tuple[Any, ...] = ("x", "", -1, 10**9, 1.5, True, {"a": {"b": 1}}, ["x"])


def _leaves() -> list[str]:
    found = []
    for section, field in Settings.model_fields.items():
        model = field.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            found += [f"{section}.{key}" for key in model.model_fields]
    return found


def _clean(message: str) -> None:
    for phrase in PYDANTIC_PHRASES:
        assert phrase not in message, message


@pytest.fixture(autouse=True)
def no_config_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))


def test_every_setting_rejects_bad_values_in_plain_words() -> None:
    failures = 0
    for key in _leaves():
        for value in BAD_VALUES:
            try:
                load_settings(None, env={}, overrides={key: value})
            except ConfigError as exc:
                failures += 1
                _clean(str(exc))
    assert failures > 100  # the scan reached the validators, not only the happy path


def test_talk_mode_names_the_choices() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(None, env={"FISHTALK_AUDIO__TALK_MODE": "sometimes"})
    assert str(info.value).endswith("must be one of 'always', 'toggle' or 'push'")


def test_tool_and_profile_tables_in_plain_words(tmp_path: Path) -> None:
    bad = [
        '[tools.t]\ncommand = "ls"\n',
        "[tools.t]\ncommand = []\n",
        "[tools.t]\ntimeout = -1\nbuiltin = true\n",
        '[tools.t]\napprove = "sometimes"\nbuiltin = true\n',
        "[tools.t]\nbuiltin = true\ncommand = ['ls']\n",
        "[agents.a]\nagent_id = ''\n",
        "[agents.a]\n",
        "[agents.a]\nagent_id = 'x'\nsession = 3\n",
        "[session]\nfirst_message = 'a'\nfirst_message_prompt = 'b'\n",
        "[session]\nlanguage = 'not a language'\n",
    ]
    for number, text in enumerate(bad):
        path = tmp_path / f"c{number}.toml"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError) as info:
            load_settings(path, env={})
        _clean(str(info.value))


def test_scenario_and_test_files_in_plain_words(tmp_path: Path) -> None:
    from fishtalk.sim.fish.scenario import load_scenario
    from fishtalk.workbench.agenttest.spec import parse_test

    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "s"\n[[steps]]\ndo = "sleep"\nseconds = "long"\n', "utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(scenario))
    _clean(str(info.value))
    for text in ("name = 3\n", 'text_only = "maybe"\n', "[[turn]]\nsay = 3\n"):
        with pytest.raises(TestFileError) as failed:
            parse_test(text, source="t.toml")
        _clean(str(failed.value))


def test_plain_message_rewords_what_it_does_not_know() -> None:
    said = plain_message({"type": "url_parsing", "msg": "Input should be a valid URL, empty"})
    assert said == "must be a valid URL"
    _clean(said)
