"""A line with no audio is not paced (issue 24): the sim writes its words back to back.

Pure logic of :class:`~fishtalk.sim.fish.speech.Speech`'s text path: a stand-in for the
agent's core records the words written and every wait taken; no room, no audio."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fishtalk.sim.fish import speech as speech_module
from fishtalk.sim.fish.speech import Speech
from fishtalk.sim.fish.voice import ToneVoice


class _Writer:
    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.closed = False

    async def write(self, text: str) -> None:
        self.chunks.append(text)

    async def aclose(self, **_: Any) -> None:
        self.closed = True


class _Core:
    """What Speech's text path asks of the agent: a writer, a state, notes."""

    def __init__(self) -> None:
        self.writer = _Writer()
        self.ending = False
        self.states: list[str] = []
        self.notes: list[str] = []
        self.room = self
        self.local_participant = self

    async def stream_text(self, **_: Any) -> _Writer:
        return self.writer

    async def set_state(self, state: str) -> None:
        self.states.append(state)

    def note(self, text: str) -> None:
        self.notes.append(text)


def test_a_line_with_no_audio_is_written_without_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float, result: Any = None) -> Any:
        waits.append(delay)
        return await real_sleep(0, result)

    monkeypatch.setattr(speech_module.asyncio, "sleep", sleep)
    core = _Core()
    speech = Speech(core, ToneVoice())  # type: ignore[arg-type]
    said = asyncio.run(speech.say("one two three four five six seven eight", audio=False))
    assert said.split() == ["one", "two", "three", "four", "five", "six", "seven", "eight"]
    assert len(core.writer.chunks) == 8  # still one chunk a word, as a stream
    assert core.writer.closed
    assert waits == []  # no pacing: there is no playback to keep up with
    assert core.states == ["thinking", "listening"]
