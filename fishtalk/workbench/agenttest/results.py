"""What a test run produces: each test's result, its failures, the calls and heard turns seen."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from fishtalk.core.errors import FishtalkError

if TYPE_CHECKING:
    from pydantic import JsonValue

    from fishtalk.workbench.agenttest.listening import HeardReply


Status = Literal["passed", "failed", "error"]


@dataclass(frozen=True)
class Failure:
    """One unmet expectation: where, what was expected, and what was seen."""

    where: str
    """``turn 2 (say 'hi')``, or ``session``."""
    expected: str
    seen: str

    def to_dict(self) -> dict[str, str]:
        """Plain JSON."""
        return {"where": self.where, "expected": self.expected, "seen": self.seen}


@dataclass(frozen=True)
class SeenCall:
    """A tool call seen in a session."""

    name: str
    params: JsonValue
    source: str
    client: bool

    def describe(self) -> str:
        """``name(params) [source]``."""
        params = json.dumps(self.params, sort_keys=True) if self.params is not None else "?"
        return f"{self.name}({params}) [{'client' if self.client else self.source}]"


INCOMPLETE_WHY: Final[Mapping[str, str]] = {
    "text-only": "the reply came as text: set text_only = false for spoken replies",
    "no audio": "the reply came without audio",
    "no user turn": "the agent spoke without a user turn to measure from",
    "interrupted": "the reply was cut off before it was heard",
    "ended": "the session ended before the reply was heard",
    "not heard": "the reply's audio arrived but never reached the output",
    "not measured": "fishtalk measured nothing for this turn",
}
"""What each reason for a missing heard figure means, for failure reports."""


@dataclass(frozen=True)
class HeardTurn:
    """One ``say``/``speak`` turn's heard latency, or why there is none."""

    where: str
    """``turn 2 (say 'hi')``."""
    heard: float | None
    """Seconds from the end of the user's turn to the reply heard."""
    incomplete: str | None = None
    """Why there is no figure (a :data:`~fishtalk.core.conversation.latency.Incomplete` reason,
    or ``not measured`` when no waterfall covered the turn)."""
    waterfall: Mapping[str, object] | None = None
    """The turn's waterfall (:meth:`~fishtalk.core.conversation.Waterfall.to_dict`), if any."""

    def missing(self) -> str:
        """Why there is no figure, for a failure report: ``text-only (the reply ...)``."""
        reason = self.incomplete or "not measured"
        why = INCOMPLETE_WHY.get(reason)
        return f"{reason} ({why})" if why else reason

    def to_dict(self) -> dict[str, object]:
        """Plain JSON: where, the heard figure in ms, why missing, and the waterfall."""
        return {
            "turn": self.where,
            "heard_ms": None if self.heard is None else round(self.heard * 1000.0, 1),
            "incomplete": None if self.heard is not None else self.incomplete or "not measured",
            "waterfall": dict(self.waterfall) if self.waterfall is not None else None,
        }


@dataclass
class TestResult:
    """How one run of one test file went."""

    __test__ = False  # not a pytest class

    name: str
    path: str
    run: int = 1
    status: Status = "passed"
    failures: list[Failure] = field(default_factory=list)
    error: str | None = None
    """Set when the session could not run (an API failure): one line."""
    failure: FishtalkError | None = None
    """With ``error``: the exception that kept the session from running (the report's
    ``exit_code`` is the CLI's code for it)."""
    duration: float = 0.0
    first_text: list[float] = field(default_factory=list)
    """Per ``say``/``listen`` turn: seconds until the agent's first text."""
    first_text_by_turn: dict[str, float] = field(default_factory=dict)
    """The same figures by turn (``turn 2 (say 'hi')``), for ``fishtalk load``."""
    heard: list[HeardTurn] = field(default_factory=list)
    """Per ``say``/``speak`` turn: its heard latency (or why there is none)."""
    p95_heard: float | None = None
    """The file's ``p95_heard`` budget when it is checked across runs (``--repeat``), not in
    this run (see :func:`heard_budgets`)."""
    replies: list[HeardReply] = field(default_factory=list)
    """Per reply, when a spoken expectation asked for it: what its audio said."""
    transcript: list[str] = field(default_factory=list)
    tool_calls: list[str] = field(default_factory=list)
    end_reason: str | None = None
    journal: str | None = None
    """The session's journal file, when one was written."""

    @property
    def passed(self) -> bool:
        """Whether every expectation held."""
        return self.status == "passed"

    @property
    def label(self) -> str:
        """The test's name, with the run number when repeated."""
        return self.name if self.run == 1 else f"{self.name} #{self.run}"

    def to_dict(self, code_for_error: Callable[[BaseException], int]) -> dict[str, Any]:
        """Plain JSON; ``code_for_error``: the CLI's exit code for :attr:`failure` (the
        workbench picks no codes)."""
        return {
            "name": self.name,
            "path": self.path,
            "run": self.run,
            "status": self.status,
            "duration": round(self.duration, 3),
            "failures": [f.to_dict() for f in self.failures],
            "error": self.error,
            "exit_code": None if self.failure is None else code_for_error(self.failure),
            "first_text": [round(v, 3) for v in self.first_text],
            "heard": [h.to_dict() for h in self.heard],
            "heard_replies": [r.to_dict() for r in self.replies],
            "transcript": self.transcript,
            "tool_calls": self.tool_calls,
            "end_reason": self.end_reason,
            "journal": self.journal,
        }
