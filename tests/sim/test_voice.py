"""The sim agent's pure voice and hearing helpers."""

from __future__ import annotations

import io
import sys
import wave
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fishtalk.sim.fish.voice import (
    FRAME_SAMPLES,
    SAMPLE_RATE,
    EspeakVoice,
    SpeechDetector,
    ToneVoice,
    analyse,
    decode_wav,
    describe,
    frames,
    pick_voice,
    silence,
    split_words,
    tone,
)


@given(st.text())
def test_split_words_rebuilds_text(text: str) -> None:
    chunks = split_words(text)
    assert "".join(chunks) == text.lstrip()
    assert all(chunk.strip() for chunk in chunks)


def test_split_words_examples() -> None:
    assert split_words("  Hello, big  world.\n") == ["Hello, ", "big  ", "world.\n"]
    assert split_words("") == []


def test_tone_voice_is_deterministic_and_paced() -> None:
    voice = ToneVoice()
    a = voice.word_audio("hello")
    assert np.array_equal(a, voice.word_audio("hello"))
    assert a.dtype == np.int16
    # Longer words take longer; punctuation adds a pause.
    assert voice.word_audio("extraordinarily").size > voice.word_audio("a").size
    assert voice.word_audio("end.").size > voice.word_audio("end").size


def test_pick_voice_tones() -> None:
    assert pick_voice("tones").name == "tones"


def test_analyse_tone() -> None:
    heard = analyse(tone(440.0, 1.2, amplitude=0.2))
    assert abs(heard.duration - 1.2) < 0.001
    assert abs(heard.frequency - 440.0) < 2.0
    # A 0.2-amplitude sine: 20*log10(0.2/sqrt(2)) = -17 dBFS.
    assert abs(heard.dbfs - (-17.0)) < 0.5
    assert describe(heard, final=True) == (
        "(heard 1.2 s of sound at -17 dBFS, mostly around 440 Hz)"
    )
    assert describe(heard, final=False).startswith("(hearing 1.2 s")


def test_analyse_counts_only_sound() -> None:
    # A tone with a gap (as a network glitch makes it) still measures as one clean tone.
    audio = np.concatenate(
        [tone(440.0, 0.6, amplitude=0.2), silence(0.4), tone(440.0, 0.6, amplitude=0.2)]
    )
    heard = analyse(audio)
    assert abs(heard.duration - 1.2) <= 0.02
    assert abs(heard.frequency - 440.0) < 2.0
    assert abs(heard.dbfs - (-17.0)) < 0.5


def test_analyse_silence() -> None:
    heard = analyse(silence(0.5))
    assert heard.duration == 0.0
    assert heard.dbfs == float("-inf")
    assert heard.frequency == 0.0


def test_frames_pad_last() -> None:
    chunks = list(frames(np.ones(FRAME_SAMPLES + 5, dtype=np.int16)))
    assert [c.size for c in chunks] == [FRAME_SAMPLES, FRAME_SAMPLES]
    assert chunks[1][5:].sum() == 0


def test_decode_wav_resamples() -> None:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(22050)
        w.writeframes(np.zeros(22050, dtype="<i2").tobytes())
    assert decode_wav(buf.getvalue()).size == SAMPLE_RATE


def _feed(det: SpeechDetector, audio: np.ndarray) -> list[str]:
    events = []
    for frame in frames(audio):
        ev = det.push(frame)
        if ev is not None:
            events.append(ev)
    return events


def test_speech_detector_segments_an_utterance() -> None:
    det = SpeechDetector()
    audio = np.concatenate([silence(0.3), tone(440.0, 1.0), silence(1.0)])
    events = _feed(det, audio)
    assert events[0] == "start"
    assert events[-1] == "end"
    assert set(events[1:-1]) == {"continue"}
    heard = analyse(det.utterance)
    assert 0.95 <= heard.duration <= 1.05
    assert abs(heard.frequency - 440.0) < 2.0


def test_speech_detector_ignores_clicks_and_silence() -> None:
    det = SpeechDetector()
    audio = np.concatenate([silence(0.5), tone(300.0, 0.04), silence(1.0)])
    assert _feed(det, audio) == []
    assert not det.active


async def test_espeak_voice_with_a_stand_in_program(tmp_path: Path) -> None:
    # A stand-in for espeak-ng (not installed here): reads the word on stdin and writes a
    # 16 kHz WAV with padding silence around 0.25 s of a tone.
    script = tmp_path / "espeak-ng"
    script.write_text(
        "#!" + sys.executable + "\n"
        "import io, sys, wave, math\n"
        "word = sys.stdin.read()\n"
        "assert word == 'hello', word\n"
        "rate = 16000\n"
        "tone = [int(8000 * math.sin(2 * math.pi * 200 * i / rate)) for i in range(4000)]\n"
        "pcm = [0] * 1600 + tone + [0] * 1600\n"
        "buf = io.BytesIO()\n"
        "w = wave.open(buf, 'wb'); w.setnchannels(1); w.setsampwidth(2); w.setframerate(rate)\n"
        "w.writeframes(b''.join(s.to_bytes(2, 'little', signed=True) for s in pcm)); w.close()\n"
        "sys.stdout.buffer.write(buf.getvalue())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    voice = EspeakVoice(str(script))
    audio = await voice.render("hello ")
    # Leading/trailing silence trimmed, then the 50 ms word pause.
    assert abs(audio.size / SAMPLE_RATE - (0.25 + 0.05)) < 0.01
    assert abs(analyse(audio).frequency - 200.0) < 3.0
    # A program that writes garbage falls back to a tone.
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho nope\n", encoding="utf-8")
    broken.chmod(0o755)
    fallback = await EspeakVoice(str(broken)).render("hello")
    assert np.array_equal(fallback, ToneVoice().word_audio("hello"))
