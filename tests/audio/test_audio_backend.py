"""The sounddevice backend on the virtual device chain: real PortAudio, real PulseAudio."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from audio_signals import RATE, dominant_frequency, loud_samples, tone, wait_for
from support.virtual_audio import MIC, SPEAKER, VirtualAudio

pytestmark = [pytest.mark.audio, pytest.mark.timeout(60)]

Backend = Any  # fishtalk.engine.audio.backend.SoundDeviceAudio, imported after the server is up


class MicTap:
    """Collects what a backend's mic_frames() yields, in a task of its own."""

    def __init__(self, backend: Backend) -> None:
        self.frames: list[npt.NDArray[np.int16]] = []
        self._task = asyncio.create_task(self._run(backend))

    async def _run(self, backend: Backend) -> None:
        async for frame in backend.mic_frames():
            assert frame.sample_rate == RATE
            assert frame.num_channels == 1
            assert frame.samples_per_channel == 480
            self.frames.append(np.frombuffer(frame.data, dtype=np.int16).copy())

    def samples(self) -> npt.NDArray[np.int16]:
        return np.concatenate(self.frames) if self.frames else np.zeros(0, np.int16)

    def loud_seconds(self) -> float:
        return loud_samples(self.samples()).size / RATE

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


Opener = Callable[..., Awaitable[Backend]]


@pytest.fixture
async def open_audio(vaudio: VirtualAudio) -> AsyncIterator[Opener]:
    """Opens started backends on the virtual mic and speaker; closes them afterwards."""
    opened: list[Backend] = []

    async def _open(*, raw: bool = False, **kwargs: Any) -> Backend:
        from fishtalk.cli.settings import AudioSettings
        from fishtalk.engine.audio.backend import SoundDeviceAudio, open_backend
        from fishtalk.engine.audio.devices import resolve_device

        notices: list[str] = []
        if raw:
            kwargs.setdefault("input_device", resolve_device(MIC, "input"))
            kwargs.setdefault("output_device", resolve_device(SPEAKER, "output"))
            backend: Backend = SoundDeviceAudio(notice=notices.append, **kwargs)
        else:
            settings = AudioSettings(input_device=MIC, output_device=SPEAKER, **kwargs)
            backend = open_backend(settings, notice=notices.append)
        assert isinstance(backend, SoundDeviceAudio), backend.description
        backend.notices = notices
        opened.append(backend)
        await backend.start()
        return backend

    yield _open
    for backend in opened:
        await backend.aclose()


async def record(vaudio: VirtualAudio) -> Any:
    proc = vaudio.record_speaker()
    await asyncio.sleep(0.1)  # let parec attach before anything is played
    return proc


async def stop_recording(rec: Any) -> npt.NDArray[np.int16]:
    return np.frombuffer(await asyncio.to_thread(rec.stop), dtype=np.int16)


def play_tone(backend: Backend, samples: npt.NDArray[np.int16]) -> None:
    from livekit import rtc

    for start in range(0, samples.size - 479, 480):
        backend.play(rtc.AudioFrame(samples[start : start + 480].tobytes(), RATE, 1, 480))


async def test_mic_tone_comes_out_of_mic_frames(vaudio: VirtualAudio, open_audio: Opener) -> None:
    backend = await open_audio()
    assert backend.has_input
    assert backend.description == f"mic: {MIC}, speaker: {SPEAKER}"
    tap = MicTap(backend)
    feeder = vaudio.feed_mic(tone(440, 2.0).tobytes())
    try:
        await wait_for(lambda: tap.loud_seconds() >= 1.0, 10, "1 s of tone from the mic")
    finally:
        await asyncio.to_thread(feeder.wait, 10)
        await tap.stop()
    heard = loud_samples(tap.samples())
    assert abs(dominant_frequency(heard) - 440) < 3
    stats = backend.stats()
    assert stats.mic_dropped_blocks == 0
    assert stats.input_format is not None
    assert stats.input_format.samplerate == RATE


