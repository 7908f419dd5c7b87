"""The test summary in one format, sessions counted as opened, and the sim's settings for
a text-only run (issue 24)."""

from __future__ import annotations

from pathlib import Path

from fishtalk.workbench.agenttest.report import summary_lines
from fishtalk.workbench.agenttest.results import HeardTurn, TestResult
from fishtalk.workbench.agenttest.runner import sim_agent_settings
from fishtalk.workbench.agenttest.spec import STARTER, load_test


def test_sessions_are_counted_as_opened_and_in_the_singular() -> None:
    refused = TestResult("a", "a.toml", status="error", error="the session request failed")
    assert summary_lines([refused])[0] == "0 passed, 0 failed, 1 errors (no session opened)"
    ok = TestResult("b", "b.toml", end_reason="user_hangup")
    assert summary_lines([ok])[0].endswith("(1 session)")


def test_every_figure_of_the_summary_has_one_format() -> None:
    result = TestResult(
        "a",
        "a.toml",
        first_text=[0.27],
        heard=[HeardTurn("turn 1", 1.528)],
        end_reason="user_hangup",
    )
    lines = summary_lines([result])
    assert "first text: p50 0.27 s, p95 0.27 s" in lines
    assert "heard: p50 1.53 s, p95 1.53 s" in lines


def test_a_text_only_run_gets_a_text_only_greeting(tmp_path: Path) -> None:
    path = tmp_path / "starter.toml"
    path.write_text(STARTER, "utf-8")
    starter = load_test(path)
    assert starter.text_only
    assert sim_agent_settings([starter]) == {"greeting_audio": False}
    given = {"greeting_audio": True, "think_seconds": 0.1}
    assert sim_agent_settings([starter], given) == given
    spoken = tmp_path / "spoken.toml"
    spoken.write_text(STARTER.replace("text_only = true", "text_only = false"), "utf-8")
    assert sim_agent_settings([starter, load_test(spoken)]) == {}
