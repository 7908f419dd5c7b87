"""One conversation's turns: saying, speaking, interrupting, listening and waiting, each
bounded by its timeout; a turn that cannot complete raises :class:`TurnAborted`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from fishtalk.core import conversation as conv
from fishtalk.engine.audio.base import SAMPLE_RATE
from fishtalk.workbench.agenttest.recording import Window, agent_lines
from fishtalk.workbench.agenttest.spec import TestFile, Turn

if TYPE_CHECKING:
    from fishtalk.agent_session import AgentSession
    from fishtalk.workbench.agenttest.wavmic import WavMicrophone


def clip_key(test: TestFile, turn: Turn) -> tuple[str, str]:
    """What identifies a ``speak`` turn's clip: its value and its voice."""
    return (turn.speak or "", test.voice_of(turn))


class TurnAborted(Exception):
    """A turn could not complete: the test stops there (the reason is a failure)."""


async def do_turn(
    session: AgentSession,
    turn: Turn,
    window: Window,
    timeout: float,  # noqa: ASYNC109 - each turn's own bound
    mic: WavMicrophone | None = None,
    clip: bytes | None = None,
    events: Sequence[tuple[float, conv.Change]] | None = None,
) -> None:
    from fishtalk.core.errors import SessionEndedError

    action = turn.action
    try:
        if action in ("say", "speak"):
            await _until_listening(session, timeout, SETTLE_SECONDS if action == "speak" else 0.0)
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
            assert clip is not None
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
        raise TurnAborted(
            f"timed out after {timeout:g} s waiting for {what} (is the agent hung? raise "
            "`timeout` if it is just slow)"
        ) from None
    except SessionEndedError as exc:
        if action in ("say", "speak", "listen") and agent_lines(
            (events or [])[window.start_index :]
        ):
            return  # the agent answered, then ended the session: the next turn will tell
        raise TurnAborted(f"the session ended first ({exc.reason})") from None


BUSY_STATES: Final = frozenset({"thinking", "speaking"})
"""Agent states in which a user turn waits (a polite user lets the agent finish)."""
SETTLE_SECONDS: Final = 0.6
"""How long the agent must have been quiet before a ``speak`` turn starts talking: a
person leaves a beat after the voice stops, and an agent that takes sound heard just
after its own speech for its echo (the sim does, for half a second) would drop a turn
spoken at once."""


async def _until_listening(session: AgentSession, timeout: float, settle: float) -> None:  # noqa: ASYNC109 - per turn
    """Wait until the agent is done thinking and speaking (agents that publish no state
    are never waited for), and then has stayed so for ``settle`` seconds."""

    def busy(e: conv.Change) -> bool:
        return isinstance(e, conv.AgentStateChanged) and e.agent_state in BUSY_STATES

    async with asyncio.timeout(timeout):
        while True:
            if session.state.agent_state in BUSY_STATES:
                await session.wait_for(
                    lambda e: (
                        isinstance(e, conv.AgentStateChanged) and e.agent_state not in BUSY_STATES
                    )
                )
            if settle <= 0:
                return
            try:
                await session.wait_for(busy, settle)
            except TimeoutError:
                return


async def _interrupt(session: AgentSession, turn: Turn, timeout: float) -> None:  # noqa: ASYNC109 - per turn
    """With ``interrupt_after``: wait for the agent's first text, then that long, then
    interrupt it; with ``interrupt``: its event, then its delay."""
    if turn.interrupt is not None:
        async with asyncio.timeout(timeout):
            await _interrupt_event(session, turn.interrupt.after)
        await asyncio.sleep(turn.interrupt.delay)
        session.interrupt()
        return
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


async def _interrupt_event(session: AgentSession, after: str) -> None:
    """Until the reply's first text, its first audible frame (after its first text), or the
    agent speaking."""
    if after == "speaking":
        if session.state.agent_state != "speaking":
            await session.wait_for(
                lambda e: isinstance(e, conv.AgentStateChanged) and e.agent_state == "speaking"
            )
    elif after == "first_audio":
        # The reply's first text first: audio arriving before it may be the tail of the
        # reply before (its audio lags its text on a busy machine).
        await _interrupt_event(session, "first_text")
        capture = session.reply_audio
        assert capture is not None  # the runner asks for it with an interrupt
        heard: asyncio.Future[float] = asyncio.get_running_loop().create_future()

        def audible(at: float) -> None:
            if not heard.done():
                heard.set_result(at)

        capture.when_audible(audible)
        await heard
    else:
        await session.wait_for(
            lambda e: (
                isinstance(e, conv.SegmentOpened | conv.SegmentGrew)
                and e.segment.role == "agent"
                and not e.segment.typed
                and bool(e.segment.text)
            )
        )


async def _replies(session: AgentSession, count: int, timeout: float) -> None:  # noqa: ASYNC109 - per turn
    for _ in range(count):
        await session.wait_for_line(timeout)
