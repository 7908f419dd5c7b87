"""The simulated agent's script: it plays a :class:`~fishtalk.sim.fish.scenario.Scenario`.

:class:`ScenarioInterpreter` greets the user once they join, runs the scenario's steps one
by one (answering turns between them when the scenario says so), then does what
``then`` says: converse (every turn gets an answer, text only when the message asked for
no audio; "are you still there?" after ``idle_seconds`` without activity, then ``idle``),
listen only, or end the call. It decides what to do; speaking, hearing and tool calls are
the other parts' business.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from fishtalk.core import protocol as p
from fishtalk.sim.fish.core import USER_GRACE, Ended
from fishtalk.sim.fish.listening import HeardSpeech, Turn
from fishtalk.sim.fish.scenario import (
    CallClientTool,
    DropSignalling,
    End,
    ForceReconnect,
    Raw,
    Say,
    SendError,
    SetState,
    Sleep,
    Step,
    ToolRun,
    UserTranscript,
    WaitFor,
)

if TYPE_CHECKING:
    from fishtalk.sim.fish.agent import SimAgent

_PLACEHOLDER: Final = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")


class ScenarioInterpreter:
    """Runs one agent's scenario from the greeting to the end of the call."""

    def __init__(self, agent: SimAgent) -> None:
        self._agent = agent
        self._waiters: list[tuple[str, asyncio.Future[p.ClientEvent]]] = []
        self._replies = 0

    # --- the script ---------------------------------------------------------------------

    async def run(self) -> None:
        """Wait for the user, greet, run the steps, then converse, listen or end."""
        agent = self._agent
        scenario = agent.scenario
        try:
            await agent.wait_for_user()
            await agent.set_state("listening")
            await self._greet()
            for index, step in enumerate(scenario.steps):
                if agent.settings.answer_during_steps:
                    await self._answer_pending()
                agent.note(f"step {index}: {step.do}")
                await self.run_step(step)
            agent.note(f"steps done; then {scenario.then}")
            # The idle clock starts when the script stops talking, not when the user
            # last did something: else a long tour ends straight in "are you there?".
            agent.listening.touch()
            if scenario.then == "end":
                await agent.end("agent_hangup")
            elif scenario.then == "converse":
                await self._converse()
            else:
                await asyncio.Event().wait()
        except Ended:
            pass

    def offer(self, event: p.ClientEvent) -> bool:
        """Hand a client event to the ``wait_for`` steps waiting for it; True if one took it."""
        consumed = False
        for kind, fut in list(self._waiters):
            if kind == event.type and not fut.done():
                fut.set_result(event)
                self._waiters.remove((kind, fut))
                consumed = True
        return consumed

    async def _greet(self) -> None:
        agent = self._agent
        overrides = agent.session.body.overrides
        greeting = overrides.first_message if overrides and overrides.first_message else None
        text = greeting if greeting is not None else agent.settings.greeting
        if text:
            await agent.say(self.fill(text), audio=agent.settings.greeting_audio)

    def fill(self, text: str) -> str:
        """Replace ``{{name}}`` with the session's dynamic variable ``name`` (if set)."""
        variables = self._agent.session.body.dynamic_variables or {}

        def value(match: re.Match[str]) -> str:
            found = variables.get(match[1])
            if found is None:
                return match[0]
            return found if isinstance(found, str) else json.dumps(found)

        return _PLACEHOLDER.sub(value, text)

    # --- steps --------------------------------------------------------------------------

    async def run_step(self, step: Step) -> None:
        """Run one scenario step."""
        handler = self._step_handlers().get(type(step))
        if handler is None:  # pragma: no cover - the union is exhaustive
            raise TypeError(f"unknown step {step!r}")
        await handler(step)

    def _step_handlers(self) -> dict[type, Callable[[Any], Awaitable[None]]]:
        return {
            Say: self._step_say,
            SetState: self._step_state,
            CallClientTool: self.call_client_tool,
            ToolRun: self._agent.tools.run_own,
            Raw: self._step_raw,
            UserTranscript: self._step_user_transcript,
            SendError: self._step_error,
            WaitFor: self._step_wait_for,
            DropSignalling: self._step_drop,
            ForceReconnect: self._step_reconnect,
            End: self._step_end,
            Sleep: self._step_sleep,
        }

    async def _step_say(self, step: Say) -> None:
        sound = self.fill(step.sound) if step.sound is not None else None
        await self._agent.say(self.fill(step.text), audio=step.audio, sound=sound)

    async def _step_state(self, step: SetState) -> None:
        await self._agent.set_state(step.value)

    async def _step_raw(self, step: Raw) -> None:
        self._agent.note(f"sent raw packet on {step.topic}")
        await self._agent.send_raw(step.data(), topic=step.topic)

    async def _step_error(self, step: SendError) -> None:
        self._agent.note(f"sent error {step.code}")
        await self._agent.send(p.AgentError(code=step.code, message=step.message))

    async def _step_drop(self, step: DropSignalling) -> None:
        agent = self._agent
        agent.note("dropping the user's signalling connection")
        await agent.faults.drop_signalling(agent.session.room, agent.session.user_identity)

    async def _step_reconnect(self, step: ForceReconnect) -> None:
        agent = self._agent
        agent.note("forcing the user to reconnect")
        agent.user_back.clear()
        await agent.faults.force_reconnect(agent.session.room, agent.session.user_identity)
        try:
            await asyncio.wait_for(agent.user_back.wait(), USER_GRACE)
        except TimeoutError:
            agent.note("the user did not rejoin")

    async def _step_end(self, step: End) -> None:
        await self._agent.end(step.reason)

    async def _step_sleep(self, step: Sleep) -> None:
        await asyncio.sleep(step.seconds)

    async def _step_wait_for(self, step: WaitFor) -> None:
        fut: asyncio.Future[p.ClientEvent] = asyncio.get_running_loop().create_future()
        entry = (step.event, fut)
        self._waiters.append(entry)
        try:
            await asyncio.wait_for(fut, step.timeout)
            self._agent.note(f"got awaited {step.event}")
        except TimeoutError:
            self._agent.note(f"timed out waiting for {step.event}")
            if step.on_timeout == "end":
                await self._agent.end("agent_hangup")
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)

    async def _step_user_transcript(self, step: UserTranscript) -> None:
        agent = self._agent
        segment = "SG_" + secrets.token_hex(6)
        identity = agent.session.user_identity
        for text in step.interim:
            await agent.publish_user_transcript(identity, segment, text, final=False)
            await asyncio.sleep(step.interval)
        if step.final is not None:
            await agent.publish_user_transcript(identity, segment, step.final, final=True)

    async def call_client_tool(self, step: CallClientTool) -> None:
        """Run one ``client_tool`` step, and say what came back when it asks to."""
        reply = await self._agent.tools.call_client(
            step.name,
            step.params,
            expects_response=step.expects_response,
            deadline=step.timeout,
            call_id=step.call_id,
        )
        if step.announce:
            await self._agent.say(reply.describe(step.name))

    # --- conversation -------------------------------------------------------------------

    async def _converse(self) -> None:
        while True:
            turn = await self._agent.listening.next_turn()
            if turn is None:
                await self._re_engage()
                continue
            await self._respond(turn)

    async def _respond(self, turn: Turn, *, mid_script: bool = False) -> None:
        agent = self._agent
        await agent.set_state("thinking")
        agent.note(f"thinking for {agent.settings.think_seconds:g} s")
        await asyncio.sleep(agent.settings.think_seconds)
        if isinstance(turn, HeardSpeech) and (said := turn.as_message()) is not None:
            await self._answer(said, mid_script=mid_script)
        elif isinstance(turn, HeardSpeech):
            h = turn.heard
            await agent.say(
                f"I heard {h.duration:.1f} seconds of sound at {h.dbfs:.0f} dBFS, "
                f"mostly around {h.frequency:.0f} hertz."
            )
        else:
            await self._answer(turn, mid_script=mid_script)

    async def _answer_pending(self) -> None:
        """Between two steps: answer the turns that came in meanwhile, then carry on."""
        while (turn := self._agent.listening.pending()) is not None:
            self._agent.note("answering a turn between steps")
            await self._respond(turn, mid_script=True)

    async def _re_engage(self) -> None:
        agent = self._agent
        if not agent.listening.nudged:
            agent.listening.nudged = True
            await agent.say("Are you still there? Type or say something whenever you like.")
            agent.listening.nudged_now()
            agent.note("idle: nudged; the idle clock restarts")
        else:
            await agent.set_state("idle")

    async def _answer(self, message: p.UserMessage, *, mid_script: bool = False) -> None:
        agent = self._agent
        text = message.text.strip()
        lowered = text.lower()
        audio = message.audio is not False
        if not mid_script:
            # Keep the hint for the first answer after the script, when it can be tried.
            self._replies += 1
        if lowered in {"bye", "goodbye", "hang up", "hangup"}:
            await agent.say("Goodbye!", audio=audio)
            await agent.end("agent_hangup")
        asks_time = _ASKS_TIME.search(lowered) is not None
        if lowered.startswith(("call ", "tool ")) or asks_time:
            # "What time is it?" asks the client's get_time, as an agent with that client
            # tool would (the README's client-tool example, offline).
            name = "get_time" if asks_time else tool_name(text.split(maxsplit=1)[1])
            reply = await agent.tools.call_client(name, {}, expects_response=True)
            if asks_time and reply.reason in ("error", "timeout"):
                # No get_time on the client (`fishtalk demo`): the machine's own clock.
                await agent.say(machine_time_answer(), audio=audio)
                return
            await agent.say(reply.describe(name), audio=audio)
            return
        if lowered == "error":
            await agent.send(p.AgentError(code="provider_error"))
            await agent.say("I just sent you a provider_error event.", audio=audio)
            return
        then = None
        if mid_script:
            then = "I'll carry on with what I was showing you; then we can talk."
        elif self._replies == 1:
            then = "Try 'call get_local_context', 'error' or 'goodbye'."
        await agent.say(you_said(text, then), audio=audio)


