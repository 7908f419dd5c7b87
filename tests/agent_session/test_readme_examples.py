"""The README's "Python API" examples, extracted and run as they are against the sim.

Each runnable example (a ``python`` block calling ``asyncio.run``) runs in a fresh
interpreter, pointed at the sim through the environment variables the API reads
(``FISH_API_KEY``, ``FISHTALK_API_URL``), as a user would run it against Fish.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from support.child import run_python

from fishtalk.sim.runner import SimThread

from .conftest import TOOL, scenario

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
pytestmark = pytest.mark.webrtc


def _examples() -> list[str]:
    section = README.split("## Python API", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    return [b for b in blocks if "asyncio.run(" in b]


def _run(code: str, scenario_for_agent: object) -> list[str]:
    with SimThread(scenario_for_agent) as info:  # type: ignore[arg-type]
        env = {**os.environ, "FISH_API_KEY": info.dev_key, "FISHTALK_API_URL": info.api_url}
        out = run_python(code, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_there_are_two_examples() -> None:
    assert len(_examples()) == 2


def test_the_scripted_q_and_a_prints_the_replies() -> None:
    lines = _run(_examples()[0], "converse")
    assert len(lines) == 3
    assert lines[0].startswith("agent: Hi! I'm the fishtalk simulated agent")
    assert lines[1].startswith("agent: You said: What can you do?")
    assert lines[2].startswith("agent: You said: Tell me something surprising.")


def test_the_client_tool_example_answers_with_the_tool_result() -> None:
    lines = _run(_examples()[1], scenario(TOOL))
    assert len(lines) == 1
    assert lines[0].startswith("agent: ")
    assert re.search(r'"time": ?"\d\d:\d\d"', lines[0]), lines[0]
