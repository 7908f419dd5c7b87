"""The Python API's surface: lazy and light to import, documented, typed, shipped typed."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from support.child import run_child

import fishtalk
from fishtalk import agent_session, events

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("asyncio", "textual", "livekit", "numpy", "sounddevice", "httpx", "pydantic")


def test_import_fishtalk_alone_imports_nothing_heavy() -> None:
    code = (
        "import json, sys\n"
        "import fishtalk\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "sys.stdout.write(json.dumps(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(out.stdout) == []


def test_agent_session_is_exported_lazily() -> None:
    code = (
        "import sys\n"
        "from fishtalk import AgentSession\n"
        "assert AgentSession.__module__ == 'fishtalk.agent_session'\n"
        "assert 'livekit' not in sys.modules  # only when a session starts\n"
    )
    subprocess.run([sys.executable, "-c", code], timeout=60, check=True)
    for name in fishtalk.__all__:
        assert getattr(fishtalk, name) is not None
    with pytest.raises(AttributeError):
        _ = fishtalk.NoSuchThing


def _public_members(obj: type) -> list[tuple[str, object]]:
    return [
        (name, member)
        for name, member in vars(obj).items()
        if not name.startswith("_") or name in ("__aenter__", "__aexit__", "__init__")
    ]


def test_every_public_name_has_a_docstring() -> None:
    missing: list[str] = []
    modules = (fishtalk, agent_session, events)
    for module in modules:
        if not (module.__doc__ or "").strip():
            missing.append(module.__name__)
        for name in module.__all__:
            value = getattr(module, name)
            documented = bool((getattr(value, "__doc__", None) or "").strip())
            if (inspect.isclass(value) or inspect.isfunction(value)) and not documented:
                missing.append(f"{module.__name__}.{name}")
    for cls in (agent_session.AgentSession, agent_session.SessionEndedError):
        for name, member in _public_members(cls):
            if name in ("__aenter__", "__aexit__", "__init__"):
                continue
            target = member.fget if isinstance(member, property) else member
            if callable(target) and not (getattr(target, "__doc__", None) or "").strip():
                missing.append(f"{cls.__name__}.{name}")
    assert missing == []


def test_event_kinds_are_the_one_vocabulary() -> None:
    from fishtalk.core import conversation

    assert events.EVENT_TYPES is conversation.CHANGE_TYPES
    assert events.KINDS == agent_session.KINDS
    assert {"status_change", "mode_change", "segment_finalised", "error", "ended"} <= events.KINDS


def test_on_refuses_unknown_kinds() -> None:
    session = agent_session.AgentSession(agent_id="a", api_key="k")
    with pytest.raises(ValueError, match="unknown event kind"):
        session.on("agentResponse", print)
    with pytest.raises(ValueError, match="not an event class"):
        session.on(int, print)  # type: ignore[type-var]
    remove = session.on("ended", print)
    remove()
    remove()  # twice is harmless


def test_py_typed_is_shipped() -> None:
    assert (ROOT / "fishtalk" / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["fishtalk"]  # hatch ships every file of the package dir
    assert "exclude" not in wheel


def test_a_strict_user_script_type_checks() -> None:
    script = Path(__file__).with_name("typed_user_script.py")
    out = run_child(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(script)],
        timeout=300,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