def tool_name(words: str) -> str:
    """The tool a "call ..." turn names: its words joined as one identifier, so typing
    "call get time" calls ``get_time``, as saying it does (:mod:`.hearing`)."""
    return "_".join(words.split())


_ASKS_TIME: Final = re.compile(r"\bwhat time is it\b|\bwhat's the time\b|\bthe time now\b")
"""A question about the time: the sim asks the client's ``get_time`` tool."""

_SENTENCE_END: Final = re.compile(r"[.!?\u2026\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*$")
"""A text that already ends a sentence (. ! ? … and CJK stops, maybe inside quotes)."""


def machine_time_answer(now: datetime | None = None) -> str:
    """What the sim says the time is when the client has no ``get_time``: this machine's
    real local time, and where it comes from."""
    now = now or datetime.now().astimezone()
    return f"Your client has no get_time tool; by this machine's clock it is {now:%H:%M}."


def end_sentence(text: str) -> str:
    """``text`` as a finished sentence: a full stop added only where none ends it (a quoted
    ``What?`` never becomes ``What?.``); a trailing comma, colon or semicolon gives way."""
    text = text.rstrip().rstrip(",;:").rstrip()
    return text if not text or _SENTENCE_END.search(text) else f"{text}."


def you_said(text: str, then: str | None = None) -> str:
    """The echo answer: ``You said: TEXT`` as a sentence, then ``then`` if given."""
    said = f"You said: {text.strip()}"
    return f"{end_sentence(said)} {then}" if then else said


__all__ = ["ScenarioInterpreter", "end_sentence", "machine_time_answer", "you_said"]
