"""Command tools through the real ToolRunner and real child processes: results, errors,
and the security properties (no shell, no secrets, capped output, whole group killed)."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import JsonValue

from fishtalk.core.protocol import ClientToolCall
from fishtalk.engine.tools.command import MAX_OUTPUT_BYTES, CommandSpec, CommandTool
from fishtalk.engine.tools.registry import ApprovalRequest, ToolContext, ToolRegistry
from fishtalk.engine.tools.runner import ToolOutcome, ToolRunner

PY = sys.executable


def script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


async def run_tool(
    spec: CommandSpec,
    params: dict[str, JsonValue] | None = None,
    *,
    limit: float = 30.0,
    approver: object = None,
    call_id: str = "call-1",
) -> ToolOutcome:
    registry = ToolRegistry()
    registry.register(spec.name, CommandTool(spec), timeout=limit, source="command")
    runner = ToolRunner(registry, default_timeout=limit, approver=approver)  # type: ignore[arg-type]
    call = ClientToolCall(
        call_id=call_id, tool_name=spec.name, params=params or {}, expects_response=True
    )
    return await runner.run(call)


def gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # ESRCH: it went while being read
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


async def wait_gone(pids: list[int], within: float = 10.0) -> list[int]:
    """Poll until every pid is gone or ``within`` seconds pass; return the survivors."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        alive = [p for p in pids if not gone(p)]
        if not alive or loop.time() > deadline:
            return alive
        await asyncio.sleep(0.05)


def read_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


async def wait_for_file(path: Path, lines: int, within: float = 10.0) -> list[int]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        got = read_pids(path)
        if len(got) >= lines:
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} never got {lines} pids")


ECHO = """
    import json, sys
    params = json.load(sys.stdin)
    print(json.dumps({"got": params}))
"""


async def test_params_on_stdin_json_result(tmp_path: Path) -> None:
    tool = script(tmp_path, "echo.py", ECHO)
    spec = CommandSpec(name="echo", argv=(PY, str(tool)), approve="always")
    outcome = await run_tool(spec, {"a": 1, "b": ["x", None]})
    assert outcome.status == "ok", outcome.error
    assert outcome.result == {"got": {"a": 1, "b": ["x", None]}}
    assert outcome.result_event is not None
    assert outcome.result_event.is_error is None


async def test_text_and_empty_output(tmp_path: Path) -> None:
    text = script(tmp_path, "text.py", 'print("hello, not json")\nprint("line 2")\n')
    outcome = await run_tool(CommandSpec(name="t", argv=(PY, str(text)), approve="always"))
    assert outcome.result == "hello, not json\nline 2"
    silent = script(tmp_path, "silent.py", "pass\n")
    outcome = await run_tool(CommandSpec(name="s", argv=(PY, str(silent)), approve="always"))
    assert outcome.status == "ok"
    assert outcome.result == {}


async def test_nonzero_exit_is_error_with_stderr_tail(tmp_path: Path) -> None:
    tool = script(
        tmp_path,
        "fail.py",
        """
        import sys
        sys.stderr.write("x" * 10000 + "\\nthe end: boom\\n")
        print("partial")
        sys.exit(3)
        """,
    )
    outcome = await run_tool(CommandSpec(name="fail", argv=(PY, str(tool)), approve="always"))
    assert outcome.status == "error"
    assert outcome.error is not None
    assert "exited with status 3" in outcome.error
    assert "the end: boom" in outcome.error
    assert len(outcome.error) < 2500  # a tail, not the whole stderr
    assert outcome.result_event is not None
    assert outcome.result_event.is_error is True


