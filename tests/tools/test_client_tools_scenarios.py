"""Client tools end to end, outcome by outcome (issue 7): a scripted agent (or the built-in
``tools`` scenario) calls them over the real SDK through the loopback sim; the real Session
runs them with build_runner, and the results arrive back at the agent.

Run inside the network namespace (``.venv/bin/python -m fishtalk.sim.netns --``
``.venv/bin/pytest tests/tools/test_client_tools_scenarios.py -q``).
"""

from __future__ import annotations

import asyncio
import base64
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from session_harness import WAIT, ScriptedAgent, Sim
from test_client_tools_config import call, wait_pids
from test_tools_command import wait_gone

from fishtalk.cli.config import load_settings
from fishtalk.cli.launch import build_session, tool_runner
from fishtalk.cli.settings import Settings
from fishtalk.engine.host import HostLink
from fishtalk.engine.paths import CONFIG_PATH_ENV
from fishtalk.engine.session import Session
from fishtalk.engine.tools import ApprovalRequest
from fishtalk.engine.tools.build import build_runner
from fishtalk.engine.tools.builtins import BuiltinOptions
from fishtalk.engine.tools.declared import ToolDecl
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.fish.voice import Pcm, tone
from fishtalk.sim.runner import run_sim
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.run import TuiHost
from fishtalk.tui.screens.approve import ApprovalScreen

pytestmark = pytest.mark.webrtc

PY = sys.executable


async def started(sim: Sim, settings: Settings, **runner: Any) -> tuple[Session, ScriptedAgent]:
    """A running session with ``settings``' tools and the scripted agent joined to it."""
    session, _, agent, _ = await sim.connected(settings, tools=build_runner(settings, **runner))
    return session, agent


def with_tools(sim: Sim, tools: dict[str, ToolDecl]) -> Settings:
    return sim.settings().model_copy(update={"tools": tools})


FAILS = """
    import sys
    sys.stderr.write("noise " * 2000 + "\\nthe real reason: disk full\\n")
    sys.exit(3)
"""
FLOOD = """
    import os, sys
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))
    line = b"x" * 65535 + b"\\n"
    while True:
        sys.stdout.buffer.write(line)
"""


async def test_command_tool_results_errors_flood_and_cwd(sim: Sim, tmp_path: Path) -> None:
    for name, body in (("fails.py", FAILS), ("flood.py", FLOOD)):
        (tmp_path / name).write_text(textwrap.dedent(body), encoding="utf-8")
    work = tmp_path / "work dir"
    work.mkdir()
    text = "print('not json: hello'); print('second line')"
    where = "import json, os; print(json.dumps({'cwd': os.getcwd()}))"
    settings = with_tools(
        sim,
        {
            "fails": ToolDecl(command=[PY, str(tmp_path / "fails.py")], approve="always"),
            "text": ToolDecl(command=[PY, "-c", text], approve="always"),
            "flood": ToolDecl(
                command=[PY, str(tmp_path / "flood.py"), str(tmp_path / "flood.pid")],
                approve="always",
                timeout=60,
            ),
            "where": ToolDecl(command=[PY, "-c", where], approve="always", cwd=str(work)),
        },
    )
    session, agent = await started(sim, settings)

    failed = await call(agent, "fails")
    assert failed.is_error is True
    message = str(failed.result)
    assert message.startswith("exited with status 3: ")
    assert message.endswith("the real reason: disk full")
    assert len(message) < 2100  # the tail of stderr, not all 12 KB of it

    plain = await call(agent, "text", q="x")
    assert plain.is_error is None
    assert plain.result == "not json: hello\nsecond line"

    flooded = await call(agent, "flood")
    assert flooded.is_error is True
    assert "output exceeded 60 KB; the tool was stopped" in str(flooded.result)
    pid = (await wait_pids(tmp_path / "flood.pid", 1))[0]
    assert await wait_gone([pid], within=WAIT) == []

    located = await call(agent, "where")
    assert located.is_error is None
    assert located.result == {"cwd": str(work)}

    card = session.state.tool(located.call_id)
    assert card is not None
    assert card.client is not None
    assert card.client.status == "ok"


