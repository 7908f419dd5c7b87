"""The end-of-speech detector (fishtalk.engine.audio.vad) on synthetic signals: pure, no devices."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from fishtalk.engine.audio.vad import HANGOVER_SECONDS, EnergyVad, is_audible

RATE = 48_000
FRAME = 480
FRAME_S = FRAME / RATE


def _tone(seconds: float, dbfs: float, freq: float = 300.0) -> npt.NDArray[np.int16]:
    t = np.arange(round(seconds * RATE)) / RATE
    amplitude = 32768 * 10 ** (dbfs / 20) * np.sqrt(2)  # a sine's RMS is peak / sqrt(2)
    return (np.sin(2 * np.pi * freq * t) * amplitude).astype(np.int16)


def _noise(seconds: float, dbfs: float, seed: int = 1) -> npt.NDArray[np.int16]:
    rng = np.random.default_rng(seed)
    rms = 32768 * 10 ** (dbfs / 20)
    return (rng.standard_normal(round(seconds * RATE)) * rms).astype(np.int16)


def _run(vad: EnergyVad, signal: npt.NDArray[np.int16], start: float = 100.0) -> list[float]:
    """Push ``signal`` frame by frame (frame i ends at start + (i + 1) * 10 ms)."""
    ends = []
    for i in range(signal.size // FRAME):
        ended = vad.push(signal[i * FRAME : (i + 1) * FRAME], start + (i + 1) * FRAME_S)
        if ended is not None:
            ends.append(ended)
    return ends


def test_a_tone_burst_ends_at_its_last_voiced_frame() -> None:
    signal = np.concatenate([_noise(0.5, -70), _tone(0.8, -20), _noise(1.0, -70)])
    ends = _run(EnergyVad(), signal)
    # The burst's last frame ends 1.3 s in; reported once, not at the hangover's end.
    assert ends == [pytest.approx(100.0 + 1.3, abs=1e-9)]


def test_the_end_is_reported_only_after_the_hangover() -> None:
    vad = EnergyVad()
    _run(vad, _tone(0.5, -20))
    assert vad.in_speech
    quiet = _noise(HANGOVER_SECONDS - 0.05, -70)
    assert _run(vad, quiet, start=100.5) == []  # still inside the hangover
    assert vad.in_speech
    assert _run(vad, _noise(0.1, -70), start=100.5 + quiet.size / RATE) == [
        pytest.approx(100.5, abs=1e-9)
    ]


def test_gaps_shorter_than_the_hangover_do_not_split_an_utterance() -> None:
    words = []
    for gap in (0.1, 0.2, 0.25):
        words += [_tone(0.3, -25), np.zeros(int(gap * RATE), dtype=np.int16)]
    signal = np.concatenate([*words, _tone(0.3, -25), _noise(1.0, -75)])
    ends = _run(EnergyVad(), signal)
    speech_end = 0.3 * 4 + 0.1 + 0.2 + 0.25
    assert ends == [pytest.approx(100.0 + speech_end, abs=1e-9)]


def test_a_gap_longer_than_the_hangover_ends_two_utterances() -> None:
    signal = np.concatenate([_tone(0.3, -25), np.zeros(RATE // 2, np.int16), _tone(0.3, -25)])
    signal = np.concatenate([signal, np.zeros(RATE // 2, np.int16)])
    assert _run(EnergyVad(), signal) == [
        pytest.approx(100.3, abs=1e-9),
        pytest.approx(101.1, abs=1e-9),
    ]


def test_the_noise_floor_is_not_speech() -> None:
    vad = EnergyVad()
    assert _run(vad, _noise(3.0, -55)) == []
    assert not vad.in_speech


def test_a_click_shorter_than_the_onset_is_not_speech() -> None:
    vad = EnergyVad()
    click = _tone(0.02, -10)  # two loud frames: below the three-frame onset
    signal = np.concatenate([_noise(0.2, -70), click, _noise(1.0, -70)])
    assert _run(vad, signal) == []
    assert not vad.in_speech


def test_a_quiet_voice_just_above_the_threshold_counts() -> None:
    signal = np.concatenate([_tone(0.5, -42), np.zeros(RATE, np.int16)])
    assert _run(EnergyVad(), signal) == [pytest.approx(100.5, abs=1e-9)]


def test_a_processed_tail_without_raw_sound_is_not_voiced() -> None:
    # The APM's filters ring on after the sound at the mic stops: the processed frames
    # stay loud for a few frames while the raw ones are already silent.
    raw = np.concatenate([_tone(0.5, -20), np.zeros(RATE, np.int16)])
    processed = np.concatenate([_tone(0.54, -20), np.zeros(RATE - RATE * 4 // 100, np.int16)])
    vad = EnergyVad()
    ends = []
    for i in range(raw.size // FRAME):
        cut = slice(i * FRAME, (i + 1) * FRAME)
        ended = vad.push(processed[cut], 100.0 + (i + 1) * FRAME_S, raw[cut])
        if ended is not None:
            ends.append(ended)
    assert ends == [pytest.approx(100.5, abs=1e-9)]
    # Without the raw frames the tail counts: the end is 40 ms later.
    assert _run(EnergyVad(), processed) == [pytest.approx(100.54, abs=1e-9)]


def test_an_auto_gained_quiet_voice_still_counts() -> None:
    # Raw at -55 dBFS (a quiet mic), processed at -30 after the auto gain: voiced.
    raw = np.concatenate([_tone(0.5, -55), np.zeros(RATE, np.int16)])
    processed = np.concatenate([_tone(0.5, -30), np.zeros(RATE, np.int16)])
    vad = EnergyVad()
    ends = [
        e
        for i in range(raw.size // FRAME)
        if (
            e := vad.push(
                processed[i * FRAME : (i + 1) * FRAME],
                100.0 + (i + 1) * FRAME_S,
                raw[i * FRAME : (i + 1) * FRAME],
            )
        )
        is not None
    ]
    assert ends == [pytest.approx(100.5, abs=1e-9)]


def test_reset_forgets_an_utterance() -> None:
    vad = EnergyVad()
    _run(vad, _tone(0.5, -20))
    vad.reset()
    assert _run(vad, np.zeros(RATE, np.int16), start=100.5) == []


def test_is_audible_separates_agent_silence_from_sound() -> None:
    assert not is_audible(np.zeros(FRAME, np.int16))
    assert not is_audible(_noise(FRAME_S, -60))
    assert is_audible(_tone(FRAME_S, -40))
    # AudioFrame.data is a memoryview of int16 samples: accepted as is.
    assert is_audible(memoryview(_tone(FRAME_S, -30).tobytes()).cast("h"))
    assert not is_audible(memoryview(np.zeros(FRAME, np.int16).tobytes()).cast("h"))
