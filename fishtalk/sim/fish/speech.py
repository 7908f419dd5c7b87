"""What the simulated agent says: its voice track and the transcripts it publishes.

:class:`Speech` feeds locally synthesised audio (:mod:`fishtalk.sim.fish.voice`) to an
``rtc.AudioSource`` in real time and streams the agent's transcript on
``lk.transcription`` the way LiveKit agents do: one text stream per segment, opened with
``lk.segment_id`` and ``lk.transcription_final: "false"`` (plus ``lk.transcribed_track_id``),
one word chunk written as that word's audio starts playing, and closed with a trailer
attribute ``lk.transcription_final: "true"``. An interrupt stops the audio at once and
closes the segment with only the words already spoken. The scenario's timings shape
every spoken line: ``first_audio_delay_seconds`` between the first transcript chunk and
the first audio frame, ``audio_chunk_ms`` (chunk length) and ``audio_realtime_factor``
(wall time per second of audio fed). A line with no audio (``audio = false``, a reply to a
``user.message`` with ``"audio": false``, a text-only greeting) is not paced at all: there
is no playback for its text to keep up with. It also publishes the user's
transcripts (what :mod:`~fishtalk.sim.fish.listening` heard, or a scenario's scripted
ones) under the user's identity.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from typing import Final

import numpy as np
from livekit import rtc

from fishtalk.core import protocol as p
from fishtalk.sim.fish.core import AgentCore
from fishtalk.sim.fish.voice import SAMPLE_RATE, Pcm, Voice, frames, silence, split_words

ECHO_TAIL: Final = 0.5
"""Sound starting this soon after the agent stopped talking is taken for its echo."""
FEED_LEAD: Final = 0.06
"""How far ahead of real time audio frames are handed to the source."""


class Speech:
    """The agent's mouth: one voice track, one transcript segment per utterance."""

    def __init__(self, core: AgentCore, voice: Voice) -> None:
        self._core = core
        self.voice = voice
        self._source: rtc.AudioSource | None = None
        self._track_sid = ""
        self._speaking: asyncio.Task[None] | None = None
        self._spoke_at = -1e9
        self.frames_sent = 0
        """Audio frames handed to the voice track so far (tests read it)."""

    # --- the voice track ----------------------------------------------------------------

    def open(self) -> None:
        """Create the audio source (before joining, so frames have somewhere to go)."""
        self._source = rtc.AudioSource(SAMPLE_RATE, 1, queue_size_ms=200)

    async def publish_track(self) -> None:
        """Publish the voice track as the agent's microphone (once joined)."""
        assert self._source is not None
        track = rtc.LocalAudioTrack.create_audio_track("agent-voice", self._source)
        options = rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
        publication = await self._core.room.local_participant.publish_track(track, options)
        self._track_sid = publication.sid

    @property
    def utterance(self) -> asyncio.Task[None] | None:
        """The utterance being spoken, if any (the agent cancels it when it leaves)."""
        return self._speaking

    async def close(self) -> None:
        """Release the audio source (once the room is gone)."""
        if self._source is not None:
            with contextlib.suppress(Exception):
                await self._source.aclose()

    # --- speaking -----------------------------------------------------------------------

    def interrupt(self) -> None:
        """Stop the current utterance at once (its segment keeps the words spoken); with
        ``ignore_interrupt_seconds``, that much later."""
        late = self._core.settings.ignore_interrupt_seconds
        if late > 0 and self._speaking is not None:
            asyncio.get_running_loop().call_later(late, self._stop, self._speaking)
        else:
            self._stop(self._speaking)

    def _stop(self, speaking: asyncio.Task[None] | None) -> None:
        if speaking is not None and not speaking.done():
            self._core.note("interrupted")
            speaking.cancel()
            if self._source is not None:
                self._source.clear_queue()

    def speaking_or_just_spoke(self) -> bool:
        """Whether sound heard now is likely the agent's own voice coming back."""
        return self._core.state == "speaking" or time.monotonic() - self._spoke_at < ECHO_TAIL

    async def say(self, text: str, *, audio: bool = True, sound: str | None = None) -> str:
        """Speak ``text`` (or write it only); return the words actually delivered.

        ``sound``: what the audio says instead of ``text`` (a voice drifting from its
        transcript, for tests of audio checks), word for word beside the transcript."""
        core = self._core
        delivered: list[str] = []
        task = asyncio.ensure_future(self._speak(text, audio, delivered, sound))
        self._speaking = task
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise
        finally:
            self._speaking = None
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]  # checked not None just above
        if audio:
            self._spoke_at = time.monotonic()
        spoken = "".join(delivered)
        core.note(f"{'said' if audio else 'wrote'}: {spoken.strip()}")
        if not core.ending:
            await core.set_state("listening")
        return spoken

    async def _speak(
        self, text: str, audio: bool, delivered: list[str], sound: str | None = None
    ) -> None:
        segment = "SG_" + secrets.token_hex(6)
        attributes = {p.ATTR_SEGMENT_ID: segment, p.ATTR_TRANSCRIPTION_FINAL: "false"}
        if audio and self._track_sid:
            attributes[p.ATTR_TRANSCRIBED_TRACK_ID] = self._track_sid
        await self._core.set_state("speaking" if audio else "thinking")
        writer = await self._core.room.local_participant.stream_text(
            topic=p.TOPIC_TRANSCRIPTION, attributes=attributes
        )
        try:
            if audio:
                await self._speak_words(text, writer, delivered, sound)
            else:
                # A line with no audio has no playback to pace it to: its words go out
                # back to back, still one chunk each (issue 24).
                for word in split_words(text):
                    await _write(writer, word, delivered)
        finally:
            # Also on interrupt: the segment closes holding only the words delivered.
            await asyncio.shield(writer.aclose(attributes={p.ATTR_TRANSCRIPTION_FINAL: "true"}))

    async def _speak_words(
        self,
        text: str,
        writer: rtc.TextStreamWriter,
        delivered: list[str],
        sound: str | None = None,
    ) -> None:
        assert self._source is not None
        settings = self._core.settings
        loop = asyncio.get_running_loop()
        start = loop.time()
        sent = 0
        words = split_words(text)
        if not words:
            return
        # With ``sound``, the audio says its words beside the transcript's (the longer
        # one decides the length: a missing word is a written word with no sound, or a
        # sound with no word).
        sounds = split_words(sound) if sound is not None else words
        count = max(len(words), len(sounds))
        words += [""] * (count - len(words))
        sounds += [" "] * (count - len(sounds))
        # Render the next word while this one plays (espeak-ng takes tens of ms a word).
        upcoming = asyncio.ensure_future(self.voice.render(sounds[0]))
        try:
            written = 0
            if settings.transcript_uncut:
                # Text ahead of the voice: the whole line is written as its audio starts,
                # so a cut line's segment keeps words the voice never said.
                for word in filter(None, words):
                    await _write(writer, word, delivered)
                written = count
            elif settings.first_audio_delay_seconds > 0:
                # The text runs ahead of the voice: first chunk now, its audio later.
                await _write(writer, words[0], delivered)
                written = 1
                await asyncio.sleep(settings.first_audio_delay_seconds)
                start = loop.time()
            for index, word in enumerate(words):
                pcm = _gained(await upcoming, settings.voice_gain_db)
                if index + 1 < len(words):
                    upcoming = asyncio.ensure_future(self.voice.render(sounds[index + 1]))
                if settings.gap_seconds > 0 and index == len(words) // 2 and index:
                    # A stall mid-line: silence on the track, as a TTS that falls behind.
                    pause = silence(settings.gap_seconds)
                    start, sent = await self._play_word(
                        "", pause, writer, delivered, start, sent, write=False
                    )
                start, sent = await self._play_word(
                    word, pcm, writer, delivered, start, sent, write=index >= written
                )
        finally:
            upcoming.cancel()
            # Retrieve its outcome so an interrupted render never logs "never retrieved".
            upcoming.add_done_callback(lambda t: t.cancelled() or t.exception())
        remaining = start + sent * settings.audio_realtime_factor / SAMPLE_RATE - loop.time()
        if remaining > 0:
            await asyncio.sleep(remaining)

    async def _play_word(
        self,
        word: str,
        pcm: Pcm,
        writer: rtc.TextStreamWriter,
        delivered: list[str],
        start: float,
        sent: int,
        *,
        write: bool = True,
    ) -> tuple[float, int]:
        """Feed one word's frames at the scenario's pace; returns the updated (start, sent)
        clock. ``write``: write the word to the transcript as its first frame is queued."""
        assert self._source is not None
        loop = asyncio.get_running_loop()
        settings = self._core.settings
        chunk = SAMPLE_RATE * settings.audio_chunk_ms // 1000
        pace = settings.audio_realtime_factor
        first = write
        for frame in frames(pcm, chunk):
            due = start + sent * pace / SAMPLE_RATE - FEED_LEAD
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            elif delay < -0.5:
                # We fell behind (a slow machine): restart the clock, don't burst.
                start, sent = loop.time() + FEED_LEAD, 0
            await self._source.capture_frame(rtc.AudioFrame(frame.tobytes(), SAMPLE_RATE, 1, chunk))
            self.frames_sent += 1
            if first and word:
                # The word's first frame is queued: write the word as it starts playing.
                await _write(writer, word, delivered)
                first = False
            sent += chunk
        return start, sent

    # --- the user's transcripts ---------------------------------------------------------

    async def publish_user_transcript(
        self, identity: str, segment: str, text: str, *, final: bool, track_sid: str = ""
    ) -> None:
        """One complete text stream under the user's identity; its text replaces the last."""
        attributes = {
            p.ATTR_SEGMENT_ID: segment,
            p.ATTR_TRANSCRIPTION_FINAL: "true" if final else "false",
        }
        if track_sid:
            attributes[p.ATTR_TRANSCRIBED_TRACK_ID] = track_sid
        writer = await self._core.room.local_participant.stream_text(
            topic=p.TOPIC_TRANSCRIPTION, attributes=attributes, sender_identity=identity
        )
        await writer.write(text)
        await writer.aclose()
        self._core.note(f"user transcript{' final' if final else ''}: {text}")


async def _write(writer: rtc.TextStreamWriter, word: str, delivered: list[str]) -> None:
    """Write one word to the segment and count it delivered. An interrupt landing while the
    write is in flight cannot take it back (its chunk is already on the wire), so the write
    runs to its end and the word counts: the agent's "said" is what the user was sent."""
    delivered.append(word)
    await asyncio.shield(writer.write(word))


def _gained(pcm: Pcm, gain_db: float) -> Pcm:
    """``pcm`` with ``gain_db`` applied, hard-clipped to 16 bits (a defect on purpose)."""
    if gain_db == 0:
        return pcm
    scaled = pcm.astype(np.float64) * 10 ** (gain_db / 20)
    return np.clip(np.round(scaled), -32768, 32767).astype(np.int16)


__all__ = ["ECHO_TAIL", "FEED_LEAD", "Speech"]
