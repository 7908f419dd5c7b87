"""The runner against the sim: files that must pass pass, and files that must fail fail
for the reason their header names (one for each kind of expectation)."""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest

from fishtalk.cli.exits import exit_code_of
from fishtalk.sim.runner import SimInfo
from fishtalk.workbench.agenttest.expect import Expect
from fishtalk.workbench.agenttest.results import TestResult
from fishtalk.workbench.agenttest.runner import RunOptions, Target, run_tests
from fishtalk.workbench.agenttest.spec import load_test

from .conftest import EXAMPLES, FILES, markers

# One worker runs the whole module: the suite's sessions are run once, by one fixture.
# The module fixture runs every file (36 sessions, four at a time) before the first test.
pytestmark = [
    pytest.mark.webrtc,
    pytest.mark.xdist_group("agenttest-suite"),
    pytest.mark.timeout(300),
]

PASS = [*sorted((FILES / "pass").glob("*.toml")), EXAMPLES / "support.toml"]
FAIL = sorted((FILES / "fail").glob("*.toml"))


@pytest.fixture(scope="module")
def results(sim: SimInfo) -> Mapping[str, TestResult]:
    """Every file run once, four sessions at a time (files without an agent: support)."""
    tests = [load_test(p) for p in PASS + FAIL]
    target = Target(None, api_url=sim.api_url, api_key=sim.dev_key, fallback_agent="support")
    done = asyncio.run(run_tests(tests, target, RunOptions(concurrency=4)))
    return {r.path: r for r in done}


@pytest.mark.parametrize("path", PASS, ids=lambda p: p.stem)
def test_passes(results: Mapping[str, TestResult], path: Path) -> None:
    result = results[str(path)]
    assert result.status == "passed", [f.to_dict() for f in result.failures] or result.error


@pytest.mark.parametrize("path", FAIL, ids=lambda p: p.stem)
def test_fails_for_its_reason(results: Mapping[str, TestResult], path: Path) -> None:
    result = results[str(path)]
    assert result.status == "failed", result.to_dict(exit_code_of)
    wanted = markers(path, "must-fail")
    assert wanted, f"{path.name} names no `# must-fail:` reason"
    texts = [f"{f.expected} | {f.seen}" for f in result.failures]
    for want in wanted:
        assert any(want in t for t in texts), (want, texts)
    for want in markers(path, "must-see"):
        assert any(want in t for t in texts), (want, texts)


def test_every_kind_of_expectation_has_a_failing_file() -> None:
    """Each key of ``expect`` is used by some file in files/fail or files/audio/fail (so
    each can fail)."""
    used: set[str] = set()
    # The spoken expectations fail in files/spoken/fail (test_spoken.py, its own sim), the
    # sound checks in files/audio/fail (test_audio_suite.py).
    for path in [
        *FAIL,
        *sorted((FILES / "audio" / "fail").glob("*.toml")),
        *sorted((FILES / "spoken" / "fail").glob("*.toml")),
    ]:
        data = tomllib.loads(path.read_text("utf-8"))
        tables = [data.get("expect", {})] + [t.get("expect", {}) for t in data.get("turns", [])]
        for table in tables:
            used.update(table)
    assert set(Expect.model_fields) - used == set()


def test_failure_reports_show_what_was_seen(results: Mapping[str, TestResult]) -> None:
    result = results[str(FILES / "fail" / "tool_params.toml")]
    assert result.tool_calls == ["get_customer({}) [client]"]
    assert "you: call get_customer" in result.transcript
    assert any("tool calls: get_customer({}) [client]" in f.seen for f in result.failures), (
        result.failures
    )


def test_latencies_are_recorded(results: Mapping[str, TestResult]) -> None:
    result = results[str(FILES / "pass" / "converse.toml")]
    assert len(result.first_text) == 3  # the greeting and two typed turns
    assert all(v >= 0 for v in result.first_text)
    # A typed turn's first text is its waterfall's, as the journal and exports show it.
    waterfalls = [t.waterfall for t in result.heard]
    assert len(waterfalls) == 2
    for first, waterfall in zip(result.first_text[1:], waterfalls, strict=True):
        assert waterfall is not None
        assert round(first * 1000.0, 1) == waterfall["first_text_ms"]


def test_concurrency_is_bounded(sim: SimInfo) -> None:
    """Four sessions, two at a time: never more than two connected at once."""
    test = load_test(FILES / "pass" / "waits.toml")
    target = Target(None, api_url=sim.api_url, api_key=sim.dev_key)
    running: list[int] = [0]
    peak: list[int] = [0]

    def started(_test: object, _run: int) -> None:
        running[0] += 1
        peak[0] = max(peak[0], running[0])

    def finished(_result: TestResult) -> None:
        running[0] -= 1

    options = RunOptions(repeat=4, concurrency=2)
    done = asyncio.run(run_tests([test], target, options, on_start=started, on_result=finished))
    assert [r.run for r in done] == [1, 2, 3, 4]
    assert all(r.passed for r in done), [r.to_dict(exit_code_of) for r in done]
    assert peak[0] == 2
