"""Config-declared client tools end to end: the agent calls them over the real SDK through
the loopback sim; the session runs them with build_runner (commands, built-ins, approval,
limits) and the results arrive back at the agent."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from session_harness import WAIT, ScriptedAgent, Sim, until
from test_tools_command import wait_gone

from fishtalk.cli.settings import Settings
from fishtalk.core import protocol as p
from fishtalk.engine.tools import ApprovalRequest
from fishtalk.engine.tools.build import build_runner
from fishtalk.engine.tools.builtins import BuiltinOptions
from fishtalk.engine.tools.declared import ToolDecl

pytestmark = pytest.mark.webrtc

PY = sys.executable


def read_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


async def wait_pids(path: Path, count: int) -> list[int]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while len(pids := read_pids(path)) < count:
        if loop.time() > deadline:
            pytest.fail(f"{path} never listed {count} pids")
        await asyncio.sleep(0.05)
    return pids


async def call(agent: ScriptedAgent, name: str, **params: Any) -> p.ClientToolResult:
    """One client_tool.call from the agent; its result (the matching call id)."""
    call_id = f"call-{name}-{len(agent.raw)}"
    await agent.send(
        p.ClientToolCall(call_id=call_id, tool_name=name, params=params, expects_response=True)
    )
    result: p.ClientToolResult = await agent.expect(p.ClientToolResult, within=WAIT * 2)
    assert result.call_id == call_id
    return result


FORKER = """
    import os, subprocess, sys, time
    kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            for _ in range(2)]
    with open(sys.argv[1], "w") as f:
        f.write(" ".join(str(x) for x in [os.getpid(), *(k.pid for k in kids)]))
    time.sleep(600)
"""


def tool_settings(sim: Sim, tmp_path: Path) -> Settings:
    (tmp_path / "forker.py").write_text(textwrap.dedent(FORKER), encoding="utf-8")
    echo = "import json, sys; print(json.dumps({'got': json.load(sys.stdin)}))"
    env = "import json, os; print(json.dumps(sorted(os.environ)))"
    tools = {
        "echo": ToolDecl(command=[PY, "-c", echo], approve="always"),
        "guarded": ToolDecl(command=[PY, "-c", echo]),  # approve defaults to "ask"
        "env_names": ToolDecl(command=[PY, "-c", env], approve="always"),
        "forker": ToolDecl(
            command=[PY, str(tmp_path / "forker.py"), str(tmp_path / "forker.pids")],
            approve="always",
            timeout=2,
        ),
        "hangs": ToolDecl(
            command=[PY, str(tmp_path / "forker.py"), str(tmp_path / "hangs.pids")],
            approve="always",
            timeout=60,
        ),
        "get_local_context": ToolDecl(builtin=True),
        "notify": ToolDecl(builtin=True),
    }
    return sim.settings().model_copy(update={"tools": tools})


async def test_declared_tools_through_the_session(
    sim: Sim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", "sk-e2e-never-in-a-tool")
    settings = tool_settings(sim, tmp_path)
    asked: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    toasts: list[tuple[str, str]] = []
    options = BuiltinOptions(
        tty_path=str(tmp_path / "no-tty"), on_notify=lambda t, m: toasts.append((t, m))
    )
    runner = build_runner(settings, approver=deny, options=options)
    session, run, agent, _ = await sim.connected(settings, tools=runner)

    nasty = {"q": "$(touch pwned); `id` | sh && rm -rf ~", "n": 3}
    echoed = await call(agent, "echo", **nasty)
    assert echoed.is_error is None
    assert echoed.result == {"got": nasty}

    declined = await call(agent, "guarded", q="x")
    assert declined.is_error is True
    assert "declined" in str(declined.result)
    assert [r.tool_name for r in asked] == ["guarded"]

    names = await call(agent, "env_names")
    assert isinstance(names.result, list)
    assert "FISH_API_KEY" not in names.result
    assert "sk-e2e-never-in-a-tool" not in json.dumps(names.result)

    timed_out = await call(agent, "forker")
    assert timed_out.is_error is True
    assert "timed out after 2 s" in str(timed_out.result)
    assert await wait_gone(await wait_pids(tmp_path / "forker.pids", 3), within=WAIT) == []

    context = await call(agent, "get_local_context")
    assert context.is_error is None
    assert isinstance(context.result, dict)
    assert {"local_time", "timezone", "locale", "terminal"} <= set(context.result)

    await agent.send(
        p.ClientToolCall(
            call_id="call-notify",
            tool_name="notify",
            params={"title": "Fish", "message": "done"},
            expects_response=False,
        )
    )
    await until(
        session,
        lambda s: (
            (c := s.tool("call-notify")) is not None
            and c.client is not None
            and c.client.status == "ok"
        ),
    )
    assert toasts == [("Fish", "done")]

    # Hangup while a command tool (and its children) runs: the whole group dies.
    await agent.send(
        p.ClientToolCall(call_id="call-hangs", tool_name="hangs", expects_response=True)
    )
    pids = await wait_pids(tmp_path / "hangs.pids", 3)
    session.hangup()
    await asyncio.wait_for(run, WAIT)
    assert await wait_gone(pids, within=WAIT) == []
