"""One session's result as Locust requests, pure.

* ``session`` / ``TEST: start``: the time to connect; a session that never started (the
  session API's status, a connect timeout) fails here with the reason, so a capacity limit
  reads as such.
* ``turn`` / ``TEST: turn N (say 'hi') [heard]`` (or ``[first text]`` in a text-only test):
  a reply's latency; it fails with the turn's unmet expectations.
* ``session`` / ``TEST: whole session``: the session's duration; it fails with the file's
  ``[expect]`` (and the greeting) or an error after the start.

A turn with no reply to time (``wait``, ``hangup``) is a request only when it fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from fishtalk.workbench.agenttest.results import Failure, TestResult
from fishtalk.workbench.agenttest.spec import TestFile

Kind = Literal["session", "turn"]

HEARD: Final = "heard"
FIRST_TEXT: Final = "first text"


@dataclass(frozen=True)
class Request:
    """One Locust request: its type, name, response time and, if it failed, why."""

    kind: Kind
    name: str
    ms: float
    error: str | None = None


def start_request(test: TestFile, connect_seconds: float) -> Request:
    """A session that started: its connect time (reported as it connects)."""
    return Request("session", f"{test.name}: start", connect_seconds * 1000)


def failed_start(test: TestFile, result: TestResult) -> Request:
    """A session that never started, with the reason."""
    return Request(
        "session", f"{test.name}: start", result.duration * 1000, result.error or "not started"
    )


def _reason(failures: Sequence[Failure]) -> str | None:
    if not failures:
        return None
    return "; ".join(f"expected {f.expected}, saw {f.seen}" for f in failures)


def turn_requests(test: TestFile, result: TestResult) -> list[Request]:
    """A request per turn that replied or failed, then the whole session's."""
    heard = {h.where: h.heard for h in result.heard}
    requests: list[Request] = []
    for index, turn in enumerate(test.turns, start=1):
        where = f"turn {index} ({turn.describe()})"
        failed = [f for f in result.failures if f.where == where]
        metric = FIRST_TEXT if test.text_only or turn.action == "listen" else HEARD
        seconds = (heard if metric == HEARD else result.first_text_by_turn).get(where)
        if seconds is None and not failed:
            continue
        name = f"{test.name}: {where} [{metric}]"
        requests.append(Request("turn", name, (seconds or 0.0) * 1000, _reason(failed)))
    wheres = {f"turn {i} ({t.describe()})" for i, t in enumerate(test.turns, start=1)}
    rest = [f for f in result.failures if f.where not in wheres]
    error = _reason(rest) or (result.error if result.status == "error" else None)
    requests.append(
        Request("session", f"{test.name}: whole session", result.duration * 1000, error)
    )
    return requests
