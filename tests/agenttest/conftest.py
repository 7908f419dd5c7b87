"""Harness for the ``fishtalk test`` runner's tests: the sim in a process of its own, playing the
scenarios in ``scenarios/`` (and the README's support example) by agent id."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from fishtalk.sim.fish.scenario import load_scenario
from fishtalk.sim.process import SimProcess
from fishtalk.sim.runner import SimInfo

HERE: Final = Path(__file__).parent
ROOT: Final = HERE.parent.parent
FILES: Final = HERE / "files"
SCENARIOS: Final = HERE / "scenarios"
EXAMPLES: Final = ROOT / "examples" / "agent-tests"
SUPPORT_SCENARIO: Final = EXAMPLES / "support-sim.toml"


VOICE_DEFECTS: Final[dict[str, dict[str, object]]] = {
    "voice": {},
    "late-voice": {"first_audio_delay_seconds": 0.8},
    "stalling-voice": {"gap_seconds": 0.8},
    "loud-voice": {"voice_gain_db": 20.0},
    "quiet-voice": {"voice_gain_db": -30.0},
    "stubborn-voice": {"ignore_interrupt_seconds": 1.5},
    "rude-voice": {"talk_over_seconds": 0.2},
    "mute-voice": {"voice_gain_db": -60.0},
}
"""Agent ids playing ``voice.toml`` with one audio defect injected (issue 29)."""


@pytest.fixture(scope="module")
def sim() -> Iterator[SimInfo]:
    """The sim: agent ids ``chat`` and ``silent`` play ``scenarios/``, ``support`` the
    support example's scenario, and those of :data:`VOICE_DEFECTS` ``voice.toml``."""
    voice = load_scenario(SCENARIOS / "voice.toml")
    scenarios = {
        "chat": load_scenario(SCENARIOS / "chat.toml"),
        "silent": load_scenario(SCENARIOS / "silent.toml"),
        "support": load_scenario(SUPPORT_SCENARIO),
        **{name: voice.with_agent(setting) for name, setting in VOICE_DEFECTS.items()},
    }
    with SimProcess(scenarios["chat"], scenarios=scenarios) as info:
        yield info


def markers(path: Path, name: str) -> list[str]:
    """The ``# NAME: text`` header lines of a test file."""
    return re.findall(rf"^# {name}: (.+)$", path.read_text("utf-8"), flags=re.MULTILINE)