async def test_played_frames_come_out_of_the_speaker(
    vaudio: VirtualAudio, open_audio: Opener
) -> None:
    backend = await open_audio()
    rec = await record(vaudio)
    try:
        play_tone(backend, tone(880, 1.0))
        await wait_for(lambda: backend.stats().playback_frames >= 100, 10, "all frames played")
        await wait_for(lambda: backend.levels().agent_rms == 0.0, 5, "playback to end")
        await asyncio.sleep(0.2)  # the device's own buffer drains into the monitor
    finally:
        out = await stop_recording(rec)
    heard = loud_samples(out)
    assert heard.size >= 0.9 * RATE
    assert abs(dominant_frequency(heard) - 880) < 3
    rms = float(np.sqrt(np.mean(heard.astype(np.float64) ** 2))) / 32768
    assert rms == pytest.approx(0.3 / np.sqrt(2), rel=0.1)
    assert backend.stats().playback_dropped_frames == 0


async def test_flush_empties_playback_within_one_block(
    vaudio: VirtualAudio, open_audio: Opener
) -> None:
    backend = await open_audio()
    rec = await record(vaudio)
    try:
        play_tone(backend, tone(660, 3.0))
        assert backend.queued_playback_seconds > 2.5
        await wait_for(lambda: backend.stats().playback_frames >= 30, 10, "playback to start")
        backend.flush_playback()
        started_at_flush = backend.stats().playback_frames
        assert backend.queued_playback_seconds == 0.0
        await wait_for(lambda: backend.levels().agent_rms == 0.0, 5, "silence after flush")
        await asyncio.sleep(0.3)
        assert backend.stats().playback_frames == started_at_flush
    finally:
        out = await stop_recording(rec)
    tone_samples = loud_samples(out, threshold=0.01).size
    # Only frames already handed to the device callback before the flush are heard; the
    # 2.5 s still queued are gone. (+1: the recording's 10 ms blocks are not aligned with
    # the device's, so the heard tone straddles one more of them.)
    assert 0 < tone_samples <= (started_at_flush + 1) * 480
    print(f"flush: {started_at_flush} frames started before flush, {tone_samples} samples heard")


async def test_mute_stops_mic_frames(vaudio: VirtualAudio, open_audio: Opener) -> None:
    backend = await open_audio()
    tap = MicTap(backend)
    backend.set_muted(True)
    feeder = vaudio.feed_mic(tone(440, 1.5).tobytes())
    try:
        start = backend.stats().mic_blocks
        await wait_for(lambda: backend.stats().mic_blocks > start + 50, 10, "mic blocks")
        await asyncio.sleep(0.05)
        assert tap.frames == []
        assert backend.levels().mic_rms == 0.0
        backend.set_muted(False)
        await wait_for(lambda: tap.loud_seconds() >= 0.3, 10, "tone after unmute")
    finally:
        await asyncio.to_thread(feeder.wait, 10)
        await tap.stop()


async def test_levels_follow_the_signals(vaudio: VirtualAudio, open_audio: Opener) -> None:
    backend = await open_audio()
    steady = 0.5 / np.sqrt(2)  # RMS of a full-window sine of amplitude 0.5
    assert backend.levels().mic_rms == 0.0
    feeder = vaudio.feed_mic(tone(440, 1.0, amplitude=0.5).tobytes())
    try:
        await wait_for(
            lambda: abs(backend.levels().mic_rms - steady) < 0.05 * steady, 10, "mic level"
        )
        assert 0.45 < backend.levels().mic_peak <= 0.51
        play_tone(backend, tone(880, 1.0, amplitude=0.25))
        await wait_for(
            lambda: abs(backend.levels().agent_rms - steady / 2) < 0.05 * steady, 10, "agent level"
        )
        assert 0.2 < backend.levels().agent_peak <= 0.26
    finally:
        await asyncio.to_thread(feeder.wait, 10)


