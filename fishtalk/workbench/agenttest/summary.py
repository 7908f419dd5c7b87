"""Across results: the ``p95_heard`` budgets checked over repeated runs, and the run's summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from fishtalk.workbench.agenttest.checks import p95_heard_check, percentile
from fishtalk.workbench.agenttest.results import HeardTurn, TestResult

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class HeardBudget:
    """A file's ``p95_heard`` checked across all its runs (``--repeat``)."""

    name: str
    path: str
    budget: float
    runs: int
    turns: list[HeardTurn]
    """Every ``say``/``speak`` turn of those runs (``where`` names the run)."""

    @property
    def failure(self) -> tuple[str, str] | None:
        """``(expected, seen)`` when the budget does not hold."""
        return p95_heard_check(self.budget, self.turns)

    @property
    def passed(self) -> bool:
        """Whether the budget holds."""
        return self.failure is None

    @property
    def p95(self) -> float | None:
        """The 95th percentile of the measured turns, seconds."""
        values = [t.heard for t in self.turns if t.heard is not None]
        return percentile(values, 95) if values else None

    @property
    def label(self) -> str:
        """``NAME: heard p95 over N runs``."""
        return f"{self.name}: heard p95 over {self.runs} runs"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        p95 = self.p95
        failure = self.failure
        return {
            "name": self.name,
            "path": self.path,
            "budget_ms": round(self.budget * 1000.0, 1),
            "runs": self.runs,
            "turns": len(self.turns),
            "measured": sum(t.heard is not None for t in self.turns),
            "p95_ms": None if p95 is None else round(p95 * 1000.0, 1),
            "passed": failure is None,
            "failure": None if failure is None else {"expected": failure[0], "seen": failure[1]},
        }


def heard_budgets(results: Sequence[TestResult]) -> list[HeardBudget]:
    """The ``p95_heard`` budgets checked across runs: one per repeated file that has one,
    over the turns of its runs that ran (an API failure is an error of its own)."""
    groups: dict[str, list[TestResult]] = {}
    for r in results:
        if r.p95_heard is not None and r.status != "error":
            groups.setdefault(r.path or r.name, []).append(r)
    budgets = []
    for key, runs in groups.items():
        turns = [replace(t, where=f"run {r.run}, {t.where}") for r in runs for t in r.heard]
        budget = runs[0].p95_heard
        assert budget is not None
        budgets.append(HeardBudget(runs[0].name, key, budget, len(runs), turns))
    return budgets


def summary(results: Sequence[TestResult]) -> Mapping[str, Any]:
    """Counts (``sessions``: the sessions opened), pass rate per test, first-text and heard
    latency percentiles (seconds), and the heard budgets checked across runs."""
    per: dict[str, list[bool]] = {}
    for r in results:
        per.setdefault(r.path or r.name, []).append(r.passed)
    latencies = [v for r in results for v in r.first_text]
    heard = [t.heard for r in results for t in r.heard if t.heard is not None]
    return {
        "total": len(results),
        # A run that errored before its session opened (the request failed) opened none.
        "sessions": sum(r.status != "error" or r.end_reason is not None for r in results),
        "passed": sum(r.passed for r in results),
        "failed": sum(r.status == "failed" for r in results),
        "errors": sum(r.status == "error" for r in results),
        "pass_rate": {k: sum(v) / len(v) for k, v in per.items()},
        "first_text_p50": percentile(latencies, 50) if latencies else None,
        "first_text_p95": percentile(latencies, 95) if latencies else None,
        "heard_p50": percentile(heard, 50) if heard else None,
        "heard_p95": percentile(heard, 95) if heard else None,
        "heard_budgets": [b.to_dict() for b in heard_budgets(results)],
    }
