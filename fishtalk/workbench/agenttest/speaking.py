"""What a ``speak`` turn plays: a WAV file, or text synthesised offline and cached.

How a ``speak`` value is read (one rule, no guessing from the file system): a value that
ends in ``.wav`` (any case, surrounding spaces ignored) is a WAV file relative to the test
file, and a missing one is an error; anything else is text, spoken by espeak-ng. A
sentence that must end in ".wav" is written with its full stop (``"Play intro.wav."``).

Synthesised speech is cached by text and voice in fishtalk's cache directory
(:func:`~fishtalk.engine.paths.speech_cache_dir`), one WAV per utterance at the session's
rate, so a suite synthesises each sentence once. Either way the clip goes to the
:class:`~fishtalk.workbench.agenttest.wavmic.WavMicrophone`, so heard latency and the end
of the user's turn are measured the same way.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import wave
from pathlib import Path
from typing import Final

from fishtalk.engine.audio.base import SAMPLE_RATE
from fishtalk.engine.paths import speech_cache_dir
from fishtalk.workbench.agenttest.wavmic import WavError, load_wav

WAV_SUFFIX: Final = ".wav"


def is_wav_path(value: str) -> bool:
    """Whether a ``speak`` value names a WAV file (it ends in ``.wav``) rather than text."""
    return value.strip().lower().endswith(WAV_SUFFIX)


def _cache_file(text: str, voice_key: str) -> Path:
    digest = hashlib.sha256(f"{voice_key}\n{text}".encode()).hexdigest()[:40]
    return speech_cache_dir() / f"{digest}.wav"


def synthesize(text: str, voice: str = "") -> bytes:
    """``text`` spoken by espeak-ng's ``voice`` (its default when empty), as the session's
    16-bit mono PCM, from the cache when it was spoken before.

    Raises :class:`~fishtalk.core.errors.SpeechUnavailableError` without espeak-ng and
    :class:`~fishtalk.speech.tts.SynthesisError` for a voice espeak-ng does not have.
    """
    from fishtalk.speech.tts import Espeak

    engine = Espeak.find(voice=voice)
    path = _cache_file(text.strip(), engine.key)
    with contextlib.suppress(WavError):
        if path.is_file():
            return load_wav(path)
    pcm = engine.synthesize(text, SAMPLE_RATE).astype("<i2").tobytes()
    _store(path, pcm)
    return pcm


def _store(path: Path, pcm: bytes) -> None:
    """Write the clip atomically (concurrent runs may synthesise the same text); a cache
    that cannot be written is only a slower next run."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as raw, wave.open(raw, "wb") as wav:
                wav.setnchannels(1)
                wav.setsampwidth(2)
                wav.setframerate(SAMPLE_RATE)
                wav.writeframes(pcm)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def clip(speak: str, base: Path, voice: str = "") -> bytes:
    """The PCM a ``speak`` value plays: the WAV file under ``base``, or the text spoken.

    Raises :class:`WavError` for a bad WAV, and what :func:`synthesize` raises."""
    if is_wav_path(speak):
        return load_wav(base / speak.strip())
    if voice.endswith(".onnx"):
        from fishtalk.speech.models import identify
        from fishtalk.speech.tts import SynthesisError

        try:
            identify(base / voice).require()  # without piper: one line naming the extra
        except ValueError as exc:
            raise SynthesisError(str(exc)) from None
        raise SynthesisError("piper voices are recognised but not driven yet: use espeak-ng")
    return synthesize(speak, voice)


__all__ = ["WAV_SUFFIX", "clip", "is_wav_path", "synthesize"]