async def test_shell_metacharacters_never_reach_a_shell(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    tool = script(tmp_path, "echo.py", ECHO)
    nasty = {
        "q": "$(touch pwned1); `touch pwned2`; touch pwned3 && echo x | tee pwned4 > pwned5",
        "glob": "* ?",
        "quote": "'\"\\",
        "newline": "a\nb; touch pwned6",
        "$(touch pwned7)": "key too",
    }
    spec = CommandSpec(name="echo", argv=(PY, str(tool)), cwd=work, approve="always")
    outcome = await run_tool(spec, nasty)
    assert outcome.status == "ok", outcome.error
    assert outcome.result == {"got": nasty}  # delivered verbatim, as data
    assert list(work.iterdir()) == []  # nothing was executed


async def test_child_env_has_no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FISH_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("FISHTALK_API__API_KEY", "sk-also-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("MY_TOOL_SETTING", "fine")
    tool = script(tmp_path, "env.py", "import json, os\nprint(json.dumps(dict(os.environ)))\n")
    spec = CommandSpec(
        name="env", argv=(PY, str(tool)), env_allowlist=("MY_TOOL_SETTING",), approve="always"
    )
    outcome = await run_tool(spec, call_id="call-env")
    assert outcome.status == "ok", outcome.error
    env = outcome.result
    assert isinstance(env, dict)
    assert "sk-must-not-leak" not in json.dumps(env)
    assert "FISH_API_KEY" not in env
    assert "FISHTALK_API__API_KEY" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert env["MY_TOOL_SETTING"] == "fine"
    assert env["FISHTALK_TOOL"] == "env"
    assert env["FISHTALK_CALL_ID"] == "call-env"
    assert "PATH" in env


def test_api_key_cannot_be_allowlisted() -> None:
    with pytest.raises(ValueError, match="never passed"):
        CommandSpec(name="x", argv=("true",), env_allowlist=("FISH_API_KEY",))


KEY_SPELLINGS = (
    "FISH_API_KEY",
    "FISHTALK_API__API_KEY",
    "FISHTALK_API__api_key",
    "FISHTALK_api__Api_Key",
    "fishtalk_api__api_key",
    "fish_api_key",
)
"""Names fishtalk reads the key from (any case after the prefix), and case variants beyond."""


async def test_the_key_under_any_spelling_never_reaches_a_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i, name in enumerate(KEY_SPELLINGS):
        monkeypatch.setenv(name, f"sk-leak-{i}")
    tool = script(tmp_path, "env.py", "import json, os\nprint(json.dumps(dict(os.environ)))\n")
    spec = CommandSpec(
        name="env",
        argv=(PY, str(tool)),
        approve="always",
        extra_env={"FISHTALK_API__Api_key": "sk-leak-extra"},
    )
    outcome = await run_tool(spec)
    assert outcome.status == "ok", outcome.error
    dumped = json.dumps(outcome.result)
    assert "sk-leak" not in dumped
    assert not any(name.upper() in dumped.upper() for name in KEY_SPELLINGS)


@pytest.mark.parametrize("name", KEY_SPELLINGS)
def test_no_spelling_of_the_key_can_be_allowlisted(name: str) -> None:
    with pytest.raises(ValueError, match="never passed"):
        CommandSpec(name="x", argv=("true",), env_allowlist=("HOME", name))
    spec = CommandSpec(name="x", argv=("true",))
    assert name not in spec.child_env({name: "sk-x", "HOME": "/h"})


async def test_stdout_flood_is_capped_and_killed(tmp_path: Path) -> None:
    tool = script(
        tmp_path,
        "flood.py",
        """
        import os, sys
        open(sys.argv[1], "w").write(str(os.getpid()))
        chunk = "x" * 65536
        while True:
            sys.stdout.write(chunk)
        """,
    )
    pidfile = tmp_path / "flood.pid"
    spec = CommandSpec(name="flood", argv=(PY, str(tool), str(pidfile)), approve="always")
    outcome = await run_tool(spec, limit=60)
    assert outcome.status == "error"  # stopped for its output, not by the timeout
    assert outcome.error is not None
    assert f"exceeded {MAX_OUTPUT_BYTES // 1000} KB" in outcome.error
    assert await wait_gone(read_pids(pidfile)) == []


FORKER = """
    import os, subprocess, sys, time
    pidfile = sys.argv[1]
    kids = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]),
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]),
    ]
    with open(pidfile, "w") as f:
        f.write(" ".join(str(p) for p in [os.getpid(), *(k.pid for k in kids)]))
    time.sleep(600)
"""


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    tool = script(tmp_path, "forker.py", FORKER)
    pidfile = tmp_path / "forker.pids"
    spec = CommandSpec(name="forker", argv=(PY, str(tool), str(pidfile)), approve="always")
    outcome = await run_tool(spec, limit=3)
    assert outcome.status == "timeout"
    assert outcome.error is not None
    assert "timed out" in outcome.error
    pids = await wait_for_file(pidfile, 3)
    assert await wait_gone(pids) == []


async def test_cancel_all_kills_the_whole_process_group(tmp_path: Path) -> None:
    tool = script(tmp_path, "forker.py", FORKER)
    pidfile = tmp_path / "forker.pids"
    spec = CommandSpec(name="forker", argv=(PY, str(tool), str(pidfile)), approve="always")
    registry = ToolRegistry()
    registry.register("forker", CommandTool(spec), timeout=60)
    runner = ToolRunner(registry, default_timeout=60)
    call = ClientToolCall(call_id="c", tool_name="forker", params={}, expects_response=True)
    task = asyncio.create_task(runner.run(call))
    pids = await wait_for_file(pidfile, 3)
    assert [p for p in pids if gone(p)] == []
    assert runner.cancel_all() == 1
    outcome = await asyncio.wait_for(task, 10)
    assert outcome.status == "error"
    assert await wait_gone(pids) == []


async def test_leftover_child_holding_stdout_is_killed_after_exit(tmp_path: Path) -> None:
    tool = script(
        tmp_path,
        "straggler.py",
        """
        import json, subprocess, sys
        kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print(json.dumps({"kid": kid.pid}))
        """,
    )
    outcome = await run_tool(CommandSpec(name="s", argv=(PY, str(tool)), approve="always"))
    assert outcome.status == "ok", outcome.error
    assert isinstance(outcome.result, dict)
    kid = outcome.result["kid"]
    assert isinstance(kid, int)
    assert await wait_gone([kid]) == []


async def test_tool_ignoring_large_stdin_does_not_hang(tmp_path: Path) -> None:
    tool = script(tmp_path, "ignore.py", 'print("ok")\n')
    spec = CommandSpec(name="ignore", argv=(PY, str(tool)), approve="always")
    outcome = await run_tool(spec, {"blob": "y" * 500_000})
    assert outcome.status == "ok", outcome.error
    assert outcome.result == "ok"


async def test_cwd_and_missing_program(tmp_path: Path) -> None:
    tool = script(tmp_path, "cwd.py", "import os\nprint(os.getcwd())\n")
    work = tmp_path / "here"
    work.mkdir()
    spec = CommandSpec(name="cwd", argv=(PY, str(tool)), cwd=work, approve="always")
    assert (await run_tool(spec)).result == str(work)

    missing = CommandSpec(name="nope", argv=("fishtalk-no-such-program-xyz",), approve="always")
    assert missing.problem() is not None
    outcome = await run_tool(missing)
    assert outcome.status == "error"
    assert outcome.error is not None
    assert "program not found" in outcome.error

    bad_cwd = CommandSpec(name="c", argv=(PY, str(tool)), cwd=tmp_path / "absent", approve="always")
    outcome = await run_tool(bad_cwd)
    assert outcome.error is not None
    assert "working directory not found" in outcome.error


# --- approval ------------------------------------------------------------------------------


async def test_denied_approval_sends_declined_error_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    tool = script(tmp_path, "touch.py", f"open({str(marker)!r}, 'w').close()\n")
    asked: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    spec = CommandSpec(name="touch", argv=(PY, str(tool)))  # approve defaults to "ask"
    outcome = await run_tool(spec, {"why": "test"}, approver=deny)
    assert outcome.status == "declined"
    assert outcome.error is not None
    assert "declined" in outcome.error
    assert outcome.result_event is not None
    assert outcome.result_event.is_error is True
    assert outcome.result_event.result == outcome.error
    assert not marker.exists()
    (request,) = asked
    assert request.tool_name == "touch"
    assert request.params == {"why": "test"}
    assert str(tool) in request.summary


async def test_approval_granted_runs(tmp_path: Path) -> None:
    tool = script(tmp_path, "echo.py", ECHO)

    async def allow(request: ApprovalRequest) -> bool:
        return True

    outcome = await run_tool(CommandSpec(name="e", argv=(PY, str(tool))), {"k": 1}, approver=allow)
    assert outcome.result == {"got": {"k": 1}}


async def test_ask_without_approver_and_never_decline(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    tool = script(tmp_path, "touch.py", f"open({str(marker)!r}, 'w').close()\n")
    outcome = await run_tool(CommandSpec(name="t", argv=(PY, str(tool)), approve="ask"))
    assert outcome.status == "declined"
    assert outcome.error is not None
    assert "nobody is available" in outcome.error

    async def allow(request: ApprovalRequest) -> bool:
        return True

    never = CommandSpec(name="t", argv=(PY, str(tool)), approve="never")
    outcome = await run_tool(never, approver=allow)
    assert outcome.status == "declined"
    assert not marker.exists()


async def test_timeout_applies_while_waiting_for_approval(tmp_path: Path) -> None:
    tool = script(tmp_path, "echo.py", ECHO)
    never_answers: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    async def slow(request: ApprovalRequest) -> bool:
        return await never_answers

    outcome = await run_tool(CommandSpec(name="e", argv=(PY, str(tool))), limit=1, approver=slow)
    assert outcome.status == "timeout"


def processes_with(marker: str) -> list[int]:
    """Live pids whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and not gone(int(entry.name)):
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("ticks", [0, 1, 2, 3, 5, 8, 13])
async def test_cancel_at_any_point_leaves_no_process(tmp_path: Path, ticks: int) -> None:
    # Cancel while spawning, feeding stdin or reading: whatever the timing, nothing survives.
    marker = f"fishtalk-cancel-probe-{ticks}-{id(tmp_path)}"
    tool = script(
        tmp_path,
        "sleeper.py",
        """
        import subprocess, sys, time
        sleep = [sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]]
        kids = [subprocess.Popen(sleep) for _ in range(2)]
        time.sleep(600)
        """,
    )
    spec = CommandSpec(name="sleeper", argv=(PY, str(tool), marker), approve="always")
    task = asyncio.create_task(CommandTool(spec)({}, ToolContext("c", "sleeper")))
    for _ in range(ticks):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 20)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while True:
        alive = processes_with(marker)
        if not alive or loop.time() > deadline:
            break
        await asyncio.sleep(0.05)
    assert alive == []
