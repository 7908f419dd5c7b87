"""A voice-activity detector for the end of the user's speech: frame energy with hangover.

Heard latency (issue 14) starts a spoken turn at the end of speech *at the microphone*,
so the detector runs on the capture thread, on the processed (echo-cancelled, noise-
suppressed) 10 ms frames the microphone track carries, and reports one thing: speech
ended, with the capture time of the last voiced frame.

Why an energy detector and not a maintained VAD library: the only input is audio the
WebRTC AudioProcessingModule has already cleaned (noise suppression takes out stationary
noise, echo cancellation the agent's voice, the high-pass filter hum), so what is left
between words is close to digital silence and a level test separates it reliably. A
trained model (webrtcvad, Silero) would add a native or torch dependency and more work
per frame for a decision that only has to find the *end* of speech, and whose exact
instant is set by the hangover rule below, not by the classifier. Numpy only, a few
microseconds per frame (``bench/bench_audio.py`` measures it).

The rules, each with its reason:

* **Voiced frame**: RMS at or above :data:`VOICED_DBFS` (-45 dBFS). Conversational speech
  sits around -30 to -15 dBFS at a normal microphone distance after auto gain; noise
  suppression leaves the pauses well below -50 dBFS. -45 keeps soft consonants in.
* **Onset**: speech starts after :data:`ONSET_FRAMES` (3, i.e. 30 ms) voiced frames in a
  row, so a click, a key press or a lone noise burst does not open an utterance.
* **Hangover**: speech ends only once :data:`HANGOVER_SECONDS` (0.3 s) have passed with no
  voiced frame. Pauses between words and before stressed syllables are mostly shorter
  than 250 ms; a shorter hangover would end a turn in the middle of a sentence.
* **Raw confirmation**: a processed frame counts as voiced only if the same frame *before*
  processing is above :data:`RAW_VOICED_DBFS` (-60 dBFS) too. The processed signal says
  it is the user (echo and stationary noise removed); the raw one says when the sound at
  the microphone actually stopped, because the APM's filters ring on after it: measured
  on the virtual chain, a tone's processed tail stayed above -45 dBFS 30-40 ms after the
  tone ended. The raw threshold is 15 dB lower than the processed one to leave room for
  the auto gain; in a room whose raw noise is above it, the rule changes nothing and the
  stamp includes the tail. The raw level is computed only for frames already voiced.
* **Stamp**: the end is the capture time of the *last voiced frame*, not the moment the
  hangover ran out: the hangover is the detector's own delay, and the user stopped
  speaking when the last voiced frame was captured. The capture time of a frame is the
  time its last sample reached the device (see :mod:`fishtalk.engine.audio.streams`).

:func:`is_audible` is the same energy test at :data:`AUDIBLE_DBFS` (-50 dBFS), for "the
first non-silent agent frame" on the receive side: decoded Opus silence is exactly or
nearly zero, any speech onset is far above it.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
import numpy.typing as npt

Int16Array = npt.NDArray[np.int16]

FULL_SCALE: Final = 32768.0
VOICED_DBFS: Final = -45.0
"""A frame at or above this RMS level (dB relative to full scale) is voiced."""
ONSET_FRAMES: Final = 3
"""Voiced frames in a row that start an utterance."""
HANGOVER_SECONDS: Final = 0.3
"""Time without a voiced frame after which an utterance has ended."""
RAW_VOICED_DBFS: Final = -60.0
"""The unprocessed frame must be at or above this level for a voiced frame to count."""
AUDIBLE_DBFS: Final = -50.0
"""A received agent frame at or above this RMS level is not silence."""


def _level(dbfs: float) -> float:
    """The RMS amplitude (int16 units) of ``dbfs``."""
    return FULL_SCALE * math.pow(10.0, dbfs / 20.0)


def mean_square(samples: Int16Array) -> float:
    """The mean of the squared samples (int16 units), 0.0 for an empty frame."""
    size = samples.size
    if size == 0:
        return 0.0
    as_float = samples.astype(np.float32)
    return float(np.dot(as_float, as_float)) / size


_AUDIBLE_MS: Final = _level(AUDIBLE_DBFS) ** 2


def is_audible(samples: Int16Array | memoryview) -> bool:
    """Whether a frame (int16 samples, or a buffer of them such as ``AudioFrame.data``) is
    louder than silence (RMS at or above :data:`AUDIBLE_DBFS`)."""
    if isinstance(samples, memoryview):
        samples = np.frombuffer(samples, dtype=np.int16)
    return mean_square(samples) >= _AUDIBLE_MS


class EnergyVad:
    """Finds where speech ends in a stream of frames (see the module's rules).

    Not thread-safe: one thread (the capture thread) pushes. ``push`` costs one float
    conversion and one dot product per frame.
    """

    def __init__(
        self,
        *,
        voiced_dbfs: float = VOICED_DBFS,
        raw_voiced_dbfs: float = RAW_VOICED_DBFS,
        onset_frames: int = ONSET_FRAMES,
        hangover: float = HANGOVER_SECONDS,
    ) -> None:
        self._threshold = _level(voiced_dbfs) ** 2
        self._raw_threshold = _level(raw_voiced_dbfs) ** 2
        self._onset_frames = max(1, onset_frames)
        self._hangover = hangover
        self._run = 0
        """Voiced frames in a row (while not yet in speech)."""
        self.in_speech = False
        self.last_voiced_at = 0.0
        """Capture time of the last voiced frame of the current utterance."""

    def reset(self) -> None:
        """Forget any utterance in progress (mute, device change)."""
        self._run = 0
        self.in_speech = False

    def push(
        self, samples: Int16Array, captured_at: float, raw: Int16Array | None = None
    ) -> float | None:
        """Feed one (processed) frame whose last sample was captured at ``captured_at``;
        ``raw``: the same frame before processing, if there was any.

        Returns the capture time of the utterance's last voiced frame when this frame
        completes the hangover after speech (once per utterance), else None.
        """
        voiced = mean_square(samples) >= self._threshold and (
            raw is None or mean_square(raw) >= self._raw_threshold
        )
        if voiced:
            if self.in_speech:
                self.last_voiced_at = captured_at
                return None
            self._run += 1
            if self._run >= self._onset_frames:
                self.in_speech = True
                self.last_voiced_at = captured_at
                self._run = 0
            return None
        self._run = 0
        if self.in_speech and captured_at - self.last_voiced_at >= self._hangover:
            self.in_speech = False
            return self.last_voiced_at
        return None


__all__ = [
    "AUDIBLE_DBFS",
    "HANGOVER_SECONDS",
    "ONSET_FRAMES",
    "RAW_VOICED_DBFS",
    "VOICED_DBFS",
    "EnergyVad",
    "is_audible",
    "mean_square",
]
