"""Harness for the ``fishtalk test`` runner's tests: the sim on its own thread, playing the
scenarios in ``scenarios/`` (and the README's support example) by agent id."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from fishtalk.sim.fish.scenario import Scenario, load_scenario
from fishtalk.sim.runner import SimInfo, SimThread

HERE: Final = Path(__file__).parent
ROOT: Final = HERE.parent.parent
FILES: Final = HERE / "files"
SCENARIOS: Final = HERE / "scenarios"
EXAMPLES: Final = ROOT / "examples" / "agent-tests"
SUPPORT_SCENARIO: Final = EXAMPLES / "support-sim.toml"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimInfo]:
    """The sim: agent ids ``chat`` and ``silent`` play ``scenarios/``, ``support`` the
    support example's scenario."""
    with sim_playing(
        {
            "chat": load_scenario(SCENARIOS / "chat.toml"),
            "silent": load_scenario(SCENARIOS / "silent.toml"),
            "support": load_scenario(SUPPORT_SCENARIO),
        }
    ) as info:
        yield info


@contextlib.contextmanager
def sim_playing(scenarios: dict[str, Scenario]) -> Iterator[SimInfo]:
    """The sim on its own thread, playing ``scenarios`` by agent id (the first one for
    any other id)."""
    thread = SimThread(next(iter(scenarios.values())), scenarios=scenarios)
    info = thread.start()
    try:
        yield info
    finally:
        thread.stop()


def markers(path: Path, name: str) -> list[str]:
    """The ``# NAME: text`` header lines of a test file."""
    return re.findall(rf"^# {name}: (.+)$", path.read_text("utf-8"), flags=re.MULTILINE)
