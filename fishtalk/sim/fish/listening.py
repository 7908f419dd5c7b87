"""What the simulated agent hears: the user's microphone, their activity and their turns.

:class:`Listening` transcribes every user audio track it is given the way a real agent's
speech-to-text would show it: while it hears sound, every 0.5 s a complete stream with
``lk.transcription_final: "false"`` whose text replaces the segment's text, then one with
``"true"`` in its header. With the ``speech`` extra the text is what offline
speech-to-text understood (:mod:`~fishtalk.sim.fish.hearing`: "call get time"), and the
turn carries it; without it, a description of the sound ("hearing 0.8 s of sound ...",
"heard 1.2 s of sound at -18 dBFS, mostly around 440 Hz"). Each finished stretch of sound and each
``user.message`` becomes a turn in its inbox, unless the sound began while the agent was
talking or just after: through a speaker without echo cancellation that is its own voice,
and answering it would loop forever.

It also keeps the idle clock: any activity (typing, a message, sound) restarts it, and
:meth:`Listening.next_turn` returns None once ``idle_seconds`` pass without a turn. The
clock is injectable (:class:`IdleClock`) so tests can drive it instead of waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np
from livekit import rtc

from fishtalk.core import protocol as p
from fishtalk.sim.fish.core import AgentCore
from fishtalk.sim.fish.hearing import Ears, as_message, ears, transcript
from fishtalk.sim.fish.speech import Speech
from fishtalk.sim.fish.voice import SAMPLE_RATE, Heard, Pcm, SpeechDetector, analyse, describe
from fishtalk.speech.recognition import Recognition

INTERIM_EVERY: Final = 0.5
"""Seconds between interim user transcripts while the user makes sound."""
MAX_UTTERANCE: Final = 15.0
"""Longest user segment: sound that goes on longer is finalised at this length and the
rest starts a new segment (speech-to-text endpointing does the same)."""


class IdleClock(Protocol):
    """Where the idle time comes from: a monotonic ``now`` and a matching ``sleep``."""

    def now(self) -> float:
        """Seconds on this clock (only differences matter)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once ``seconds`` have passed on this clock."""
        ...


class MonotonicClock:
    """The real clock: ``time.monotonic`` and ``asyncio.sleep``."""

    def now(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep(seconds)``."""
        await asyncio.sleep(seconds)


@dataclass(frozen=True)
class HeardSpeech:
    """A finished stretch of sound on the user's track, as a turn to answer."""

    heard: Heard
    understood: Recognition | None = None
    """What speech-to-text made of it (None without the ``speech`` extra)."""

    def as_message(self) -> p.UserMessage | None:
        """The typed turn this speech stands for, or None when no words were recognised."""
        return None if self.understood is None else as_message(self.understood)


Turn = p.UserMessage | HeardSpeech
"""Something the user said or typed that the agent may answer."""


