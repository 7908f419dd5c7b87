"""build_registry / describe_tools: declared commands, built-ins and real entry-point plugins
(a distribution installed into a temporary sys.path entry)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fishtalk.cli.settings import Settings
from fishtalk.core.errors import ConfigError
from fishtalk.core.protocol import ClientToolCall
from fishtalk.engine.tools.build import build_registry, build_runner, describe_tools
from fishtalk.engine.tools.declared import ToolDecl
from fishtalk.engine.tools.registry import ApprovalRequest
from fishtalk.engine.tools.runner import ToolRunner

PLUGIN_MODULE = '''
import asyncio


def lookup_order(params, ctx):
    """Look up an order by id."""
    return {"order": params.get("id"), "tool": ctx.tool_name}


async def shout(params, ctx):
    """Upper-case some text."""
    await asyncio.sleep(0)
    return str(params.get("text", "")).upper()
'''


def install_plugin(
    root: Path, monkeypatch: pytest.MonkeyPatch, entries: dict[str, str], *, dist: str = "demo"
) -> None:
    """Write a module and a dist-info with ``fishtalk.tools`` entry points onto sys.path."""
    root.mkdir(parents=True, exist_ok=True)
    module = f"fishtalk_{dist.replace('-', '_')}_tools"
    (root / f"{module}.py").write_text(PLUGIN_MODULE, encoding="utf-8")
    info = root / f"fishtalk_{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: fishtalk-{dist}\nVersion: 0.1\n", encoding="utf-8"
    )
    lines = "\n".join(f"{name} = {value.replace('MOD', module)}" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[fishtalk.tools]\n{lines}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    sys.modules.pop(module, None)


def settings(**tools: ToolDecl) -> Settings:
    return Settings(tools=tools)


def call(name: str, **params: object) -> ClientToolCall:
    return ClientToolCall(call_id="c1", tool_name=name, params=params, expects_response=True)  # type: ignore[arg-type]


async def test_declared_and_builtin_tools(tmp_path: Path) -> None:
    s = settings(
        echo=ToolDecl(command=[sys.executable, "-c", "print('hi')"], approve="always", timeout=5),
        notify=ToolDecl(builtin=True),
        open_url=ToolDecl(builtin=True, approve="never"),
    )
    registry = build_registry(s)
    assert registry.names() == ["echo", "notify", "open_url"]
    echo = registry.get("echo")
    assert echo is not None
    assert echo.source == "command"
    assert echo.timeout == 5.0
    runner = ToolRunner(registry)
    assert (await runner.run(call("echo"))).result == "hi"
    declined = await runner.run(call("open_url", url="https://example.com"))
    assert declined.status == "declined"

    infos = {i.name: i for i in describe_tools(s)}
    assert infos["echo"].approve == "always"
    assert infos["notify"].approve == "always"
    assert infos["notify"].source == "builtin"
    assert infos["open_url"].approve == "never"
    assert all(i.problem is None for i in infos.values())


def test_command_tools_ask_by_default() -> None:
    (info,) = describe_tools(settings(t=ToolDecl(command=["true"])))
    assert info.approve == "ask"


def test_unknown_builtin_is_config_error() -> None:
    with pytest.raises(ConfigError, match=r"'clipboard'.*no built-in tool named"):
        build_registry(settings(clipboard=ToolDecl(builtin=True)))


def test_declaration_without_command_or_builtin() -> None:
    with pytest.raises(ConfigError, match=r"needs `command"):
        build_registry(settings(lonely=ToolDecl(approve="ask")))


def test_api_key_in_allowlist_is_config_error() -> None:
    with pytest.raises(ConfigError, match="never passed"):
        build_registry(settings(t=ToolDecl(command=["true"], env=["HOME", "FISH_API_KEY"])))


def test_missing_program_is_listed_but_registered() -> None:
    s = settings(gone=ToolDecl(command=["fishtalk-no-such-program-xyz"]))
    (info,) = describe_tools(s)
    assert info.problem is not None
    assert "not found" in info.problem
    assert info.fatal is False
    assert build_registry(s).names() == ["gone"]


async def test_plugin_tools_sync_and_async(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(
        tmp_path / "site",
        monkeypatch,
        {"lookup_order": "MOD:lookup_order", "shout": "MOD:shout"},
    )
    s = settings(shout=ToolDecl(timeout=7))  # tunes the plugin tool
    registry = build_registry(s)
    assert registry.names() == ["lookup_order", "shout"]
    entry = registry.get("lookup_order")
    assert entry is not None
    assert entry.source == "plugin:fishtalk-demo"
    assert entry.description == "Look up an order by id."
    shout = registry.get("shout")
    assert shout is not None
    assert shout.timeout == 7.0
    runner = ToolRunner(registry)
    result = await runner.run(call("lookup_order", id="A-1"))
    assert result.result == {"order": "A-1", "tool": "lookup_order"}
    assert (await runner.run(call("shout", text="hey"))).result == "HEY"


async def test_plugin_with_approve_ask(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(tmp_path / "site", monkeypatch, {"lookup_order": "MOD:lookup_order"})
    s = settings(lookup_order=ToolDecl(approve="ask"))
    asked: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    runner = build_runner(s, approver=deny)
    outcome = await runner.run(call("lookup_order", id="A-1"))
    assert outcome.status == "declined"
    assert asked[0].tool_name == "lookup_order"

    async def allow(request: ApprovalRequest) -> bool:
        return True

    runner = build_runner(s, approver=allow)
    assert (await runner.run(call("lookup_order", id="B"))).result == {
        "order": "B",
        "tool": "lookup_order",
    }


def test_plugin_duplicates_and_bad_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(
        tmp_path / "site",
        monkeypatch,
        {
            "notify": "MOD:shout",
            "broken": "fishtalk_no_such_module_xyz:handler",
            "_hidden": "MOD:shout",
        },
    )
    s = settings(notify=ToolDecl(builtin=True))
    infos = {i.name: i for i in describe_tools(s)}
    assert infos["notify"].fatal
    assert "also provided by plugin fishtalk-demo" in (infos["notify"].problem or "")
    assert infos["broken"].fatal
    assert "cannot load" in (infos["broken"].problem or "")
    assert infos["_hidden"].fatal
    with pytest.raises(ConfigError, match=r"client tool .*\(and 2 more\)"):
        build_registry(s)


def test_two_plugins_same_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(tmp_path / "a", monkeypatch, {"shout": "MOD:shout"}, dist="one")
    install_plugin(tmp_path / "b", monkeypatch, {"shout": "MOD:shout"}, dist="two")
    with pytest.raises(ConfigError, match="several plugins"):
        build_registry(settings())


def test_example_config_tools_build(tmp_path: Path) -> None:
    # The README's worked example (a command tool and the four built-ins) assembles.
    s = Settings(
        tools={
            "list_todos": ToolDecl(command=["python3", str(tmp_path / "todos.py")]),
            **{n: ToolDecl(builtin=True) for n in ("open_url", "copy_to_clipboard", "notify")},
            "get_local_context": ToolDecl(builtin=True),
        }
    )
    assert len(build_registry(s)) == 5


def test_config_and_tools_import_no_front_end_or_media() -> None:
    import json
    import subprocess

    probe = (
        "import json, sys\n"
        "import fishtalk.cli.config, fishtalk.engine.paths, fishtalk.engine.tools.build\n"
        "heavy = ('textual', 'livekit', 'numpy', 'sounddevice')\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout) == []
