"""The README's "Python API" examples, extracted from README.md and run as they are.

Each runnable example (a ``python`` block calling ``asyncio.run``) runs unchanged in a
fresh interpreter, with the environment the README tells the user to set for the offline
simulator (its ``export`` line), against ``fishtalk sim serve``'s default agent (any agent
id plays ``converse``). Only the port differs: the sim listens on a free one, not 7880.

The order is checked, not hoped for: both examples take the greeting before they ask (as
the README's "Replies" paragraph tells), so the sim's own log must show the greeting said
before the first question arrived, every run; each printed reply answers its question. (A
question sent before the greeting begins is answered, by the one rule, by the greeting; a
greeting that begins before the send and ends after it is tests/agent_session/
test_replies.py's case.)
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from fishtalk.sim.fish.voice import ToneVoice
from fishtalk.sim.runner import run_sim

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## Python API", 1)[1].split("\n## ", 1)[0]
pytestmark = pytest.mark.webrtc


def _examples() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", SECTION, re.DOTALL)
    return [b for b in blocks if "asyncio.run(" in b]


def _readme_env() -> dict[str, str]:
    """The variables the section's ``export`` line sets, as a shell would read them."""
    found: dict[str, str] = {}
    for block in re.findall(r"```sh\n(.*?)```", SECTION, re.DOTALL):
        for line in block.splitlines():
            words = shlex.split(line)
            if words[:1] == ["export"]:
                found.update(word.split("=", 1) for word in words[1:])  # type: ignore[misc]
    return found


async def _run(code: str) -> tuple[list[str], list[list[str]]]:
    """The example's stdout lines, and each sim agent's log of what it did."""
    told = _readme_env()
    async with run_sim("converse", voice=ToneVoice()) as sim:
        url = urlsplit(told["FISHTALK_API_URL"])
        assert url.hostname == "127.0.0.1"
        # The README's key is the sim's own; only the port is this run's.
        assert told["FISH_API_KEY"] == sim.dev_key
        here = url._replace(netloc=f"127.0.0.1:{urlsplit(sim.api_url).port}").geturl()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}
        env.update(told, FISHTALK_API_URL=here)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            code,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        logs = [list(agent.journal) for agent in sim.agents.values()]
    assert proc.returncode == 0, err.decode()
    assert err.decode() == ""  # a library prints nothing, SDK logs included
    return out.decode().splitlines(), logs


def test_the_readme_tells_how_to_run_them_offline() -> None:
    assert len(_examples()) == 2
    assert set(_readme_env()) == {"FISH_API_KEY", "FISHTALK_API_URL"}
    assert "fishtalk sim serve --port 7880" in SECTION


def _greeted_before_asked(logs: list[list[str]]) -> None:
    (log,) = logs
    greeted = next(i for i, entry in enumerate(log) if entry.startswith("said: Hi!"))
    assert greeted < log.index("received user.message"), log


async def test_the_scripted_q_and_a_prints_the_replies() -> None:
    lines, logs = await _run(_examples()[0])
    _greeted_before_asked(logs)
    assert len(lines) == 3, lines
    assert lines[0].startswith("agent: Hi! I'm the fishtalk simulated agent")
    assert lines[1].startswith("agent: You said: What can you do?"), lines
    assert lines[2].startswith("agent: You said: Tell me something surprising."), lines


async def test_the_client_tool_example_works_offline() -> None:
    """The sim asked the time calls the client's get_time: the answer is the tool's."""
    lines, logs = await _run(_examples()[1])
    _greeted_before_asked(logs)
    assert len(lines) == 1, lines
    assert lines[0].startswith("agent: Your get_time tool returned "), lines
    assert re.search(r'"time": ?"\d\d:\d\d"', lines[0]), lines[0]
