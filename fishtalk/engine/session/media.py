"""The session's media: agent playback, the microphone publish, and the heard-latency marks
taken on the audio side (the audio backend opened, its taps wired, interrupts flushed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from fishtalk.core import conversation as conv
from fishtalk.core.protocol import TOPIC_CLIENT_EVENT
from fishtalk.engine import observe
from fishtalk.engine.audio.base import (
    CHANNELS,
    SAMPLE_RATE,
    AudioBackend,
    LatencyTaps,
    NullAudio,
)
from fishtalk.engine.session.plumbing import Core

if TYPE_CHECKING:
    from livekit import rtc

    from fishtalk.engine.replyaudio import ReplyAudio, ReplyReporter

_log = logging.getLogger("fishtalk.engine.session")

FRAME_MS: Final = 10
INTERRUPT_HOLD: Final = 0.4
"""Seconds after an interrupt during which agent audio still in flight is dropped."""
TAIL_AFTER_TEXT: Final = 0.5
"""A reply that begins while the earlier one still plays: once the reply's first words have
arrived, how long agent audio may stay audible without a pause before it counts as the
reply's own (longer than the jitter buffer holds the earlier reply's last frames)."""
WIRE_QUIET: Final = 0.5
"""After an interrupt, how long no audible agent frame must arrive before the agent's audio
counts as stopped on the wire (longer than a pause between words; the mark itself is the
last audible frame's arrival, so this delays only the decision)."""
WIRE_WATCH_LIMIT: Final = 10.0
"""After an interrupt, how long the wire is watched at most (an agent that never stops
gets no ``interrupt_wire_stopped`` mark)."""

NoticeFn: TypeAlias = Callable[[str], None]
AudioFactory: TypeAlias = Callable[[NoticeFn], AudioBackend]
"""Builds the audio backend when the session starts; gets the session's notice callback
(for "text-only: no devices" and the like)."""


class Media(Core):
    """Agent playback, the microphone and the audio-side latency marks of a session."""

    def _init_media(
        self, audio: AudioBackend | AudioFactory | None, reply_audio: bool | Literal["measure"]
    ) -> None:
        self._audio_factory: AudioFactory | None = None
        self._reply_audio: ReplyAudio | None = None
        """Each reply's received audio, when asked for (see :mod:`fishtalk.engine.replyaudio`)."""
        self._reply_reporter: ReplyReporter | None = None
        self._reply_audio_mode = reply_audio
        if isinstance(audio, AudioBackend):
            self._audio = audio
        elif audio is not None:
            self._audio_factory = audio
        self._hold_audio_until = 0.0
        self._audio_streams: dict[str, tuple[rtc.AudioStream, asyncio.Task[None]]] = {}
        self._mic_source: rtc.AudioSource | None = None
        # Heard latency (issue 14): the IO-side marks (see _mark and docs of LatencyMark).
        self._taps: LatencyTaps | None = None
        """The backend's timing taps, when it has them and an output device."""
        self._armed = False
        """A user turn ended: the next audible agent frame is the reply's first."""
        self._armed_over_speech = False
        """Armed while the agent was speaking: its audio counts only once it has stopped
        speaking (what still plays then is the earlier reply, not the answer)."""
        self._tail_heard_at = 0.0
        """Armed over speech: when the earlier reply was last heard arriving (or the agent
        was last seen speaking)."""
        self._wire_pressed_at: float | None = None
        """While watching the wire after an interrupt: the key press."""
        self._wire_last_audible: float | None = None
        self._wire_timer: asyncio.TimerHandle | None = None

    def _start_reply_audio(self) -> None:
        """Start capturing each reply's audio, if asked: once there is a call to join, as
        livekit is (numpy comes with it), so a front end draws its first frame first."""
        mode = self._reply_audio_mode
        if not mode or self._reply_audio is not None:
            return
        from fishtalk.engine.replyaudio import ReplyAudio, ReplyReporter

        self._reply_audio = ReplyAudio(keep_audio=mode is True)
        if mode is True:
            # Loaded before the connect (see warm_up). "measure" (the CLI) keeps its
            # start quick: loudness only where pyloudnorm is loaded already.
            from fishtalk.engine.replyaudio.measure import warm_up

            warm_up()
        self._reply_reporter = ReplyReporter(self._reply_audio)
        self._listeners.append(self._reply_audio.state)

    def _flush_for_interrupt(self, pressed: float) -> None:
        """Stop local playback at once for an interrupt pressed at ``pressed``."""
        if self._audio is None or self._state.ended:
            return
        if self._reply_audio is not None:
            self._reply_audio.interrupted(pressed)
        taps = self._taps
        if taps is not None:
            taps.flush_playback_marked(self._on_flushed)
            self._watch_wire(pressed)
        else:
            self._audio.flush_playback()
        # Speech already on the wire would otherwise play until the agent hears us.
        self._hold_audio_until = self._clock() + INTERRUPT_HOLD

    async def _open_audio(self) -> AudioBackend:
        if self._audio is None:
            self._audio = self._default_audio()
        audio = self._audio
        audio.set_notice_callback(self._audio_notice)
        try:
            await audio.start()
        except Exception as exc:  # the contract says it never raises; degrade if it does
            _log.warning("audio backend failed to start: %s", exc)
            self._audio_notice(f"Audio unavailable ({exc}); continuing text-only.")
            self._audio = audio = NullAudio(f"text-only: {exc}")
        return audio

    def _default_audio(self) -> AudioBackend:
        if self._audio_factory is None:
            return NullAudio("text-only")
        return self._audio_factory(self._audio_notice)

    def _audio_notice(self, text: str) -> None:
        self._call_soon(lambda: self._feed(conv.AddNotice(text=text, at=self._clock())))

    def _on_track_subscribed(
        self,
        track: rtc.Track,
        publication: rtc.RemoteTrackPublication,
        participant: rtc.RemoteParticipant,
    ) -> None:
        from livekit import rtc

        if track.kind != rtc.TrackKind.KIND_AUDIO or self._state.ended:
            return
        audio = self._audio
        if audio is None:
            return
        old = self._audio_streams.pop(publication.sid, None)
        if old is not None:
            old[1].cancel()
        stream = rtc.AudioStream(
            track, sample_rate=SAMPLE_RATE, num_channels=CHANNELS, frame_size_ms=FRAME_MS
        )
        task = self._spawn(self._play(stream, audio), f"play {participant.identity}")
        self._audio_streams[publication.sid] = (stream, task)

    def _on_track_unsubscribed(
        self,
        track: rtc.Track | None,
        publication: rtc.RemoteTrackPublication,
        participant: rtc.RemoteParticipant,
    ) -> None:
        entry = self._audio_streams.pop(publication.sid, None)
        if entry is not None:
            entry[1].cancel()

    async def _play(self, stream: rtc.AudioStream, audio: AudioBackend) -> None:
        from fishtalk.engine.audio.vad import is_audible

        try:
            async for event in stream:
                frame = event.frame
                # Latency marks cost one comparison per frame; the level of a frame is
                # looked at only while a reply's first frame or the wire's end is awaited.
                if self._wire_pressed_at is not None and is_audible(frame.data):
                    self._wire_last_audible = self._clock()
                held = bool(self._hold_audio_until) and self._clock() < self._hold_audio_until
                if self._reply_audio is not None:
                    self._capture_reply_audio(frame, played=not held)
                if held:
                    continue
                taps = self._taps
                if self._armed and taps is not None and self._first_of_reply(frame.data):
                    self._armed = False
                    self._mark("audio_received", self._clock())
                    taps.play_marked(frame, self._on_audio_handed)
                else:
                    audio.play(frame)
                if self._observers:
                    self._observe_frame("agent", frame)
        finally:
            await stream.aclose()

    async def _publish_microphone(self, room: rtc.Room, audio: AudioBackend) -> None:
        from livekit import rtc

        source = rtc.AudioSource(SAMPLE_RATE, CHANNELS, queue_size_ms=100)
        track = rtc.LocalAudioTrack.create_audio_track("microphone", source)
        options = rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
        try:
            await room.local_participant.publish_track(track, options)
        except Exception as exc:
            _log.warning("could not publish the microphone: %s", exc)
            self._feed(
                conv.LocalError(
                    code="mic_permission_denied",
                    at=self._clock(),
                    detail=f"The microphone track could not be published: {exc}",
                )
            )
            await source.aclose()
            return
        self._mic_source = source
        self._mic_track = track
        if self._state.muted:
            track.mute()
        self._spawn(self._pump_microphone(source, audio), "microphone")

    async def _pump_microphone(self, source: rtc.AudioSource, audio: AudioBackend) -> None:
        async for frame in audio.mic_frames():
            await source.capture_frame(frame)
            if self._reply_audio is not None:
                self._reply_audio.mic_frame(self._clock(), frame.data)
            if self._observers:
                self._observe_frame("mic", frame)

    def _capture_reply_audio(self, frame: rtc.AudioFrame, *, played: bool) -> None:
        """Keep an agent frame for its reply; report the replies that are over."""
        capture, reporter = self._reply_audio, self._reply_reporter
        if capture is None or reporter is None:
            return
        now = self._clock()
        capture.agent_frame(now, frame.data, frame.sample_rate, frame.num_channels, played=played)
        for report in reporter.tick(self._state, now):
            self._feed(conv.ReplyAudioMeasured(report, now))

    def _report_reply_audio(self) -> None:
        """Before the session ends: report every reply not reported yet, as it stands."""
        if self._reply_reporter is None or self._state.ended:
            return
        now = self._clock()
        for report in self._reply_reporter.due(self._state, now, final=True):
            self._feed(conv.ReplyAudioMeasured(report, now))

    def _observe_frame(self, channel: observe.AudioChannel, frame: rtc.AudioFrame) -> None:
        self._observe(
            observe.AudioFrame(
                channel,
                bytes(frame.data.cast("B")),
                frame.sample_rate,
                frame.num_channels,
                self._clock(),
            )
        )

    # --- heard latency: the IO-side marks ----------------------------------------------
    #
    # typed_sent        a user.message publish completed (the outbox, see _published);
    # speech_ended      the backend's capture-side detector: capture time of the last
    #                   voiced mic frame (fishtalk.engine.audio.vad);
    # audio_received    the first audible agent frame after a user turn ended (armed by
    #                   typed_sent with audio wanted, or by speech_ended); armed while the
    #                   agent speaks, only once its state has left "speaking" and no
    #                   audible frame came for WIRE_QUIET (the earlier reply's tail), or,
    #                   once the reply's first words arrived, after a quiet frame (or
    #                   TAIL_AFTER_TEXT of sound without one: the agent went straight on);
    # audio_heard       that frame's first sample handed to the output device (the
    #                   playback callback's time), value = the device's output latency;
    # rtt               the candidate pair's current round trip from the SDK's RTC stats;
    # interrupt_flushed the first playback callback after the flush: its time plus the
    #                   output latency, when the last agent sample left the speaker;
    # interrupt_wire_stopped  the arrival of the last audible agent frame after the key
    #                   press (the press itself if none came), decided once WIRE_QUIET
    #                   seconds passed without one.
    # Only a backend with LatencyTaps and an output device yields the audio marks.

    def _tap_audio(self, audio: AudioBackend) -> None:
        if not isinstance(audio, LatencyTaps):
            return
        if audio.has_output:
            self._taps = audio
        if audio.has_input:
            audio.set_speech_ended_callback(self._on_speech_ended)

    def _published(self, event: conv.ClientEventOut, data: bytes, started: float) -> None:
        """The outbox completed publishing ``event`` (``data``), started at ``started``."""
        if event.type == "user.message":
            self._mark("typed_sent", self._clock())
            # A reply asked to be text-only has no first audio frame to wait for.
            if event.audio is not False:
                self._arm(started)
            else:
                self._armed = False
        if self._observers:
            self._observe(observe.PacketOut(TOPIC_CLIENT_EVENT, data, self._clock()))

    def _arm(self, turn_ended_at: float) -> None:
        self._armed = not self._state.ended
        # Speaking already when the user's turn ended: that audio is not the answer.
        self._armed_over_speech = self._agent_speaking and self._speaking_since <= turn_ended_at
        self._tail_heard_at = self._clock()

    def _first_of_reply(self, data: memoryview) -> bool:
        """While armed: whether this agent frame is the first audible one of the reply."""
        from fishtalk.engine.audio.vad import is_audible

        audible = is_audible(data)
        open_turn = self._state.latency.open
        line = self._state.speaking_segment if open_turn is not None else None
        if (
            line is not None
            and open_turn is not None
            and open_turn.kind != "unprompted"
            and line.answers_turn is None
        ):
            # The agent is saying a line that answers no turn (its greeting, over a turn
            # typed before it started): that voice is not the reply (the one rule).
            self._armed_over_speech = True
            self._tail_heard_at = self._clock()
            return False
        if self._armed_over_speech:
            now = self._clock()
            open_turn = self._state.latency.open
            text_at = open_turn.first_text_at if open_turn is not None else None
            if text_at is not None:
                # The reply's first words arrived (the agent went straight on from the
                # earlier reply, state and all): what still plays is the earlier reply's
                # last frames, which the jitter buffer holds back longer than the text.
                # The reply's audio is the first audible frame after a pause, or what is
                # still audible TAIL_AFTER_TEXT after its words came.
                if not audible:
                    self._armed_over_speech = False
                    return False
                if now - text_at < TAIL_AFTER_TEXT:
                    return False
                self._armed_over_speech = False
                return True
            # The earlier reply plays while the agent speaks, and its tail (pauses between
            # words included) may still arrive after its state changed: it is over once no
            # audible frame came for WIRE_QUIET, the rule that also decides when the
            # agent's audio stopped after an interrupt.
            if self._agent_speaking or now - self._tail_heard_at < WIRE_QUIET:
                if self._agent_speaking or audible:
                    self._tail_heard_at = now
                return False
            self._armed_over_speech = False
        return audible

    def _on_speech_ended(self, captured_at: float) -> None:
        self._mark("speech_ended", captured_at)
        self._arm(captured_at)

    def _on_audio_handed(self, handed_at: float, output_latency: float) -> None:
        self._mark("audio_heard", handed_at, output_latency)

    def _on_flushed(self, left_at: float) -> None:
        self._mark("interrupt_flushed", left_at)

    def _watch_wire(self, pressed: float) -> None:
        loop = self._loop
        if loop is None or not self._audio_streams:
            return
        self._wire_pressed_at = pressed
        self._wire_last_audible = None
        if self._wire_timer is not None:
            self._wire_timer.cancel()
        self._wire_timer = loop.call_later(WIRE_QUIET, self._check_wire)

    def _check_wire(self) -> None:
        self._wire_timer = None
        pressed, loop = self._wire_pressed_at, self._loop
        if pressed is None or loop is None:
            return
        now = self._clock()
        last = self._wire_last_audible
        quiet_since = pressed if last is None or last < pressed else last
        if now - quiet_since >= WIRE_QUIET:
            self._wire_pressed_at = None
            self._mark("interrupt_wire_stopped", quiet_since)
        elif now - pressed > WIRE_WATCH_LIMIT:
            self._wire_pressed_at = None
            _log.info("the agent's audio did not stop within %g s of an interrupt", now - pressed)
        else:
            self._wire_timer = loop.call_later(quiet_since + WIRE_QUIET - now, self._check_wire)

    def _stop_media(self) -> None:
        """Stop watching the wire and forget the playback streams (their tasks are the
        session's, cancelled with the rest)."""
        if self._wire_timer is not None:
            self._wire_timer.cancel()
            self._wire_timer = None
        self._wire_pressed_at = None
        self._audio_streams.clear()

    async def _close_media(self) -> None:
        """Close the microphone source and the audio backend."""
        if self._mic_source is not None:
            source, self._mic_source = self._mic_source, None
            with contextlib.suppress(Exception):
                await source.aclose()
        if self._audio is not None:
            try:
                await self._audio.aclose()
            except Exception as exc:
                _log.info("audio backend did not close cleanly: %s", exc)


__all__ = ["INTERRUPT_HOLD", "TAIL_AFTER_TEXT", "WIRE_QUIET", "AudioFactory", "Media", "NoticeFn"]