async def _echo_level(open_audio: Opener, *, aec: bool) -> float:
    """RMS of the mic while the agent talks and the speaker leaks into the mic."""
    from livekit import rtc

    backend = await open_audio(
        echo_cancellation=aec, noise_suppression=False, high_pass_filter=False, auto_gain=False
    )
    tap = MicTap(backend)
    rng = np.random.default_rng(7)
    n = RATE * 4
    envelope = 0.5 * (1 + np.sin(2 * np.pi * 3 * np.arange(n) / RATE))  # syllable-ish
    speech = (rng.standard_normal(n) * 0.1 * envelope * 32767).clip(-32767, 32767)
    samples = speech.astype(np.int16)
    loop = asyncio.get_running_loop()
    start = loop.time()
    for i in range(0, n, 480):  # in real time, as an agent's audio track arrives
        backend.play(rtc.AudioFrame(samples[i : i + 480].tobytes(), RATE, 1, 480))
        await asyncio.sleep(max(0.0, start + (i + 480) / RATE - loop.time()))
    await asyncio.sleep(0.2)
    await tap.stop()
    await backend.aclose()
    heard = tap.samples()[-2 * RATE :].astype(np.float64)  # after the canceller converged
    assert heard.size == 2 * RATE
    return float(np.sqrt(np.mean(heard**2)) / 32768)


async def test_echo_cancellation_removes_the_agent_from_the_mic(
    vaudio: VirtualAudio, open_audio: Opener
) -> None:
    # An acoustic path: whatever the speaker plays reaches the mic 30 ms later.
    module = (
        await asyncio.to_thread(
            vaudio.pactl,
            "load-module",
            "module-loopback",
            f"source={SPEAKER}.monitor",
            "sink=fishtalk_mic_feed",
            "latency_msec=30",
        )
    ).strip()
    try:
        without = await _echo_level(open_audio, aec=False)
        with_aec = await _echo_level(open_audio, aec=True)
    finally:
        await asyncio.to_thread(vaudio.pactl, "unload-module", module)
    print(f"echo: {without:.4f} without AEC, {with_aec:.4f} with AEC")
    assert without > 0.02  # the echo path works
    assert with_aec < without / 5  # at least 14 dB of echo removed


async def test_watchdog_warns_about_digital_silence(open_audio: Opener) -> None:
    backend = await open_audio(raw=True, watchdog_seconds=1.0)
    # Nothing is fed: the virtual mic delivers exact zeros, like a mic without permission.
    await wait_for(lambda: bool(backend.notices), 10, "a watchdog notice")
    assert "only digital silence for 1 s" in backend.notices[0]


async def test_device_without_48k_is_resampled(vaudio: VirtualAudio, open_audio: Opener) -> None:
    backend = await open_audio(raw=True, preferred_rate=44_100)
    stats = backend.stats()
    assert stats.input_format.samplerate == 44_100
    assert stats.output_format.samplerate == 44_100
    assert "(44100 Hz, resampled)" in backend.description
    tap = MicTap(backend)
    feeder = vaudio.feed_mic(tone(440, 1.5).tobytes())
    rec = await record(vaudio)
    try:
        await wait_for(lambda: tap.loud_seconds() >= 1.0, 10, "resampled mic tone")
        play_tone(backend, tone(880, 1.0))
        await wait_for(lambda: backend.levels().agent_rms > 0.1, 10, "resampled playback")
        await wait_for(lambda: backend.levels().agent_rms == 0.0, 5, "playback to end")
        await asyncio.sleep(0.2)
    finally:
        out = await stop_recording(rec)
        await asyncio.to_thread(feeder.wait, 10)
        await tap.stop()
    assert abs(dominant_frequency(loud_samples(tap.samples())) - 440) < 3
    heard = loud_samples(out)
    assert heard.size >= 0.9 * RATE
    assert abs(dominant_frequency(heard) - 880) < 3


