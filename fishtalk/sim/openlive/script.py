"""What the OpenLive stand-in says: a reply script chosen by words in the user's turn.

One built-in scenario, keyed by a word in the turn (the first that matches, in this order):

========== ==================================================================================
word       the reply
========== ==================================================================================
garbage    malformed frames (not JSON, not an object, a wrong shape), then a short reply
unknown    a message and an SSE event of unknown types and a delta with an unknown field
broken     a server ``error`` message (outside the turn's SSE stream)
fail       an SSE ``error`` event: the turn failed
think      ``reasoning_delta``\\ s, then the reply
tool       ``tool_start``, a pause, ``tool_done``, then the reply
todo       a ``todos`` checklist, then the same list with its first item done
long       a long reply, many deltas: room to barge in
(other)    "You said: <the turn>." and a question
========== ==================================================================================

Every reply streams as ``text_delta``\\ s of a word each and ends with ``usage``; the server
sends ``done`` after it, as after a cancel or a failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from fishtalk.core.openlive import (
    ErrorMessage,
    ReasoningDelta,
    SseError,
    TextDelta,
    TodoItem,
    Todos,
    ToolDone,
    ToolStart,
    Usage,
)


@dataclass(frozen=True)
class Pause:
    """Wait this many pace units (see :class:`~fishtalk.sim.openlive.server.OpenLiveSim`)."""

    units: float = 1.0


@dataclass(frozen=True)
class Raw:
    """A text frame sent exactly as written (malformed or unknown on purpose)."""

    text: str


Step: TypeAlias = (
    (TextDelta | ReasoningDelta | ToolStart | ToolDone | Todos | Usage | SseError | ErrorMessage)
    | Pause
    | Raw
)

LONG_REPLY = (
    "Once upon a time a small fish lived in a quiet bay. Every morning it swam to the reef "
    "to count the coral. One day the tide brought a bottle with a letter inside. The fish "
    "could not read, so it asked a crab, who asked a gull, who read it aloud to everyone. "
    "The letter said that the sea was wider than any of them had guessed."
)

GARBAGE_FRAMES = (
    "{not json",
    "[1, 2, 3]",
    '{"t":"sse","event":{"type":"text_delta"}}',
)
UNKNOWN_FRAMES = (
    '{"t":"hologram","colour":"teal"}',
    '{"t":"sse","event":{"type":"canvas","html":"<b>hi</b>"}}',
)


def words(text: str) -> list[str]:
    """``text`` as word-sized deltas that join back to exactly ``text``."""
    return re.findall(r"\S+\s*", text)


def _say(text: str, **extra: object) -> list[Step]:
    steps: list[Step] = []
    for word in words(text):
        steps += [TextDelta.model_validate({"text": word, **extra}), Pause()]
    return steps


def _think(turn: str) -> list[Step]:
    thought = "The user wants me to think. I will keep it short."
    steps: list[Step] = [ReasoningDelta(text=w) for w in words(thought)]
    return [*steps, *_say("I thought about it: the answer is forty-two.")]


def _tool(turn: str) -> list[Step]:
    return [
        ToolStart(id="tool-1", tool="search", summary="Searching the web"),
        Pause(5),
        ToolDone(id="tool-1", detail="3 results"),
        *_say("I found three results."),
    ]


def _todo(turn: str) -> list[Step]:
    items = ["Read the question", "Find the answer", "Say it"]
    return [
        Todos(items=tuple(TodoItem(text=t, done=False) for t in items)),
        Pause(),
        Todos(items=tuple(TodoItem(text=t, done=i == 0) for i, t in enumerate(items))),
        *_say("I made a plan."),
    ]


def _garbage(turn: str) -> list[Step]:
    return [*(Raw(f) for f in GARBAGE_FRAMES), *_say("Still here after the noise.")]


def _unknown(turn: str) -> list[Step]:
    return [*(Raw(f) for f in UNKNOWN_FRAMES), *_say("Something new.", lang="en")]


def _echo(turn: str) -> list[Step]:
    return _say(f"You said: {' '.join(turn.split())}. What else?")


RULES: tuple[tuple[str, Callable[[str], list[Step]]], ...] = (
    ("garbage", _garbage),
    ("unknown", _unknown),
    ("broken", lambda _: [ErrorMessage(message="The simulated server is broken.")]),
    ("fail", lambda _: [SseError(message="The simulated model failed.")]),
    ("think", _think),
    ("tool", _tool),
    ("todo", _todo),
    ("long", lambda _: _say(LONG_REPLY)),
)


def reply_steps(turn: str, number: int) -> list[Step]:
    """The steps answering user turn ``turn``, the ``number``-th of the connection (from 1),
    with its ``usage`` last (context grows with every turn)."""
    lowered = turn.lower()
    make = next((make for word, make in RULES if word in lowered), _echo)
    steps = make(turn)
    said = sum(len(words(s.text)) for s in steps if isinstance(s, TextDelta))
    usage = Usage(context_tokens=100 * number + said, output_tokens=said, cost_usd=said * 1e-5)
    return [*steps, usage]


__all__ = [
    "GARBAGE_FRAMES",
    "LONG_REPLY",
    "UNKNOWN_FRAMES",
    "Pause",
    "Raw",
    "Step",
    "reply_steps",
    "words",
]