class Listening:
    """The agent's ears: user tracks in, transcripts out, turns queued, idle time kept."""

    def __init__(self, core: AgentCore, speech: Speech, *, clock: IdleClock | None = None) -> None:
        self._core = core
        self._speech = speech
        self.clock: IdleClock = clock or MonotonicClock()
        self._inbox: asyncio.Queue[Turn] = asyncio.Queue()
        self._last_activity = self.clock.now()
        self.nudged = False
        """Whether the agent has asked "are you still there?" since the last activity."""
        self.max_utterance = MAX_UTTERANCE
        """Seconds after which a user segment still sounding is finalised anyway."""
        self._ears: Ears | None = ears()

    @property
    def ears(self) -> Ears | None:
        """Speech-to-text, when the scenario listens for speech and the extra is installed."""
        return self._ears if self._core.settings.listen == "speech" else None

    # --- activity and turns -------------------------------------------------------------

    def touch(self) -> None:
        """The user did something: restart the idle clock."""
        self._last_activity = self.clock.now()
        self.nudged = False

    def nudged_now(self) -> None:
        """The agent has just re-engaged: restart the idle clock, remember it nudged."""
        self._last_activity = self.clock.now()
        self.nudged = True

    def heard_message(self, message: p.UserMessage) -> None:
        """A typed (or client-sent) turn to answer."""
        self._inbox.put_nowait(message)

    def pending(self) -> Turn | None:
        """A turn already waiting, if any (without waiting for one)."""
        if self._inbox.empty():
            return None
        return self._inbox.get_nowait()

    async def next_turn(self) -> Turn | None:
        """The next user turn, or None when the idle time ran out first."""
        idle = self._core.settings.idle_seconds
        while True:
            if not self._inbox.empty():
                # A turn is already waiting: answer it, whatever the idle clock says.
                return self._inbox.get_nowait()
            if idle <= 0 or (self.nudged and self._core.state == "idle"):
                return await self._inbox.get()
            left = self._last_activity + idle - self.clock.now()
            if left <= 0:
                return None
            since = self._last_activity
            turn = await self._turn_within(left)
            if turn is not None:
                return turn
            if self._last_activity != since:
                self._core.note("idle: activity postponed re-engaging")

    async def _turn_within(self, seconds: float) -> Turn | None:
        getter = asyncio.ensure_future(self._inbox.get())
        timer = asyncio.ensure_future(self.clock.sleep(seconds))
        try:
            await asyncio.wait({getter, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not getter.done():
                getter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await getter
        # A turn that arrived together with the timer still counts.
        if getter.done() and not getter.cancelled():
            return getter.result()
        return None

    # --- the user's microphone ----------------------------------------------------------

    async def transcribe(self, track: rtc.Track, identity: str, track_sid: str) -> None:
        """Transcribe ``identity``'s audio ``track`` until it ends; queue what it heard."""
        stream = rtc.AudioStream.from_track(track=track, sample_rate=SAMPLE_RATE, num_channels=1)
        detector = SpeechDetector()
        segment = ""
        last_interim = 0.0
        span = 0
        over_my_voice = False
        interim: asyncio.Task[None] | None = None
        """The interim transcript being made (one at a time: a decode is not awaited here,
        where it would hold up the audio; one due while another runs is skipped)."""
        try:
            async for event in stream:
                frame = event.frame
                rate = frame.sample_rate
                pcm = np.frombuffer(frame.data, dtype=np.int16).copy()
                outcome = detector.push(pcm, rate)
                if outcome == "start":
                    segment = "SG_" + secrets.token_hex(6)
                    last_interim = 0.0
                    span = detector.utterance.size
                    # Sound that starts while the agent talks is likely its own voice
                    # coming back through a speaker: transcribe it, but don't answer it.
                    over_my_voice = self._speech.speaking_or_just_spoke()
                    self.touch()
                    if not over_my_voice and self._core.settings.talk_over_seconds > 0:
                        self._core.spawn(self._talk_over())
                elif outcome == "continue":
                    span += pcm.size
                    self.touch()  # heard sound is activity: no "are you still there?"
                if outcome in {"start", "continue"} and detector.active:
                    if span / rate >= self.max_utterance:
                        # Endpoint a never-ending sound; what follows is a new segment.
                        utterance = detector.utterance
                        detector.reset()
                        self._core.note(f"finalised a segment at {self.max_utterance:.0f} s")
                        if interim is not None:
                            await interim  # its text comes before the final one
                        await self._heard(
                            identity, segment, utterance, rate, over_my_voice, track_sid
                        )
                    # Analyse only when an interim is due: the FFTs are not free.
                    elif span / rate - last_interim >= INTERIM_EVERY and (
                        interim is None or interim.done()
                    ):
                        if interim is not None:
                            interim.result()  # its error ends this loop, as it did inline
                        last_interim = span / rate
                        interim = asyncio.ensure_future(
                            self._publish_interim(
                                identity, segment, detector.utterance, rate, track_sid
                            )
                        )
                elif outcome == "end":
                    utterance = detector.utterance
                    if interim is not None:
                        await interim
                    await self._heard(identity, segment, utterance, rate, over_my_voice, track_sid)
        finally:
            if interim is not None:
                interim.cancel()  # the track ended (or failed): its interim is moot
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await interim
            await stream.aclose()

    async def _publish_interim(
        self, identity: str, segment: str, utterance: Pcm, rate: int, track_sid: str
    ) -> None:
        text = await self._interim(utterance, rate)
        await self._speech.publish_user_transcript(
            identity, segment, text, final=False, track_sid=track_sid
        )

    async def _talk_over(self) -> None:
        """The ``talk_over_seconds`` defect: speak up while the user is still talking."""
        await asyncio.sleep(self._core.settings.talk_over_seconds)
        await self._speech.say(TALK_OVER_LINE)

    async def _interim(self, utterance: Pcm, rate: int) -> str:
        ears = self.ears
        if ears is None:
            return describe(analyse(utterance, rate), final=False)
        return transcript(await ears.understand(utterance, rate, final=False), final=False)

    async def _heard(
        self,
        identity: str,
        segment: str,
        utterance: Pcm,
        rate: int,
        over_my_voice: bool,
        track_sid: str,
    ) -> None:
        heard = analyse(utterance, rate)
        understood = None
        ears = self.ears
        if ears is not None and not over_my_voice:
            understood = await ears.understand(utterance, rate)
            self._core.note(f"speech-to-text: {understood.describe()}")
        text = (
            describe(heard, final=True)
            if understood is None
            else transcript(understood, final=True)
        )
        await self._speech.publish_user_transcript(
            identity, segment, text, final=True, track_sid=track_sid
        )
        self.touch()
        if over_my_voice:
            self._core.note("heard sound over my own voice; not answering it")
        else:
            self._inbox.put_nowait(HeardSpeech(heard, understood))


TALK_OVER_LINE: Final = "Sorry, yes, I know, I know."
"""What the agent says over the user with ``talk_over_seconds``."""

__all__ = [
    "MAX_UTTERANCE",
    "TALK_OVER_LINE",
    "HeardSpeech",
    "IdleClock",
    "Listening",
    "MonotonicClock",
    "Turn",
]
