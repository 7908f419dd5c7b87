"""What offline speech-to-text made of some audio: text, how it was found, how sure.

A :class:`Recognition` always says its :attr:`~Recognition.method`: ``grammar`` (the
audio matched one phrase of a known list), ``free`` (open-vocabulary decoding, the last
resort and often wrong for synthetic voices) or ``align`` (a known text was aligned to the
audio, :attr:`~Recognition.matched` says whether it fits). "Heard nothing" is a result
(:attr:`~Recognition.heard_nothing`), never an empty success.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Method = Literal["grammar", "free", "align"]
"""How a recognition was made (see the module docstring)."""

_WORD = re.compile(r"[a-z']+")


def normalize(text: str) -> str:
    """Lower-case words only: ``"Call get_time!"`` -> ``"call get time"``."""
    return " ".join(_WORD.findall(text.lower().replace("_", " ")))


@dataclass(frozen=True)
class Recognition:
    """One result of offline speech-to-text."""

    text: str
    """The words recognised (normalised), or the text aligned; empty when nothing heard."""
    method: Method
    confidence: float
    """0..1: the recogniser's posterior for grammar and free decoding; for an alignment,
    the share of the text's words the audio covers, times their posterior."""
    speech_seconds: float
    """Seconds of the audio loud enough to be speech (0 when it heard nothing)."""
    matched: bool = True
    """For ``grammar``: the audio fits a whole phrase; for ``align``: the text fits."""

    @property
    def heard_nothing(self) -> bool:
        """Whether the audio held no speech at all (or nothing the recogniser could read)."""
        return self.speech_seconds <= 0.0 or (self.method != "align" and not self.text)

    def describe(self) -> str:
        """One line for logs and journals: ``free decoding heard "..." (confidence 0.41)``."""
        if self.heard_nothing:
            return "heard nothing"
        how = {"grammar": "grammar", "free": "free decoding", "align": "alignment"}[self.method]
        if self.method == "align":
            verdict = "matches" if self.matched else "does not match"
            return f'{how}: audio {verdict} "{self.text}" (confidence {self.confidence:.2f})'
        return f'{how} heard "{self.text}" (confidence {self.confidence:.2f})'


__all__ = ["Method", "Recognition", "normalize"]
