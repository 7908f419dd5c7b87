"""Every tool outcome must reach the agent: results and error texts that the wire cannot
carry become error results that can; tool errors read as sentences; the demo's settings."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue

from fishtalk.cli.config import load_settings
from fishtalk.cli.demo import DEMO_BUILTINS, demo_settings
from fishtalk.cli.settings import Settings
from fishtalk.core.protocol import (
    ClientToolCall,
    ClientToolResult,
    decode_client_event,
    encode_client_event,
)
from fishtalk.engine.paths import CONFIG_PATH_ENV
from fishtalk.engine.tools import ToolContext, ToolError, ToolRegistry, ToolRunner
from fishtalk.engine.tools.build import build_registry
from fishtalk.engine.tools.builtins import BuiltinOptions, make_builtin
from fishtalk.engine.tools.command import CommandSpec, CommandTool
from fishtalk.sim.fish.scenario import BUILTIN, CallClientTool, load_scenario


async def run_one(handler: Any, *, expects_response: bool = True) -> Any:
    registry = ToolRegistry()
    registry.register("t", handler, timeout=20)
    call = ClientToolCall(call_id="c1", tool_name="t", params={}, expects_response=expects_response)
    return await ToolRunner(registry).run(call)


def sendable(outcome: Any) -> JsonValue:
    """The published result, as the agent decodes it."""
    assert outcome.result_event is not None
    event = decode_client_event(encode_client_event(outcome.result_event))
    assert isinstance(event, ClientToolResult)
    return event.result


@pytest.mark.parametrize(
    "value",
    [
        "caf\udce9",  # bytes decoded with errors="surrogateescape"
        {"name": "a\ud800b"},
        ["ok", {"nested": ["\udfff"]}],
        {"k\udc80": 1},
    ],
)
async def test_a_result_with_lone_surrogates_becomes_an_error_result(value: object) -> None:
    outcome = await run_one(lambda params, ctx: value)
    assert outcome.status == "error"
    assert "not valid Unicode" in (outcome.error or "")
    assert sendable(outcome) == outcome.error
    assert outcome.result_event.is_error is True


async def test_a_fire_and_forget_result_with_surrogates_is_an_error_too() -> None:
    outcome = await run_one(lambda params, ctx: "x\udce9", expects_response=False)
    assert outcome.status == "error"
    assert outcome.result_event is None


async def test_an_error_text_with_surrogates_is_still_sent() -> None:
    async def raises(params: dict[str, JsonValue], ctx: ToolContext) -> None:
        raise ValueError("cannot read /tmp/caf\udce9")

    outcome = await run_one(raises)
    assert outcome.status == "error"
    assert outcome.error == "ValueError: cannot read /tmp/caf?"
    assert sendable(outcome) == "ValueError: cannot read /tmp/caf?"


async def test_tool_errors_are_sent_as_their_message_alone() -> None:
    def fails(params: dict[str, JsonValue], ctx: ToolContext) -> None:
        raise ToolError("the printer is out of paper")

    outcome = await run_one(fails)
    assert outcome.error == "the printer is out of paper"


async def test_a_command_whose_output_is_not_utf8_is_sent_as_text() -> None:
    code = "import sys; sys.stdout.buffer.write(b'caf\\xe9 \\xff\\n')"
    spec = CommandSpec(name="t", argv=(sys.executable, "-c", code), approve="always")
    outcome = await run_one(CommandTool(spec))
    assert outcome.status == "ok"
    assert sendable(outcome) == "caf\ufffd \ufffd"


async def test_a_failing_command_sends_its_exit_and_stderr_without_a_class_name() -> None:
    code = "import sys; sys.stderr.write('no such file\\n'); sys.exit(2)"
    spec = CommandSpec(name="t", argv=(sys.executable, "-c", code), approve="always")
    outcome = await run_one(CommandTool(spec))
    assert outcome.error == "exited with status 2: no such file"


async def test_osc52_and_bell_append_to_a_file_standing_in_for_the_terminal(
    tmp_path: Path,
) -> None:
    tty = tmp_path / "tty"
    tty.write_bytes(b"before|")
    options = BuiltinOptions(tty_path=str(tty))
    ctx = ToolContext(call_id="c", tool_name="x")
    await make_builtin("copy_to_clipboard", options)({"text": "hi"}, ctx)
    await make_builtin("notify", options)({"message": "m"}, ctx)
    assert tty.read_bytes() == b"before|\x1b]52;c;aGk=\x07\x07"


def _loader(config: Path) -> Any:
    def load(overrides: dict[str, object]) -> Settings:
        return load_settings(env={CONFIG_PATH_ENV: str(config)}, overrides=overrides)

    return load


def test_the_demo_uses_the_users_declared_tools(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[tools.todos]\ncommand = ["python3", "/home/me/bin/todos.py"]\n'
        '[tools.notify]\ncommand = ["notify-send", "fishtalk"]\napprove = "always"\n'
        "[tools.open_url]\nbuiltin = true\n",
        encoding="utf-8",
    )
    settings = demo_settings(_loader(config), "http://127.0.0.1:1", "devkey")
    assert settings.api.url == "http://127.0.0.1:1"
    assert settings.session.agent_id == "demo"
    tools = settings.tools
    assert set(tools) == {"todos", "notify", "open_url", "get_local_context"}
    assert tools["todos"].command == ["python3", "/home/me/bin/todos.py"]
    # The user's own notify stays theirs (forcing builtin onto it was a config error).
    assert tools["notify"].command == ["notify-send", "fishtalk"]
    assert not tools["notify"].builtin
    assert tools["get_local_context"].builtin


def test_the_demo_enables_its_builtins_without_a_config(tmp_path: Path) -> None:
    settings = demo_settings(_loader(tmp_path / "absent.toml"), "http://127.0.0.1:1", "k")
    assert set(settings.tools) == set(DEMO_BUILTINS)
    assert all(decl.builtin for decl in settings.tools.values())


def test_the_tools_scenario_is_built_in_and_calls_each_tool() -> None:
    assert "tools" in BUILTIN
    scenario = load_scenario("tools")
    calls = [s for s in scenario.steps if isinstance(s, CallClientTool)]
    assert [c.name for c in calls] == [
        "todos",
        "todos",
        "get_local_context",
        "open_url",
        "copy_to_clipboard",
        "notify",
    ]
    assert calls[1].params == {"add": "feed the fish"}
    assert calls[3].params == {"url": "https://example.com"}
    assert all(c.announce and c.expects_response for c in calls)
    assert scenario.then == "converse"


def test_the_readme_tools_scenario_config_builds(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Try it without an account", 1)[1].split("\n### ", 1)[0]
    assert "fishtalk demo --scenario tools" in section
    snippet = section.split("```toml\n", 1)[1].split("```", 1)[0]
    config = tmp_path / "config.toml"
    config.write_text(snippet, encoding="utf-8")
    settings = demo_settings(_loader(config), "http://127.0.0.1:1", "k")
    names = {c.name for c in load_scenario("tools").steps if isinstance(c, CallClientTool)}
    assert set(build_registry(settings).names()) == names
