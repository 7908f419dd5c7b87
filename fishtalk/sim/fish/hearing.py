"""What the simulated agent understands of the user's speech (offline speech-to-text).

With the ``speech`` extra installed, a finished stretch of the user's audio is decoded by
:mod:`fishtalk.speech.stt`: first against a grammar of the sim's spoken commands
(:data:`SPOKEN_COMMANDS`, "call get time", "goodbye", ...), then, when no command fits
whole, by free decoding. The result becomes the user's final transcript and a turn the
agent answers as it answers a typed one. Without the extra, :func:`ears` returns None and
the agent keeps describing the sound it heard.

One recogniser serves the whole process: it is loaded once (about half a second of CPU)
in a child process of its own, and decodes one utterance at a time there.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from fishtalk.core import protocol as p
from fishtalk.speech import stt
from fishtalk.speech.pcm import Pcm
from fishtalk.speech.recognition import Recognition

SPOKEN_COMMANDS: Final[dict[str, str]] = {
    "call get time": "call get_time",
    "call get local context": "call get_local_context",
    "call notify": "call notify",
    "goodbye": "goodbye",
    "hang up": "hang up",
    "error": "error",
}
"""Each phrase the sim's grammar knows, and the typed command it stands for."""
PAD_SECONDS: Final = 0.3
"""Faint noise added around an utterance before decoding it."""


def _understand(recognizer: stt.Recognizer, audio: Pcm, rate: int, final: bool) -> Recognition:
    """In the speech process: what ``audio`` says (see :meth:`Ears.understand`)."""
    # The speech detector trims the quiet around speech; the decoder finds whole phrases
    # more often with some faint noise around them (digital zeros hurt).
    pad = (np.random.default_rng(0).normal(0, 10, round(PAD_SECONDS * rate))).astype(np.int16)
    audio = np.concatenate([pad, audio, pad])
    phrases = list(SPOKEN_COMMANDS)
    if final:
        return recognizer.understand(audio, rate, phrases)
    # Interims: the grammar's best path so far is cheap and grows as words arrive.
    return recognizer.grammar(audio, rate, phrases)


class Ears:
    """The process's one recogniser, decoding one utterance at a time in the speech
    process (:mod:`fishtalk.speech.process`: a decode in this process would stall every
    session's audio)."""

    async def understand(self, audio: Pcm, rate: int, *, final: bool = True) -> Recognition:
        """What ``audio`` says: a command of the grammar, else free decoding (``final``)."""
        from fishtalk.speech.process import shared

        return await shared().arun(_understand, audio, rate, final)


_EARS: Ears | None = None


def ears() -> Ears | None:
    """The shared recogniser, or None when the ``speech`` extra is not installed."""
    global _EARS
    if _EARS is None and stt.available():
        _EARS = Ears()
    return _EARS


def as_message(heard: Recognition) -> p.UserMessage | None:
    """The typed turn ``heard`` stands for (a command's typed form), or None if nothing."""
    if heard.heard_nothing:
        return None
    if heard.method == "grammar" and heard.matched:
        return p.UserMessage(text=SPOKEN_COMMANDS.get(heard.text, heard.text))
    return p.UserMessage(text=heard.text)


def transcript(heard: Recognition, *, final: bool) -> str:
    """The user transcript to publish for ``heard``."""
    if heard.heard_nothing:
        return "(heard speech but recognised no words)" if final else "…"
    return heard.text


__all__ = ["SPOKEN_COMMANDS", "Ears", "as_message", "ears", "transcript"]