async def test_open_url_and_copy_to_clipboard(sim: Sim, tmp_path: Path) -> None:
    opened: list[str] = []
    asked: list[ApprovalRequest] = []

    def opener(url: str) -> bool:
        opened.append(url)
        return True

    async def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    tty = tmp_path / "tty"
    tty.write_bytes(b"")
    settings = with_tools(
        sim,
        {
            "open_url": ToolDecl(builtin=True),  # asks first by default
            "copy_to_clipboard": ToolDecl(builtin=True),
        },
    )
    options = BuiltinOptions(tty_path=str(tty), opener=opener)
    _, agent = await started(sim, settings, approver=approve, options=options)

    ok = await call(agent, "open_url", url="https://example.com/a?b=c")
    assert ok.is_error is None
    assert ok.result == {"opened": "https://example.com/a?b=c"}
    assert opened == ["https://example.com/a?b=c"]
    assert [(r.tool_name, r.params) for r in asked] == [
        ("open_url", {"url": "https://example.com/a?b=c"})
    ]

    only_web = "only http:// and https:// URLs can be opened"
    for bad, why in (
        ("file:///etc/passwd", only_web),
        ("javascript:alert(1)", only_web),
        ("https://exa mple.com", "url must not contain spaces or control characters"),
    ):
        refused = await call(agent, "open_url", url=bad)
        assert refused.is_error is True, bad
        assert refused.result == why
    assert opened == ["https://example.com/a?b=c"]
    assert len(asked) == 1  # refused before anyone was asked

    text = "fish 🐟 and\x1b]0;an escape\x07 inside"
    copied = await call(agent, "copy_to_clipboard", text=text)
    assert copied.is_error is None
    assert copied.result == {"copied": True, "characters": len(text)}
    encoded = base64.b64encode(text.encode("utf-8"))
    assert tty.read_bytes() == b"\x1b]52;c;" + encoded + b"\x07"


PLUGIN = """
    import asyncio, time

    def shout(params, ctx):
        \"\"\"Shout the text back.\"\"\"
        return {"upper": str(params.get("text", "")).upper(), "call_id": ctx.call_id}

    async def count(params, ctx):
        \"\"\"Count the words, asynchronously.\"\"\"
        await asyncio.sleep(0.01)
        return {"words": len(str(params.get("text", "")).split()), "tool": ctx.tool_name}

    def broken(params, ctx):
        raise ValueError("no such order: " + str(params.get("id")))

    def stuck(params, ctx):
        time.sleep(30)
"""


def install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A distribution found by importlib.metadata on sys.path, as pip would leave it."""
    site = tmp_path / "site"
    info = site / "fishtalk_e2e_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fishtalk-e2e-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    mod = "fishtalk_e2e_plugin_tools"
    (info / "entry_points.txt").write_text(
        "[fishtalk.tools]\n"
        f"e2e_shout = {mod}:shout\n"
        f"e2e_count = {mod}:count\n"
        f"e2e_broken = {mod}:broken\n"
        f"e2e_stuck = {mod}:stuck\n",
        encoding="utf-8",
    )
    (site / f"{mod}.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, mod, raising=False)


async def test_plugin_tools_from_entry_points(
    sim: Sim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(tmp_path, monkeypatch)
    settings = with_tools(sim, {"e2e_stuck": ToolDecl(timeout=1)})
    session, agent = await started(sim, settings)

    shouted = await call(agent, "e2e_shout", text="hello fish")
    assert shouted.is_error is None
    assert shouted.result == {"upper": "HELLO FISH", "call_id": shouted.call_id}

    counted = await call(agent, "e2e_count", text="one two three")
    assert counted.is_error is None
    assert counted.result == {"words": 3, "tool": "e2e_count"}

    broken = await call(agent, "e2e_broken", id=7)
    assert broken.is_error is True
    assert broken.result == "ValueError: no such order: 7"

    stuck = await call(agent, "e2e_stuck")
    assert stuck.is_error is True
    assert "timed out after 1 s" in str(stuck.result)

    card = session.state.tool(counted.call_id)
    assert card is not None
    assert card.client is not None
    assert card.client.status == "ok"


TODOS = """
    import json, os, pathlib, sys

    params = json.load(sys.stdin)
    todo = pathlib.Path(os.environ["TODO_FILE"])
    items = todo.read_text().splitlines() if todo.exists() else []
    if params.get("add"):
        items.append(str(params["add"]))
        todo.write_text("\\n".join(items) + "\\n")
    print(json.dumps({"items": items}))
