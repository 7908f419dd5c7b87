"""Expectations: matching text and tool calls, and checking a turn or a session against
its ``expect`` (the heard-latency budget too).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fishtalk.core import conversation as conv
from fishtalk.workbench.agenttest.expect import Expect, ToolCall
from fishtalk.workbench.agenttest.listening import HeardReply, spoken_failures
from fishtalk.workbench.agenttest.results import Failure, HeardTurn, SeenCall

if TYPE_CHECKING:
    from pydantic import JsonValue


# --- matching -----------------------------------------------------------------------------

_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACE = re.compile(r"\s+")


def normalise(text: str, *, case_sensitive: bool = False, exact_punctuation: bool = False) -> str:
    """``text`` as compared: lower-cased and without punctuation unless asked otherwise,
    whitespace collapsed."""
    if not case_sensitive:
        text = text.casefold()
    if not exact_punctuation:
        text = _PUNCT.sub("", text)
    return _SPACE.sub(" ", text).strip()


def params_match(expected: JsonValue, actual: JsonValue) -> bool:
    """Whether ``expected`` is a subset of ``actual`` (tables compared key by key,
    recursively; anything else equal)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return False
        return all(k in actual and params_match(v, actual[k]) for k, v in expected.items())
    return expected == actual


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of ``values`` (not empty)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- checking -----------------------------------------------------------------------------


def check(
    expect: Expect,
    where: str,
    *,
    lines: Sequence[str],
    calls: Sequence[SeenCall],
    errors: Sequence[conv.ErrorEntry],
    states: Sequence[str],
    end_reason: str | None,
    first_text: float | None,
    latencies: Sequence[float] = (),
    interrupted: bool = False,
    heard: Sequence[HeardTurn] = (),
    replies: Sequence[HeardReply] = (),
    pooled: bool = False,
) -> list[Failure]:
    """The expectations of ``expect`` that what was seen does not meet."""
    failures: list[Failure] = []
    reply = " ".join(line.strip() for line in lines)

    def norm(text: str) -> str:
        return normalise(
            text,
            case_sensitive=expect.case_sensitive,
            exact_punctuation=expect.exact_punctuation,
        )

    seen_reply = f"reply: {_short(reply)!r}" if lines else "reply: (no agent text)"

    def fail(expected: str, seen: str = seen_reply) -> None:
        failures.append(Failure(where, expected, seen))

    for needle in expect.contains or ():
        if norm(needle) not in norm(reply):
            fail(f"reply contains {needle!r}")
    for needle in expect.not_contains or ():
        if norm(needle) in norm(reply):
            fail(f"reply does not contain {needle!r}")
    if expect.contains_any is not None and not any(
        norm(n) in norm(reply) for n in expect.contains_any
    ):
        fail(f"reply contains one of {expect.contains_any!r}")
    if expect.one_of is not None and norm(reply) not in {norm(a) for a in expect.one_of}:
        fail(f"reply is one of {expect.one_of!r}")
    if expect.regex is not None:
        flags = 0 if expect.case_sensitive else re.IGNORECASE
        pattern = re.compile(expect.regex, flags)
        if not (pattern.search(reply) or pattern.search(norm(reply))):
            fail(f"reply matches /{expect.regex}/")
    seen_calls = "tool calls: " + (", ".join(c.describe() for c in calls) or "(none)")
    for want in expect.tool_called or ():
        if not any(_call_matches(want, c) for c in calls):
            fail(f"tool called: {_describe_want(want)}", seen_calls)
    for want in expect.tool_not_called or ():
        if any(_call_matches(want, c) for c in calls):
            fail(f"tool not called: {_describe_want(want)}", seen_calls)
    if expect.agent_states is not None and not _in_order(states, expect.agent_states):
        fail(
            f"agent states in order: {' -> '.join(expect.agent_states)}",
            "agent states: " + (" -> ".join(states) or "(none)"),
        )
    if expect.no_errors and errors:
        fail(
            "no error events",
            "errors: " + "; ".join(f"{e.code}: {e.message}" for e in errors),
        )
    if expect.interrupted is not None and interrupted != expect.interrupted:
        fail(
            "the agent was interrupted" if expect.interrupted else "no agent line was cut short",
            ("an agent line was cut short; " if interrupted else "nothing was cut short; ")
            + seen_reply,
        )
    if expect.end_reason is not None and end_reason != expect.end_reason:
        fail(f"end reason {expect.end_reason!r}", f"end reason: {end_reason!r}")
    if expect.max_first_text is not None and (
        first_text is None or first_text > expect.max_first_text
    ):
        got = "no agent text" if first_text is None else f"{first_text:.2f} s"
        fail(f"first text within {expect.max_first_text:g} s", f"first text: {got}")
    if expect.p95_first_text is not None:
        if not latencies:
            fail(f"p95 first text within {expect.p95_first_text:g} s", "no turn had agent text")
        else:
            p95 = percentile(latencies, 95)
            if p95 > expect.p95_first_text:
                fail(
                    f"p95 first text within {expect.p95_first_text:g} s",
                    f"p95 first text: {p95:.2f} s over {len(latencies)} turn(s)",
                )
    if expect.max_heard is not None:
        for turn in heard:
            label = f"{turn.where}: " if turn.where != where else ""
            if turn.heard is None:
                fail(
                    f"heard within {expect.max_heard:g} s",
                    f"{label}no heard figure: {turn.missing()}",
                )
            elif turn.heard > expect.max_heard:
                fail(f"heard within {expect.max_heard:g} s", f"{label}heard: {turn.heard:.3f} s")
    for expected, seen in spoken_failures(expect, replies):
        fail(expected, seen)
    if expect.p95_heard is not None and not pooled:
        check_p95 = p95_heard_check(expect.p95_heard, heard)
        if check_p95 is not None:
            fail(*check_p95)
    return failures


def p95_heard_check(budget: float, turns: Sequence[HeardTurn]) -> tuple[str, str] | None:
    """``(expected, seen)`` when the 95th percentile of ``turns``' heard latency is over
    ``budget`` or some turn has no heard figure; None when the budget holds."""
    expected = f"p95 heard within {budget:g} s"
    missing = [t for t in turns if t.heard is None]
    if missing:
        seen = "; ".join(f"{t.where}: no heard figure: {t.missing()}" for t in missing[:5])
        if len(missing) > 5:
            seen += f"; and {len(missing) - 5} more"
        return expected, seen
    values = [t.heard for t in turns if t.heard is not None]
    if not values:
        return expected, "no say or speak turn was measured"
    p95 = percentile(values, 95)
    if p95 > budget:
        return expected, f"p95 heard: {p95:.3f} s over {len(values)} turn(s)"
    return None


def _call_matches(want: ToolCall, call: SeenCall) -> bool:
    if call.name != want.name:
        return False
    return want.params is None or params_match(dict(want.params), call.params)


def _describe_want(want: ToolCall) -> str:
    if want.params is None:
        return want.name
    return f"{want.name} with params {json.dumps(want.params, sort_keys=True)}"


def _in_order(seen: Sequence[str], wanted: Sequence[str]) -> bool:
    it = iter(seen)
    return all(any(s == w for s in it) for w in wanted)
