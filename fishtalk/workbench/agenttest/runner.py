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
import logging
import time
from bisect import bisect_right
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from fishtalk.core import conversation as conv
from fishtalk.core.errors import ConfigError, FishtalkError, RunLimitError, TestFileError
from fishtalk.engine.replyaudio.reporter import measure_all
from fishtalk.workbench.agenttest.audiochecks import began_in, check_audio, check_cut
from fishtalk.workbench.agenttest.checks import check
from fishtalk.workbench.agenttest.external import conversation, judged
from fishtalk.workbench.agenttest.recording import (
    Recorder,
    Window,
    agent_lines,
    agent_lines_by_id,
    agent_states,
    cut_short,
    time_to_first_text,
)
from fishtalk.workbench.agenttest.results import Failure, HeardTurn, TestResult
from fishtalk.workbench.agenttest.spec import TestFile, Turn
from fishtalk.workbench.agenttest.turns import TurnAborted, clip_key, do_turn

if TYPE_CHECKING:
    from pydantic import JsonValue

    from fishtalk.agent_session import AgentSession
    from fishtalk.engine.parts import LiveKitTarget
    from fishtalk.engine.session import Timeouts
    from fishtalk.engine.tools.registry import ToolContext
    from fishtalk.workbench.agenttest.listening import HeardReply
    from fishtalk.workbench.agenttest.wavmic import WavMicrophone

_log = logging.getLogger(__name__)

HANGUP_TIMEOUT: Final = 15.0
"""Seconds a hangup may take before the test gives up on it."""


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
    livekit: LiveKitTarget | None = None
    """A LiveKit room to join directly instead of the session API (``--livekit-url``)."""


# --- one test file ------------------------------------------------------------------------


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
    if not agent_id and target.livekit is None:
        result.status = "error"
        result.failure = ConfigError("no agent id: pass --agent or set agent = ... in the file")
        result.error = str(result.failure)
        return result
    recorder = Recorder()
    declared = set(test.tools)
    mic: WavMicrophone | None = None
    clips: dict[tuple[str, str], bytes] = {}
    if any(t.speak is not None for t in test.turns) or test.heard_budget or test.checks_audio:
        # Spoken turns need the WAV microphone; heard budgets need an audio path for the
        # agent's replies (the same backend: silence in, replies out to nowhere).
        from fishtalk.speech.tts import SynthesisError
        from fishtalk.workbench.agenttest.speaking import clip
        from fishtalk.workbench.agenttest.wavmic import WavError, WavMicrophone

        mic = WavMicrophone()
        try:
            for turn in test.turns:
                key = clip_key(test, turn)
                if turn.speak is not None and key not in clips:
                    clips[key] = await asyncio.to_thread(
                        clip, turn.speak, Path(test.path).parent, test.voice_of(turn)
                    )
        except (WavError, SynthesisError) as exc:
            return _errored(result, TestFileError(str(exc)), started)
        except FishtalkError as exc:  # no espeak-ng
            return _errored(result, exc, started)
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
            **(target.livekit.session_options() if target.livekit is not None else {}),
            reply_audio=test.checks_audio,
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
    windows: list[tuple[Turn, str, Window]] = []
    failures: list[Failure] = []
    try:
        async with session:
            if on_session is not None:
                on_session(session)
            if test.greets and (not test.turns or test.turns[0].action != "listen"):
                try:
                    await session.wait_for_line(test.timeout)
                except TimeoutError:
                    failures.append(
                        Failure(
                            "greeting",
                            "the agent greets (set greets = false if it waits for the user)",
                            f"no line from the agent within {test.timeout:g} s",
                        )
                    )
            index = 0
            async for turn, where in conversation(test, session, failures):
                index += 1
                if windows:
                    windows[-1][2].end_index = len(recorder.events)
                window = recorder.mark()
                windows.append((turn, where, window))
                try:
                    await do_turn(
                        session,
                        turn,
                        window,
                        turn.timeout or test.timeout,
                        mic,
                        clips.get(clip_key(test, turn)),
                    )
                except TurnAborted as exc:
                    failures.append(Failure(where, "the turn completes", str(exc)))
                    break
                if test.checks_speech and turn.action in ("say", "speak", "listen"):
                    from fishtalk.workbench.agenttest.listening import reply_audio_settled

                    await reply_audio_settled(
                        session, window.start_time, turn.timeout or test.timeout
                    )
                elif test.checks_sound:
                    await _audio_drained(session)
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
    if test.expect.judge is not None:
        failures.extend(await judged(test, state.transcript))
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
    # Measured again from all the audio received: a loaded machine delays the audio more
    # than the state, and the events' look at a reply may come before its end arrived.
    capture = session.reply_audio
    reports = measure_all(capture, state) if capture is not None else state.reply_audio
    try:
        heard_replies = await _hear(test, session, windows, recorder)
    except (FishtalkError, ValueError) as exc:  # the model went missing since the file loaded
        return _errored(result, TestFileError(f"hearing the replies: {exc}"), started)
    result.replies = list(heard_replies.values())
    if result.replies and session.journal_path is not None:
        from fishtalk.workbench.agenttest.listening import journal_heard

        await asyncio.to_thread(journal_heard, session.journal_path, result.replies)
    for index, (turn, where, window) in enumerate(windows):
        end = windows[index + 1][2].start_time if index + 1 < len(windows) else None
        failures.extend(
            check_audio(
                turn.expect,
                where,
                began_in(reports, window.start_time, end),
                interrupted=turn.interrupt is not None,
            )
        )
        if turn.expect.transcript_cut:
            failures.extend(check_cut(where, heard_replies.get(index), reports))
        events = recorder.window(window)
        since = window.sent_at or window.start_time
        replying = turn.action in ("say", "speak", "listen")
        first = time_to_first_text(events, since) if replying else None
        measured = by_window.get(index) if turn.action in ("say", "speak") else None
        if measured is not None and measured.first_text is not None:
            # The reply's first text as the journal, export and --metrics-json show it:
            # the reducer's waterfall (one value per reply); a listen turn has none.
            first = measured.first_text
        if first is not None:
            result.first_text.append(first)
            result.first_text_by_turn[where] = first
        heard: list[HeardTurn] = []
        if turn.action in ("say", "speak"):
            heard.append(_heard_turn(where, by_window.get(index)))
            result.heard.extend(heard)
        failures.extend(
            check(
                turn.expect,
                where,
                lines=agent_lines(events),
                calls=recorder.calls(events),
                errors=[e.error for _, e in events if isinstance(e, conv.ErrorAdded)],
                states=agent_states(events),
                end_reason=state.end_reason,
                first_text=first,
                interrupted=cut_short(events),
                heard=heard,
                replies=[heard_replies[index]] if index in heard_replies else [],
            )
        )
    failures.extend(
        check(
            test.expect,
            "session",
            lines=agent_lines(recorder.events),
            calls=recorder.calls(recorder.events),
            errors=[e.error for _, e in recorder.events if isinstance(e, conv.ErrorAdded)],
            states=agent_states(recorder.events),
            end_reason=state.end_reason,
            first_text=result.first_text[0] if result.first_text else None,
            latencies=result.first_text,
            interrupted=cut_short(recorder.events),
            heard=result.heard,
            replies=result.replies,
            pooled=pooled,
        )
    )
    failures.extend(check_audio(test.expect, "session", reports))
    result.failures = failures
    result.status = "failed" if failures else "passed"
    result.duration = time.monotonic() - started
    return result


