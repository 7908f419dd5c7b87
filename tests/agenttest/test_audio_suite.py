"""The audio checks (issue 29) against the sim's injected defects: the file with every
check on passes, and each must-fail file fails for the reason its header names. Run in
a module of their own, two sessions at a time (they measure timing on the wire)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import pytest

from fishtalk.cli.exits import exit_code_of
from fishtalk.sim.runner import SimInfo
from fishtalk.workbench.agenttest.results import TestResult
from fishtalk.workbench.agenttest.runner import RunOptions, Target, run_tests
from fishtalk.workbench.agenttest.spec import load_test

from .conftest import FILES, markers

# One worker runs the whole module: its sessions are run once, by one fixture.
pytestmark = [
    pytest.mark.webrtc,
    pytest.mark.xdist_group("agenttest-audio"),
    pytest.mark.timeout(300),
]

PASS = sorted((FILES / "audio" / "pass").glob("*.toml"))
FAIL = sorted((FILES / "audio" / "fail").glob("*.toml"))


@pytest.fixture(scope="module")
def results(sim: SimInfo) -> Mapping[str, TestResult]:
    tests = [load_test(p) for p in PASS + FAIL]
    target = Target(None, api_url=sim.api_url, api_key=sim.dev_key)
    done = asyncio.run(run_tests(tests, target, RunOptions(concurrency=2)))
    return {r.path: r for r in done}


@pytest.mark.parametrize("path", PASS, ids=lambda p: p.stem)
def test_passes(results: Mapping[str, TestResult], path: Path) -> None:
    result = results[str(path)]
    assert result.status == "passed", [f.to_dict() for f in result.failures] or result.error


@pytest.mark.parametrize("path", FAIL, ids=lambda p: p.stem)
def test_fails_for_its_reason(results: Mapping[str, TestResult], path: Path) -> None:
    result = results[str(path)]
    assert result.status == "failed", result.to_dict(exit_code_of)
    texts = [f"{f.expected} | {f.seen}" for f in result.failures]
    for want in markers(path, "must-fail") + markers(path, "must-see"):
        assert any(want in t for t in texts), (want, texts)