def _crash_scenario(kind: str) -> dict[str, Any]:
    script = Path(__file__).with_name("crash_scenario.py")
    done = subprocess.run(
        [sys.executable, str(script), kind], capture_output=True, text=True, timeout=90
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.timeout(100)
def test_sound_server_restart_reopens_the_default() -> None:
    result = _crash_scenario("restart")
    reopened = [n for n in result["notices"] if "switched to the default" in n]
    # The speaker's stream stops; the mic's stops too or stalls, which the watchdog
    # treats as a failure. Either way each device is reopened once.
    assert len(reopened) == 2, result["notices"]
    assert any(n.startswith("microphone failed (") for n in reopened)
    assert any(n.startswith("speaker failed (") for n in reopened)
    assert result["has_input"]
    assert result["description"] == "mic: default, speaker: default"
    assert result["mic_rms"] > 0.05
    assert abs(result["mic_peak_hz"] - 440) < 3


@pytest.mark.timeout(100)
def test_sound_server_gone_degrades_to_text_only() -> None:
    result = _crash_scenario("gone")
    gave_up = sorted(n for n in result["notices"] if "continuing without" in n)
    assert len(gave_up) == 2, result["notices"]
    assert gave_up[0].startswith("microphone failed (")
    assert gave_up[0].endswith("); continuing without a microphone (type instead)")
    assert gave_up[1].startswith("speaker failed (")
    assert gave_up[1].endswith("); continuing without sound (text only)")
    assert result["mic_frames_ended"]
    assert not result["has_input"]
    assert result["description"].startswith("text-only: audio devices failed (")


async def test_duplex_with_all_processing_loses_nothing(
    vaudio: VirtualAudio, open_audio: Opener
) -> None:
    # The APM runs in both device callbacks: a few seconds of mic tone and agent audio
    # at once must pass without a dropped frame, an underrun or an APM error.
    backend = await open_audio()
    tap = MicTap(backend)
    feeder = vaudio.feed_mic(tone(440, 2.5).tobytes())
    try:
        from livekit import rtc

        agent = tone(880, 2.0, amplitude=0.2)
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i in range(0, agent.size, 480):  # in real time, as an agent's track arrives
            backend.play(rtc.AudioFrame(agent[i : i + 480].tobytes(), RATE, 1, 480))
            await asyncio.sleep(max(0.0, start + (i + 480) / RATE - loop.time()))
        await wait_for(lambda: backend.stats().playback_frames >= 200, 10, "all frames played")
        await wait_for(lambda: tap.loud_seconds() >= 1.5, 10, "1.5 s of mic tone")
    finally:
        await asyncio.to_thread(feeder.wait, 10)
        await tap.stop()
    stats = backend.stats()
    assert stats.mic_dropped_frames == 0
    assert stats.playback_dropped_frames == 0
    assert stats.playback_underruns == 0
    assert stats.render_dropped_blocks == 0
    assert stats.apm_errors == 0
    # Frames reach mic_frames() in order and whole: the tone survives the processing
    # (noise suppression and auto gain keep a steady tone; its pitch is unchanged).
    assert abs(dominant_frequency(loud_samples(tap.samples())) - 440) < 3


async def test_mic_frames_ride_on_play_while_agent_audio_plays(open_audio: Opener) -> None:
    # With nothing played, the capture thread wakes a waiting consumer itself. While
    # play() runs on the loop every 10 ms (an agent's track), play() hands the consumer
    # its frames and the capture thread leaves the loop alone (it would wake it once per
    # two frames otherwise).
    from livekit import rtc

    backend = await open_audio(raw=True)
    received: list[int] = []

    async def consume() -> None:
        async for frame in backend.mic_frames():
            received.append(frame.samples_per_channel)

    task = asyncio.create_task(consume())
    try:
        await wait_for(lambda: len(received) >= 20, 10, "20 frames with nothing played")
        assert backend.stats().mic_thread_wakes > 0
        silence = rtc.AudioFrame.create(RATE, 1, 480)
        wakes_before, got_before = backend.stats().mic_thread_wakes, len(received)
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i in range(150):  # 1.5 s in real time
            backend.play(silence)
            await asyncio.sleep(max(0.0, start + (i + 1) / 100 - loop.time()))
        wakes = backend.stats().mic_thread_wakes - wakes_before
        got = len(received) - got_before
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert got >= 100, got
    assert wakes < got / 8, (wakes, got)  # about got / 2 without the ride on play()
    assert set(received) == {480}


async def test_mic_frames_wait_for_frames_and_end_on_close(open_audio: Opener) -> None:
    # A consumer that waits (nothing queued) is woken by the capture thread; closing the
    # backend ends the iteration even while the consumer is waiting.
    backend = await open_audio(raw=True)
    received: list[int] = []
    ended = asyncio.Event()

    async def consume() -> None:
        async for frame in backend.mic_frames():
            received.append(frame.samples_per_channel)
        ended.set()

    task = asyncio.create_task(consume())
    try:
        await wait_for(lambda: len(received) >= 50, 10, "50 frames from a waiting consumer")
        await backend.aclose()
        await asyncio.wait_for(ended.wait(), 5)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert set(received) == {480}