"""


def sim_settings(api_url: str, dev_key: str, agent: str, tools: dict[str, Any]) -> Settings:
    return load_settings(
        env={CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"},
        overrides={
            "api.url": api_url,
            "api.api_key": dev_key,
            "session.agent_id": agent,
            "session.text_only": True,
            "tools": tools,
        },
    )


class BriskVoice:
    """A sim voice that says each word as a 20 ms tone, so a long scenario plays quickly."""

    name = "brisk"

    async def render(self, word: str) -> Pcm:
        return tone(440.0, 0.02)


def agent_lines(session: Session) -> list[str]:
    return [seg.text for seg in session.state.transcript if seg.role == "agent" and not seg.open]


async def wait_for(predicate: Callable[[], bool], what: str, within: float = 90.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not predicate():
        if loop.time() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def test_the_tools_scenario_runs_the_users_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "todos.py"
    script.write_text(textwrap.dedent(TODOS), encoding="utf-8")
    todo_file = tmp_path / "todo.txt"
    todo_file.write_text("buy fish food\n", encoding="utf-8")
    monkeypatch.setenv("TODO_FILE", str(todo_file))
    tty = tmp_path / "tty"
    tty.write_bytes(b"")
    opened: list[str] = []
    toasts: list[tuple[str, str]] = []
    asked: list[str] = []

    async def approve(request: ApprovalRequest) -> bool:
        asked.append(request.tool_name)
        return True

    def opener(url: str) -> bool:
        opened.append(url)
        return True

    tools = {
        "todos": {"command": [PY, str(script)], "env": ["TODO_FILE"]},  # approve: ask
        "get_local_context": {"builtin": True},
        "open_url": {"builtin": True},
        "copy_to_clipboard": {"builtin": True},
        "notify": {"builtin": True},
    }
    options = BuiltinOptions(
        tty_path=str(tty), opener=opener, on_notify=lambda t, m: toasts.append((t, m))
    )
    async with run_sim(voice=BriskVoice()) as sim:
        settings = sim_settings(sim.api_url, sim.dev_key, "tools", tools)
        runner = build_runner(settings, approver=approve, options=options)
        session = build_session(settings, tools=runner)
        run = asyncio.ensure_future(session.run())
        try:
            await wait_for(
                lambda: any(line.startswith("That's every tool.") for line in agent_lines(session)),
                "the end of the tools scenario",
            )
            lines = agent_lines(session)
            announced = [line for line in lines if line.startswith("Your ")]
            assert [line.split()[1] for line in announced] == [
                "todos",
                "todos",
                "get_local_context",
                "open_url",
                "copy_to_clipboard",
                "notify",
            ], lines
            assert all(" tool returned " in line for line in announced), announced
            assert '"items": ["buy fish food"]' in announced[0]
            assert '"items": ["buy fish food", "feed the fish"]' in announced[1]
            assert "https://example.com" in announced[3]
            assert todo_file.read_text(encoding="utf-8") == "buy fish food\nfeed the fish\n"
            assert asked == ["todos", "todos", "open_url"]
            assert opened == ["https://example.com"]
            clip = base64.b64encode(b"Copied by the fishtalk tools scenario")
            # The clipboard's OSC 52, then notify's bell.
            assert tty.read_bytes() == b"\x1b]52;c;" + clip + b"\x07" + b"\x07"
            assert toasts == [("fishtalk", "The tools scenario is done")]
        finally:
            session.hangup()
            await asyncio.wait_for(run, WAIT)


GUARDED = parse_scenario(
    """
    then = "listen"
    [agent]
    greeting = ""
    voice = "tones"
    idle_seconds = 0
    [[steps]]
    do = "client_tool"
    name = "guarded"
    params = { note = "first [b]call[/b]" }
    timeout = 60
    [[steps]]
    do = "client_tool"
    name = "guarded"
    params = { note = "second" }
    timeout = 60
    [[steps]]
    do = "say"
    text = "Both calls are done."
    audio = false
    """,
    name="guarded",
)


async def test_tui_approval_modal_runs_or_declines(tmp_path: Path) -> None:
    marks = tmp_path / "ran.txt"
    record = (
        "import json, sys; p = json.load(sys.stdin); "
        "open(sys.argv[1], 'a').write(p['note'] + '\\n'); print(json.dumps({'noted': p['note']}))"
    )
    tools = {"guarded": {"command": [PY, "-c", record, str(marks)], "approve": "ask"}}
    async with run_sim(scenarios={"guarded": GUARDED}) as sim:
        settings = sim_settings(sim.api_url, sim.dev_key, "guarded", tools)
        link = HostLink()
        session = build_session(settings, tools=tool_runner(settings, link))
        app = FishtalkApp(session, title="sim", ended_linger=None)
        link.bind(TuiHost(app))
        async with app.run_test(size=(100, 30)) as pilot:

            async def modal() -> str:
                for _ in range(int(WAIT / 0.05)):
                    if isinstance(app.screen, ApprovalScreen) and app.screen.armed:
                        await pilot.pause()
                        return "\n".join(s.text for s in app.screen._compositor.render_strips())
                    await pilot.pause(0.05)
                pytest.fail(f"no approval modal; transcript: {agent_lines(session)}")

            shown = await modal()
            assert "guarded" in shown
            assert "first [b]call[/b]" in shown  # params shown, as plain text
            await pilot.click("#approve-allow")

            async def settled(n: int) -> None:
                for _ in range(int(WAIT / 0.05)):
                    done = [
                        t for t in session.state.tools if t.client and t.client.status != "running"
                    ]
                    if len(done) >= n:
                        return
                    await pilot.pause(0.05)
                pytest.fail(f"{n} tool calls did not finish: {session.state.tools}")

            await settled(1)
            assert marks.read_text(encoding="utf-8") == "first [b]call[/b]\n"

            shown = await modal()
            assert "second" in shown
            await pilot.click("#approve-deny")
            await settled(2)
            assert not isinstance(app.screen, ApprovalScreen)

            for _ in range(int(WAIT / 0.05)):
                if "Both calls are done." in agent_lines(session):
                    break
                await pilot.pause(0.05)
            else:
                pytest.fail(f"the agent never finished; transcript: {agent_lines(session)}")
            first, second = (t.client for t in session.state.tools if t.client)
            assert first is not None
            assert first.status == "ok"
            assert second is not None
            assert second.status == "declined"
            # What the agent received, in its own words (journal / announcements).
            lines = agent_lines(session)
            assert any(
                line.startswith("Your guarded tool returned") and "first [b]call[/b]" in line
                for line in lines
            ), lines
            assert any(
                line.startswith("Your guarded tool failed") and "declined" in line for line in lines
            ), lines
            assert marks.read_text(encoding="utf-8") == "first [b]call[/b]\n"  # n ran nothing
            await pilot.press("ctrl+x")
            await pilot.pause(0.2)


UNANSWERED = parse_scenario(
    """
    then = "listen"
    [agent]
    greeting = ""
    voice = "tones"
    idle_seconds = 0
    [[steps]]
    do = "client_tool"
    name = "guarded"
    params = { note = "nobody answers" }
    timeout = 60
    [[steps]]
    do = "say"
    text = "Moving on."
    audio = false
    """,
    name="unanswered",
)


async def test_tui_approval_modal_goes_away_when_the_call_times_out(tmp_path: Path) -> None:
    marks = tmp_path / "ran.txt"
    record = "import sys; open(sys.argv[1], 'a').write('ran')"
    tools = {"guarded": {"command": [PY, "-c", record, str(marks)], "approve": "ask", "timeout": 2}}
    async with run_sim(scenarios={"unanswered": UNANSWERED}) as sim:
        settings = sim_settings(sim.api_url, sim.dev_key, "unanswered", tools)
        link = HostLink()
        session = build_session(settings, tools=tool_runner(settings, link))
        app = FishtalkApp(session, title="sim", ended_linger=None)
        link.bind(TuiHost(app))
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(int(WAIT / 0.05)):
                if isinstance(app.screen, ApprovalScreen):
                    break
                await pilot.pause(0.05)
            else:
                pytest.fail("no approval modal")
            for _ in range(int(WAIT / 0.05)):
                if "Moving on." in agent_lines(session):
                    break
                await pilot.pause(0.05)
            else:
                pytest.fail(f"the agent never moved on: {agent_lines(session)}")
            await pilot.pause(0.1)
            assert not isinstance(app.screen, ApprovalScreen)
            (card,) = session.state.tools
            assert card.client is not None
            assert card.client.status == "timeout"
            assert any(
                line.startswith("Your guarded tool failed") and "timed out after 2 s" in line
                for line in agent_lines(session)
            ), agent_lines(session)
            assert not marks.exists()
            await pilot.press("ctrl+x")
            await pilot.pause(0.2)
