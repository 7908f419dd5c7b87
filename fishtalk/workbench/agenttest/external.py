"""Bring your own model: a simulated caller and a judge, run as the user's commands.

Both run through the client-tool command runner
(:func:`~fishtalk.engine.tools.command.run_command`), so they get its limits: an argv list
(never a shell), a fresh environment without the Fish API key, 60 KB of output at most,
the whole process group killed on timeout. They start in the test file's folder.

**Caller** (``caller = ["my-caller", "--persona", "impatient customer"]``): after the
file's turns, the caller is asked for each next user line, at most ``caller_turns`` times.
stdin is one JSON object::

    {"test": "name", "turn": 1, "transcript": [{"role": "agent", "text": "Hi!"}, ...]}

stdout is the line to say: plain text, a JSON string, or ``{"say": "..."}``; ``hang up``
(or ``{"hang_up": true}``) ends the call. The line is sent as a typed turn.

**Judge** (``[expect] judge = { command = [...], criteria = "..." }``): after the session,
stdin is ``{"test": ..., "criteria": ..., "transcript": [...]}``; stdout must be JSON
``{"verdict": "pass" | "fail", "reason": "..."}`` (``verdict`` may be a boolean).

A command that cannot start, times out, exits non-zero, floods its output or prints
anything else is a failure of that test that says so, never a crash of the run.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pydantic import JsonValue

from fishtalk.core.conversation.state import Segment
from fishtalk.engine.tools.command import CommandSpec, CommandToolError, run_command
from fishtalk.workbench.agenttest.results import Failure
from fishtalk.workbench.agenttest.spec import TestFile, Turn

if TYPE_CHECKING:
    from fishtalk.agent_session import AgentSession

HANG_UP: Final = "hang up"
"""What a caller prints to end the call."""


class ExternalError(Exception):
    """A caller or judge command failed or answered nonsense (the message says how)."""


def transcript_json(segments: Sequence[Segment]) -> list[JsonValue]:
    """The conversation so far as the commands see it: role and text, in order."""
    return [{"role": s.role, "text": s.text} for s in segments if s.text]


async def run_external(
    name: str,
    argv: Sequence[str],
    payload: dict[str, JsonValue],
    *,
    cwd: Path,
    timeout: float,  # noqa: ASYNC109 - the command's own bound
) -> JsonValue:
    """Run ``argv`` once with ``payload`` on stdin; its stdout, parsed as JSON when it
    parses. Raises :class:`ExternalError`."""
    spec = CommandSpec(name=name, argv=tuple(argv), cwd=cwd)
    try:
        async with asyncio.timeout(timeout):
            return await run_command(spec, payload, env=spec.child_env(os.environ))
    except TimeoutError:
        raise ExternalError(f"the {name} command timed out after {timeout:g} s") from None
    except CommandToolError as exc:
        raise ExternalError(f"the {name} command failed: {exc}") from None


def _short(value: JsonValue, limit: int = 200) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def caller_line(output: JsonValue) -> str | None:
    """The caller's next line, or None to hang up. Raises :class:`ExternalError`."""
    line: JsonValue = output
    if isinstance(output, dict):
        if output.get("hang_up") is True:
            return None
        line = output.get("say")
    if not isinstance(line, str) or not line.strip():
        shown = "(no output)" if output is None else _short(output)
        raise ExternalError(
            f'the caller printed no line (expected text, {{"say": ...}} or "hang up"): {shown}'
        )
    text = line.strip()
    if text.casefold().rstrip(".!") == HANG_UP:
        return None
    if "\n" in text:
        raise ExternalError(f"the caller printed more than one line: {_short(text)}")
    if not text.isprintable() or "\ufffd" in text:
        # Undecodable bytes (replaced by U+FFFD), NULs and control characters.
        raise ExternalError(f"the caller printed a line that is not text: {text!r:.200}")
    return text


@dataclass(frozen=True)
class Verdict:
    """A judge's answer."""

    passed: bool
    reason: str


def verdict(output: JsonValue) -> Verdict:
    """The judge's verdict from its output. Raises :class:`ExternalError`."""
    if isinstance(output, dict):
        raw, reason = output.get("verdict"), output.get("reason", "")
        if isinstance(raw, str) and raw.strip().lower() in ("pass", "fail"):
            raw = raw.strip().lower() == "pass"
        if isinstance(raw, bool) and isinstance(reason, str):
            return Verdict(raw, reason.strip() or "(no reason given)")
    shown = "(no output)" if output is None else _short(output)
    raise ExternalError(
        f'the judge printed no verdict (expected JSON {{"verdict": "pass" or "fail", '
        f'"reason": "..."}}): {shown}'
    )


# --- in a test run ------------------------------------------------------------------


async def conversation(
    test: TestFile, session: AgentSession, failures: list[Failure]
) -> AsyncIterator[tuple[Turn, str]]:
    """The file's turns, then the caller's lines (each asked for when its turn comes) and
    its hang-up; a caller that fails adds a failure and ends the conversation."""
    for index, turn in enumerate(test.turns, start=1):
        yield turn, f"turn {index} ({turn.describe()})"
    if test.caller is None:
        return
    for number in range(1, test.caller_turns + 1):
        where = f"caller turn {number}"
        if session.state.ended:
            return
        payload: dict[str, JsonValue] = {
            "test": test.name,
            "turn": number,
            "transcript": transcript_json(session.state.transcript),
        }
        try:
            output = await run_external(
                "caller",
                test.caller,
                payload,
                cwd=Path(test.path).parent,
                timeout=test.caller_timeout,
            )
            line = caller_line(output)
        except ExternalError as exc:
            failures.append(Failure(where, 'the caller answers a line or "hang up"', str(exc)))
            return
        turn = Turn(say=line) if line is not None else Turn(hangup=True)
        yield turn, f"{where} ({turn.describe()})"
        if line is None:
            return


async def judged(test: TestFile, transcript: Sequence[Segment]) -> list[Failure]:
    """The judge's verdict on the session, as failures (none when it passes)."""
    judge = test.expect.judge
    assert judge is not None
    expected = f"the judge passes the session on {judge.criteria!r}"
    payload: dict[str, JsonValue] = {
        "test": test.name,
        "criteria": judge.criteria,
        "transcript": transcript_json(transcript),
    }
    try:
        output = await run_external(
            "judge", judge.command, payload, cwd=Path(test.path).parent, timeout=judge.timeout
        )
        judged = verdict(output)
    except ExternalError as exc:
        return [Failure("session", expected, str(exc))]
    return [] if judged.passed else [Failure("session", expected, f"judge: {judged.reason}")]


__all__ = [
    "HANG_UP",
    "ExternalError",
    "Verdict",
    "caller_line",
    "conversation",
    "judged",
    "run_external",
    "transcript_json",
    "verdict",
]
