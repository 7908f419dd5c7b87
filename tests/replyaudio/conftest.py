"""The sim for the reply-audio tests, in a process of its own, shared by the module: one agent id
per injected defect (issue 29), each saying :data:`LINE` when the user speaks or types."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import pytest

from fishtalk.sim.fish.scenario import Scenario, parse_scenario
from fishtalk.sim.process import SimProcess
from fishtalk.sim.runner import SimInfo

WAIT: Final = 30.0
LINE: Final = "alpha bravo charlie delta echo foxtrot"

DEFECTS: Final = {
    "clean": "",
    "lead": "first_audio_delay_seconds = 0.5",
    "gap": "gap_seconds = 0.6",
    "loud": "voice_gain_db = 20.0",
    "quiet": "voice_gain_db = -30.0",
    "stubborn": "ignore_interrupt_seconds = 1.0",
}
"""Agent id -> the ``[agent]`` setting that injects its defect."""


def scenario(name: str, setting: str, *, steps: bool = True) -> Scenario:
    """The agent that injects ``setting`` (``[agent]`` lines): with ``steps`` it says
    :data:`LINE` to the user's first turn, else it answers every turn as the sim converses
    (``You said: ...``, its ``thinking`` first)."""
    told = f"""
[[steps]]
do = "wait_for"
event = "user.message"
[[steps]]
do = "say"
text = "{LINE}"
"""
    text = f"""
name = "{name}"
then = "converse"
[agent]
greeting = ""
voice = "tones"
idle_seconds = 0
think_seconds = 0.1
{setting}
{told if steps else ""}"""
    return parse_scenario(text, name=name)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimInfo]:
    scenarios = {name: scenario(name, s) for name, s in DEFECTS.items()}
    with SimProcess(scenarios["clean"], scenarios=scenarios) as info:
        yield info