async def _audio_drained(session: AgentSession) -> None:
    """Until the agent's audio has been quiet for a second (at most 10 s): on a busy
    machine a reply's audio arrives after its text, and it belongs to this turn."""
    from fishtalk.engine.replyaudio.reporter import QUIET

    capture = session.reply_audio
    for _ in range(200):
        last = capture.last_audible if capture is not None else None
        if last is None or time.monotonic() - last >= QUIET:
            return
        await asyncio.sleep(0.05)


async def _hear(
    test: TestFile,
    session: AgentSession,
    windows: Sequence[tuple[Turn, str, Window]],
    recorder: Recorder,
) -> dict[int, HeardReply]:
    """Each reply's audio heard offline, by window index (only when a check needs it)."""
    if not test.checks_speech:
        return {}
    from fishtalk.workbench.agenttest.listening import ReplyToHear, hear_replies

    ends = [w.start_time for _, _, w in windows[1:]] + [None]
    replies = [
        ReplyToHear(
            index,
            where,
            agent_lines_by_id(recorder.window(window)),
            window.start_time,
            end,
            cut=turn.expect.transcript_cut,
        )
        for index, ((turn, where, window), end) in enumerate(zip(windows, ends, strict=True))
        if turn.action in ("say", "speak", "listen")
    ]
    model = Path(test.path).parent / test.stt_model if test.stt_model is not None else None
    return await hear_replies(session.reply_audio, replies, model)


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


def _errored(result: TestResult, exc: FishtalkError, started: float) -> TestResult:
    result.status = "error"
    result.error = str(exc)
    result.failure = exc
    result.duration = time.monotonic() - started
    return result


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
    if any(test.checks_audio for test in tests):
        # Once, before any session: the loudness meter's import holds the interpreter
        # (1 s warm, 15 s from a cold disk), which mid-run would stall every session's
        # audio, and an agent or sim sharing this process.
        from fishtalk.engine.replyaudio.measure import warm_up

        warm_up()
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
    scenario: str | None,
    agent_id: str | None,
    timeouts: Timeouts | None = None,
    agent_settings: Mapping[str, object] | None = None,
) -> AsyncIterator[Target]:
    """The built-in simulator, in a process of its own (:mod:`fishtalk.sim.process`: in
    this one it would share the sessions' interpreter), as a :class:`Target`.
    ``scenario``: a built-in name or a scenario file (None: the one named like the agent
    id, else ``converse``). ``agent_settings``: ``[agent]`` settings for every scenario it
    plays (see :func:`sim_agent_settings`); a bad one raises ``ScenarioError`` (exit 2)."""
    from fishtalk.sim.fish.scenario import load_scenario
    from fishtalk.sim.process import SimProcess

    chosen = load_scenario(scenario) if scenario else None
    sim = SimProcess(chosen, agent_overrides=agent_settings)
    try:
        info = await asyncio.to_thread(sim.start)
        yield Target(agent_id, api_url=info.api_url, api_key=info.dev_key, timeouts=timeouts)
    finally:
        await asyncio.to_thread(sim.stop)


def sim_agent_settings(
    tests: Sequence[TestFile], given: Mapping[str, object] | None = None
) -> dict[str, object]:
    """The sim's ``[agent]`` settings for a run of ``tests``: ``given`` (``--agent-setting``),
    and, when every test is ``text_only``, a text-only greeting.

    How the sim learns that its user is text-only: each typed turn says so itself (a
    ``user.message`` with ``"audio": false``, as the wire protocol defines), and the sim
    neither speaks nor paces such a reply. The greeting comes before any message, so the
    only word the sim can have on it is its settings: a run whose tests all hear nothing
    starts the sim with ``greeting_audio = false`` (``--agent-setting greeting_audio=true``
    puts the voice back). Nothing else of the agent's behaviour changes."""
    settings = dict(given or {})
    if tests and all(test.text_only for test in tests):
        settings.setdefault("greeting_audio", False)
    return settings
