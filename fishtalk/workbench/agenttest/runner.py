"""Run agent test files (:mod:`.spec`) through :class:`fishtalk.AgentSession`.

The runner records every event of a session with the time it came, runs the turns in
order, and checks each turn's expectations against the events of its window (from the
turn's start to the next turn's start, or the end of the session) and the file's
``[expect]`` against the whole session. Nothing here prints: results are values
(:class:`TestResult`) that :mod:`fishtalk.workbench.agenttest.report` turns into text.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
import time
from bisect import bisect_right
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from fishtalk.core import conversation as conv
from fishtalk.core.errors import EXIT_USAGE, FishtalkError, RunLimitError, exit_code_for
from fishtalk.engine.audio.base import SAMPLE_RATE
from fishtalk.workbench.agenttest.spec import Expect, TestFile, ToolCall, Turn

if TYPE_CHECKING:
    from pydantic import JsonValue

    from fishtalk.agent_session import AgentSession
    from fishtalk.engine.session import Timeouts
    from fishtalk.engine.tools.registry import ToolContext
    from fishtalk.workbench.agenttest.wavmic import WavMicrophone

_log = logging.getLogger(__name__)

HANGUP_TIMEOUT: Final = 15.0
"""Seconds a hangup may take before the test gives up on it."""

Status = Literal["passed", "failed", "error"]


@dataclass(frozen=True)
class Target:
    """Where the sessions go."""

    agent_id: str | None
    api_url: str | None = None
    api_key: str | None = None
    public: bool = False
    origin: str | None = None
    timeouts: Timeouts | None = None
    fallback_agent: str | None = None
    """The agent id when neither ``agent_id`` (``--agent``) nor the file names one."""
    config_path: Path | None = None
    """The fishtalk config whose tools files with ``config_tools = true`` use (None: the
    default one)."""
    journal: bool = False
    """Write each session's journal to fishtalk's journal folder (the CLI's default); a
    failure report then names it."""


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
    exit_code: int | None = None
    """With ``error``: the documented exit code of that failure."""
    duration: float = 0.0
    first_text: list[float] = field(default_factory=list)
    """Per ``say``/``listen`` turn: seconds until the agent's first text."""
    heard: list[HeardTurn] = field(default_factory=list)
    """Per ``say``/``speak`` turn: its heard latency (or why there is none)."""
    p95_heard: float | None = None
    """The file's ``p95_heard`` budget when it is checked across runs (``--repeat``), not in
    this run (see :func:`heard_budgets`)."""
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

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return {
            "name": self.name,
            "path": self.path,
            "run": self.run,
            "status": self.status,
            "duration": round(self.duration, 3),
            "failures": [f.to_dict() for f in self.failures],
            "error": self.error,
            "exit_code": self.exit_code,
            "first_text": [round(v, 3) for v in self.first_text],
            "heard": [h.to_dict() for h in self.heard],
            "transcript": self.transcript,
            "tool_calls": self.tool_calls,
            "end_reason": self.end_reason,
            "journal": self.journal,
        }


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


# --- recording ----------------------------------------------------------------------------


@dataclass
class _Window:
    start_index: int
    start_time: float
    end_index: int | None = None
    sent_at: float | None = None
    """When the user's turn had left (typed: sent; spoken: the clip ended)."""


class _Recorder:
    """Every event of a session, with the monotonic time it came."""

    def __init__(self) -> None:
        self.events: list[tuple[float, conv.Change]] = []
        self.cards: dict[str, conv.ToolCard] = {}
        self.undeclared: list[str] = []

    def __call__(self, event: conv.Change) -> None:
        self.events.append((time.monotonic(), event))
        if isinstance(event, conv.ToolCardAdded | conv.ToolCardChanged):
            self.cards[event.card.call_id] = event.card

    def mark(self) -> _Window:
        return _Window(len(self.events), time.monotonic())

    def window(self, window: _Window) -> list[tuple[float, conv.Change]]:
        return self.events[window.start_index : window.end_index]

    def calls(self, events: Sequence[tuple[float, conv.Change]]) -> list[SeenCall]:
        """The tool calls first seen among ``events`` (params from the latest card)."""
        seen: list[SeenCall] = []
        ids: set[str] = set()
        for _, event in events:
            if not isinstance(event, conv.ToolCardAdded | conv.ToolCardChanged):
                continue
            call_id = event.card.call_id
            if call_id in ids:
                continue
            ids.add(call_id)
            card = self.cards.get(call_id, event.card)
            seen.append(_seen_call(card))
        return seen


def _seen_call(card: conv.ToolCard) -> SeenCall:
    if card.client is not None:
        return SeenCall(card.tool_name, dict(card.client.params), card.source, client=True)
    params: JsonValue = None
    if card.input is not None:
        try:
            params = json.loads(card.input)
        except ValueError:
            params = card.input
    return SeenCall(card.tool_name, params, card.source, client=False)


def _agent_lines(events: Sequence[tuple[float, conv.Change]]) -> list[str]:
    """The agent's lines among ``events``, in order, each as last seen (a line the session
    ended before it was finalised counts with the text it had)."""
    lines: dict[str, str] = {}
    for _, e in events:
        if (
            isinstance(
                e,
                conv.SegmentOpened
                | conv.SegmentGrew
                | conv.SegmentFinalised
                | conv.SegmentInterrupted,
            )
            and e.segment.role == "agent"
            and not e.segment.typed
        ):
            lines[e.segment.segment_id] = e.segment.text
    return [text for text in lines.values() if text]


def _first_text(events: Sequence[tuple[float, conv.Change]], since: float) -> float | None:
    for at, e in events:
        if (
            isinstance(e, conv.SegmentOpened | conv.SegmentGrew | conv.SegmentFinalised)
            and e.segment.role == "agent"
            and not e.segment.typed
            and e.segment.text
        ):
            return max(0.0, at - since)
    return None


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


# --- running ------------------------------------------------------------------------------


class _TurnAborted(Exception):
    """A turn could not complete: the test stops there (the reason is a failure)."""


def _fixtures(test: TestFile) -> dict[str, Callable[[dict[str, JsonValue], ToolContext], object]]:
    from fishtalk.engine.tools.registry import ToolError

    handlers: dict[str, Callable[[dict[str, JsonValue], ToolContext], object]] = {}
    for name, fixture in test.tools.items():

        def handler(
            params: dict[str, JsonValue],
            context: ToolContext,
            *,
            result: JsonValue = fixture.result,
            error: str | None = fixture.error,
        ) -> object:
            if error is not None:
                raise ToolError(error)
            return result

        handlers[name] = handler
    return handlers


async def run_test(
    test: TestFile,
    target: Target,
    *,
    run: int = 1,
    on_session: Callable[[AgentSession], None] | None = None,
    pooled: bool = False,
) -> TestResult:
    """Run ``test`` once against ``target``; never raises for what the agent does (that is
    a failure), and catches :class:`FishtalkError` from the session API (``error``).

    ``pooled``: the file's ``p95_heard`` is checked across its runs (:func:`heard_budgets`),
    not in this one."""
    from fishtalk.agent_session import AgentSession

    result = TestResult(test.name, test.path, run=run)
    if pooled:
        result.p95_heard = test.expect.p95_heard
    started = time.monotonic()
    agent_id = target.agent_id or test.agent or target.fallback_agent
    if not agent_id:
        result.status = "error"
        result.error = "no agent id: pass --agent or set agent = ... in the file"
        result.exit_code = EXIT_USAGE
        return result
    recorder = _Recorder()
    declared = set(test.tools)
    mic: WavMicrophone | None = None
    clips: dict[str, bytes] = {}
    if any(t.speak is not None for t in test.turns) or test.heard_budget:
        # Spoken turns need the WAV microphone; heard budgets need an audio path for the
        # agent's replies (the same backend: silence in, replies out to nowhere).
        from fishtalk.workbench.agenttest.wavmic import WavError, WavMicrophone, load_wav

        mic = WavMicrophone()
        try:
            for turn in test.turns:
                if turn.speak is not None and turn.speak not in clips:
                    clips[turn.speak] = load_wav(Path(test.path).parent / turn.speak)
        except WavError as exc:
            result.status = "error"
            result.error = str(exc)
            result.exit_code = EXIT_USAGE
            return result
    try:
        if test.config_tools:
            from fishtalk.engine.tools.build import build_registry
            from fishtalk.engine.tools.declared import read_config_tools

            declared |= set(build_registry(read_config_tools(target.config_path)).names())
        session = AgentSession(
            agent_id,
            config_tools=(target.config_path or True) if test.config_tools else False,
            audio=mic if mic is not None else False,
            api_url=target.api_url,
            api_key=target.api_key,
            public=target.public,
            origin=target.origin,
            text_only=test.text_only,
            client_tools=_fixtures(test),
            timeouts=target.timeouts,
            journal=target.journal,
        )
    except FishtalkError as exc:
        return _errored(result, exc, started)

    def watch(event: conv.Change) -> None:
        recorder(event)
        call = (
            event.client_call
            if isinstance(event, conv.ToolCardAdded | conv.ToolCardChanged)
            else None
        )
        if call is not None and call.tool_name not in declared:
            recorder.undeclared.append(call.tool_name)

    session.on("*", watch)
    windows: list[tuple[Turn, str, _Window]] = []
    failures: list[Failure] = []
    try:
        async with session:
            if on_session is not None:
                on_session(session)
            if test.greets and test.turns[0].action != "listen":
                try:
                    await session.wait_for_reply(test.timeout)
                except TimeoutError:
                    failures.append(
                        Failure(
                            "greeting",
                            "the agent greets (set greets = false if it waits for the user)",
                            f"no line from the agent within {test.timeout:g} s",
                        )
                    )
            for index, turn in enumerate(test.turns, start=1):
                where = f"turn {index} ({turn.describe()})"
                if windows:
                    windows[-1][2].end_index = len(recorder.events)
                window = recorder.mark()
                windows.append((turn, where, window))
                try:
                    await _do_turn(session, turn, window, turn.timeout or test.timeout, mic, clips)
                except _TurnAborted as exc:
                    failures.append(Failure(where, "the turn completes", str(exc)))
                    break
                if session.state.ended and turn.action != "hangup":
                    if index < len(test.turns):
                        failures.append(
                            Failure(
                                where,
                                "the session is still open for the next turn",
                                f"the session ended ({session.state.end_reason})",
                            )
                        )
                    break
            if not session.state.ended:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(HANGUP_TIMEOUT):
                        await session.hangup()
    except FishtalkError as exc:
        from fishtalk.core.errors import SessionEndedError

        if not isinstance(exc, SessionEndedError) or not windows:
            return _errored(result, exc, started)
        failures.append(Failure(windows[-1][1], "the turn completes", str(exc)))
    state = session.state
    result.end_reason = state.end_reason
    result.journal = str(session.journal_path) if session.journal_path is not None else None
    result.transcript = [
        f"{'you' if s.role == 'user' else s.role}: {s.text}" for s in state.transcript if s.text
    ]
    result.tool_calls = [c.describe() for c in recorder.calls(recorder.events)]
    by_window = _waterfalls(
        [window.start_time for _, _, window in windows], state.latency.turns, state.latency.open
    )
    for name in dict.fromkeys(recorder.undeclared):
        failures.append(
            Failure(
                "session",
                f"client tools called are declared in the file ([tools.{name}])",
                f"the agent called client tool {name!r}, which the test does not declare: "
                f"add [tools.{name}] with a result or an error",
            )
        )
    for index, (turn, where, window) in enumerate(windows):
        events = recorder.window(window)
        since = window.sent_at or window.start_time
        replying = turn.action in ("say", "speak", "listen")
        first = _first_text(events, since) if replying else None
        if first is not None:
            result.first_text.append(first)
        heard: list[HeardTurn] = []
        if turn.action in ("say", "speak"):
            heard.append(_heard_turn(where, by_window.get(index)))
            result.heard.extend(heard)
        failures.extend(
            check(
                turn.expect,
                where,
                lines=_agent_lines(events),
                calls=recorder.calls(events),
                errors=[e.error for _, e in events if isinstance(e, conv.ErrorAdded)],
                states=_states(events),
                end_reason=state.end_reason,
                first_text=first,
                interrupted=_cut_short(events),
                heard=heard,
            )
        )
    failures.extend(
        check(
            test.expect,
            "session",
            lines=_agent_lines(recorder.events),
            calls=recorder.calls(recorder.events),
            errors=[e.error for _, e in recorder.events if isinstance(e, conv.ErrorAdded)],
            states=_states(recorder.events),
            end_reason=state.end_reason,
            first_text=result.first_text[0] if result.first_text else None,
            latencies=result.first_text,
            interrupted=_cut_short(recorder.events),
            heard=result.heard,
            pooled=pooled,
        )
    )
    result.failures = failures
    result.status = "failed" if failures else "passed"
    result.duration = time.monotonic() - started
    return result


def _waterfalls(
    starts: Sequence[float], closed: Sequence[conv.Waterfall], open_: conv.Waterfall | None
) -> dict[int, conv.Waterfall]:
    """Each turn's waterfall, keyed by its window's index: the turn whose window the user's
    turn ended in (the session clock is the monotonic clock the windows are marked on); of
    several in one window (a spoken clip heard as two turns), the last. Unprompted turns
    (the agent speaking with no user turn before it) belong to no user turn."""
    found: dict[int, conv.Waterfall] = {}
    for waterfall in (*closed, *((open_,) if open_ is not None else ())):
        if waterfall.kind == "unprompted":
            continue
        index = bisect_right(starts, waterfall.user_ended_at) - 1
        if index >= 0:
            found[index] = waterfall
    return found


def _heard_turn(where: str, waterfall: conv.Waterfall | None) -> HeardTurn:
    if waterfall is None:
        return HeardTurn(where, None, "not measured")
    heard = waterfall.heard
    reason = None if heard is not None else waterfall.incomplete or "not heard"
    return HeardTurn(where, heard, reason, waterfall.to_dict())


def _cut_short(events: Sequence[tuple[float, conv.Change]]) -> bool:
    return any(
        isinstance(e, conv.SegmentInterrupted) and e.segment.role == "agent" for _, e in events
    )


def _states(events: Sequence[tuple[float, conv.Change]]) -> list[str]:
    return [e.agent_state for _, e in events if isinstance(e, conv.AgentStateChanged)]


def _errored(result: TestResult, exc: FishtalkError, started: float) -> TestResult:
    result.status = "error"
    result.error = str(exc)
    result.exit_code = exit_code_for(None, exc)
    result.duration = time.monotonic() - started
    return result


async def _do_turn(
    session: AgentSession,
    turn: Turn,
    window: _Window,
    timeout: float,  # noqa: ASYNC109 - each turn's own bound
    mic: WavMicrophone | None = None,
    clips: Mapping[str, bytes] | None = None,
    events: Sequence[tuple[float, conv.Change]] | None = None,
) -> None:
    from fishtalk.core.errors import SessionEndedError

    action = turn.action
    try:
        if action in ("say", "speak"):
            await _until_listening(session, timeout)
        if action == "say":
            assert turn.say is not None
            async with asyncio.timeout(timeout):
                await session.send_text(turn.say)
            window.sent_at = time.monotonic()
            await _interrupt(session, turn, timeout)
            await _replies(session, turn.lines, timeout)
        elif action == "speak":
            assert turn.speak is not None
            assert mic is not None
            assert clips is not None
            clip = clips[turn.speak]
            async with asyncio.timeout(timeout + len(clip) / (2 * SAMPLE_RATE)):
                await mic.speak(clip)
            window.sent_at = time.monotonic()
            await _interrupt(session, turn, timeout)
            await _replies(session, turn.lines, timeout)
        elif action == "listen":
            await _replies(session, turn.lines, timeout)
        elif action == "wait":
            assert turn.wait is not None
            await asyncio.sleep(turn.wait)
        elif action == "wait_for_state":
            want = turn.wait_for_state
            if session.state.agent_state != want and session.state.mode != want:
                await session.wait_for(
                    lambda e: (
                        (isinstance(e, conv.AgentStateChanged) and e.agent_state == want)
                        or (isinstance(e, conv.ModeChanged) and e.mode == want)
                    ),
                    timeout,
                )
        elif action == "wait_for_event":
            kind = turn.wait_for_event
            if not (kind == "ended" and session.state.ended):
                await session.wait_for(lambda e: e.kind == kind, timeout, raise_on_end=False)
        else:
            async with asyncio.timeout(timeout):
                await session.hangup()
    except TimeoutError:
        what = {
            "say": "a reply from the agent",
            "speak": "a reply from the agent",
            "listen": "a line from the agent",
            "wait_for_state": f"agent state {turn.wait_for_state!r}",
            "wait_for_event": f"a {turn.wait_for_event!r} event",
            "hangup": "the session to end",
        }.get(action, "the turn")
        raise _TurnAborted(
            f"timed out after {timeout:g} s waiting for {what} (is the agent hung? raise "
            "`timeout` if it is just slow)"
        ) from None
    except SessionEndedError as exc:
        if action in ("say", "speak", "listen") and _agent_lines(
            (events or [])[window.start_index :]
        ):
            return  # the agent answered, then ended the session: the next turn will tell
        raise _TurnAborted(f"the session ended first ({exc.reason})") from None


BUSY_STATES: Final = frozenset({"thinking", "speaking"})
"""Agent states in which a user turn waits (a polite user lets the agent finish)."""


async def _until_listening(session: AgentSession, timeout: float) -> None:  # noqa: ASYNC109
    """Wait until the agent is done thinking and speaking (agents that publish no state
    are never waited for)."""
    if session.state.agent_state not in BUSY_STATES:
        return
    await session.wait_for(
        lambda e: isinstance(e, conv.AgentStateChanged) and e.agent_state not in BUSY_STATES,
        timeout,
    )


async def _interrupt(session: AgentSession, turn: Turn, timeout: float) -> None:  # noqa: ASYNC109
    """With ``interrupt_after``: wait for the agent's first text, then that long, then
    interrupt it."""
    if turn.interrupt_after is None:
        return
    await session.wait_for(
        lambda e: (
            isinstance(e, conv.SegmentOpened | conv.SegmentGrew)
            and e.segment.role == "agent"
            and not e.segment.typed
            and bool(e.segment.text)
        ),
        timeout,
    )
    await asyncio.sleep(turn.interrupt_after)
    session.interrupt()


async def _replies(session: AgentSession, count: int, timeout: float) -> None:  # noqa: ASYNC109
    for _ in range(count):
        await session.wait_for_reply(timeout)


# --- many tests ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RunOptions:
    """How many times, how many at once, and the cap."""

    repeat: int = 1
    concurrency: int = 1
    max_sessions: int | None = None


def plan(tests: Sequence[TestFile], options: RunOptions) -> list[tuple[TestFile, int]]:
    """Every (test, run number) to run, in order; raises :class:`RunLimitError` over the
    cap."""
    jobs = [(t, run) for t in tests for run in range(1, options.repeat + 1)]
    if options.max_sessions is not None and len(jobs) > options.max_sessions:
        raise RunLimitError(
            f"this run would open {len(jobs)} sessions, more than --max-sessions "
            f"{options.max_sessions} (raise it to go ahead)"
        )
    return jobs


async def run_tests(
    tests: Sequence[TestFile],
    target: Target,
    options: RunOptions = RunOptions(),
    *,
    on_result: Callable[[TestResult], None] | None = None,
    on_start: Callable[[TestFile, int], None] | None = None,
) -> list[TestResult]:
    """Run every test ``options.repeat`` times, at most ``options.concurrency`` sessions at
    once; results in plan order. ``on_start(test, run)`` is called once a session is
    connected, ``on_result`` as each finishes. Cancelled (Ctrl-C),
    it hangs up the open sessions and returns what finished."""
    jobs = plan(tests, options)
    gate = asyncio.Semaphore(max(1, options.concurrency))
    results: dict[int, TestResult] = {}

    async def one(index: int, test: TestFile, run: int) -> None:
        def started(_session: AgentSession) -> None:
            if on_start is not None:
                on_start(test, run)

        async with gate:
            result = await run_test(
                test, target, run=run, on_session=started, pooled=options.repeat > 1
            )
        results[index] = result
        if on_result is not None:
            on_result(result)

    tasks = [asyncio.ensure_future(one(i, t, r)) for i, (t, r) in enumerate(jobs)]
    try:
        await asyncio.gather(*tasks)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        # Each session's close() hangs up (shielded) while its task unwinds.
        await asyncio.gather(*tasks, return_exceptions=True)
        return [results[i] for i in sorted(results)]
    return [results[i] for i in sorted(results)]


@contextlib.asynccontextmanager
async def sim_target(
    scenario: str | None, agent_id: str | None, timeouts: Timeouts | None = None
) -> AsyncIterator[Target]:
    """The built-in simulator, in this event loop, as a :class:`Target`. ``scenario``: a
    built-in name or a scenario file (None: the one named like the agent id, else
    ``converse``)."""
    from fishtalk.sim import run_sim
    from fishtalk.sim.fish.scenario import load_scenario

    chosen = load_scenario(scenario) if scenario else None
    async with run_sim(chosen) as handle:
        yield Target(agent_id, api_url=handle.api_url, api_key=handle.dev_key, timeouts=timeouts)


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
    """Counts, pass rate per test, first-text and heard latency percentiles, and the heard
    budgets checked across runs."""
    per: dict[str, list[bool]] = {}
    for r in results:
        per.setdefault(r.path or r.name, []).append(r.passed)
    latencies = [v for r in results for v in r.first_text]
    heard = [t.heard for r in results for t in r.heard if t.heard is not None]
    return {
        "total": len(results),
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
