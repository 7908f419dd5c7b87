"""Speech to text, offline: pocketsphinx 5 and the en-US model its wheel bundles.

:class:`Recognizer` decodes 16-bit audio at any rate three ways:

* :meth:`~Recognizer.grammar`: a JSGF grammar of known phrases (a sim's commands, a
  test's expected words). Far more accurate than free decoding. When the search stops
  short of a whole phrase, the phrases continuing its path are aligned to the audio and
  the one that alone aligns is taken; otherwise the result is not matched.
* :meth:`~Recognizer.free`: open-vocabulary decoding with the bundled language model, the
  last resort; its results say so (``method="free"``).
* :meth:`~Recognizer.align`: force-align a known text to the audio, to ask "does this
  audio say this text?" (a wrong text finds no alignment).
* :meth:`~Recognizer.cover`: which words of a text the audio says, in order, by alignment
  resumed where a partial one stopped (pocketsphinx's alignment can stop short at a long
  pause; the rest of the text is then aligned to the rest of the audio).

:meth:`~Recognizer.understand` tries the grammar and falls back to free decoding.
pocketsphinx is the ``speech`` extra: without it, :func:`load` raises
:class:`~fishtalk.core.errors.SpeechUnavailableError`, one line naming the extra. A
recogniser is not thread-safe; each utterance restarts from the same cepstral mean, so
what it hears does not depend on what was decoded before (a confidence may move a hair).
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from fishtalk.core.errors import SpeechUnavailableError
from fishtalk.speech.models import ModelPathError, UserModel
from fishtalk.speech.pcm import STT_RATE, Pcm, convert
from fishtalk.speech.recognition import Recognition, normalize

INSTALL_EXTRA: Final = "pip install 'fishtalk[speech]'"
SPEECH_DBFS: Final = -45.0
"""10 ms blocks louder than this count as speech energy."""
_GRAMMAR = "phrases"


def speech_seconds(audio: Pcm, rate: int, *, threshold_dbfs: float = SPEECH_DBFS) -> float:
    """Seconds of ``audio`` in 10 ms blocks louder than ``threshold_dbfs``."""
    step = rate // 100
    usable = audio[: audio.size - audio.size % step]
    if usable.size == 0:
        return 0.0
    blocks = usable.reshape(-1, step).astype(np.float64) / 32768.0
    power = np.mean(blocks * blocks, axis=1)
    loud = power > 10 ** (threshold_dbfs / 10)
    return int(loud.sum()) / 100


def available() -> bool:
    """Whether pocketsphinx (the ``speech`` extra) is installed."""
    return importlib.util.find_spec("pocketsphinx") is not None


def load_check() -> None:
    """Raise :class:`SpeechUnavailableError` (one line naming the extra) without
    pocketsphinx."""
    if not available():
        raise SpeechUnavailableError("pocketsphinx", INSTALL_EXTRA)


def load(model: UserModel | None = None) -> Recognizer:
    """A recogniser on the bundled en-US model (about 0.5 s of CPU to load), or on the
    user's own pocketsphinx ``model`` (:mod:`fishtalk.speech.models`).

    A faster-whisper model raises :class:`SpeechUnavailableError` without its package and
    :class:`~fishtalk.speech.models.ModelPathError` with it (hearing is pocketsphinx's:
    its alignment is what the spoken checks rest on)."""
    try:
        pocketsphinx = importlib.import_module("pocketsphinx")
    except ImportError as exc:
        raise SpeechUnavailableError("pocketsphinx", INSTALL_EXTRA) from exc
    if model is None:
        return Recognizer(pocketsphinx.Decoder(samprate=STT_RATE, loglevel="FATAL"))
    model.require()
    if model.kind != "pocketsphinx":
        raise ModelPathError(
            f"{model.path}: a {model.kind} model; fishtalk hears with pocketsphinx models "
            "(its forced alignment is what the spoken checks rest on)"
        )
    paths = {"hmm": model.path, "dict": model.dictionary, "lm": model.language_model}
    options = {key: str(value) for key, value in paths.items() if value is not None}
    try:
        decoder = pocketsphinx.Decoder(samprate=STT_RATE, loglevel="FATAL", **options)
    except (RuntimeError, ValueError) as exc:
        raise ModelPathError(f"{model.path}: pocketsphinx cannot load it ({exc})") from None
    return Recognizer(decoder)


@dataclass(frozen=True)
class Coverage:
    """What :meth:`Recognizer.cover` found: the text's words the audio says."""

    words: tuple[str, ...]
    """The text, normalised, word by word."""
    covered: tuple[str, ...]
    """The words the audio was aligned to, in order."""
    share: float
    """``len(covered) / len(words)`` (0 for an empty text)."""
    speech_seconds: float

    @property
    def heard_nothing(self) -> bool:
        """The audio held no speech."""
        return self.speech_seconds <= 0

    def says(self, phrase: str) -> bool:
        """Whether the covered words hold ``phrase``'s words, one after the other."""
        want = normalize(phrase).split()
        have = list(self.covered)
        return bool(want) and any(
            have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1)
        )


def jsgf(phrases: list[str]) -> str:
    """A JSGF grammar whose sentences are exactly ``phrases`` (already normalised)."""
    body = " | ".join(f"( {p} )" for p in phrases)
    return f"#JSGF V1.0;\ngrammar {_GRAMMAR};\npublic <phrase> = {body};\n"


class Recognizer:
    """pocketsphinx with the bundled model: grammar, free decoding and alignment."""

    def __init__(self, decoder: Any) -> None:
        self._decoder = decoder
        self._cmn: str = decoder.get_cmn()
        self._grammars: dict[tuple[str, ...], str] = {}

    def known(self, word: str) -> bool:
        """Whether ``word`` is in the pronunciation dictionary."""
        return self._decoder.lookup_word(word) is not None

    def _decode(self, audio: Pcm, rate: int) -> tuple[str, float] | None:
        dec = self._decoder
        dec.set_cmn(self._cmn)  # same start for every utterance: deterministic results
        dec.start_utt()
        dec.process_raw(convert(audio, rate, STT_RATE).tobytes(), full_utt=True)
        dec.end_utt()
        hyp = dec.hyp()
        if hyp is None:
            return None
        return str(hyp.hypstr), float(hyp.prob)

    def free(self, audio: Pcm, rate: int) -> Recognition:
        """Open-vocabulary decoding (the result says ``method="free"``)."""
        seconds = speech_seconds(audio, rate)
        if seconds <= 0:
            return Recognition("", "free", 0.0, 0.0)
        self._decoder.activate_search()
        found = self._decode(audio, rate)
        text, prob = found if found else ("", 0.0)
        return Recognition(normalize(text), "free", prob, seconds)

    def grammar(self, audio: Pcm, rate: int, phrases: list[str]) -> Recognition:
        """The phrase of ``phrases`` the audio says; ``matched=False`` when none fits whole.

        Phrases are normalised (``get_time`` is "get time"); words missing from the
        dictionary drop their phrase.
        """
        seconds = speech_seconds(audio, rate)
        usable = sorted(
            {n for p in phrases if (n := normalize(p)) and all(map(self.known, n.split()))}
        )
        if seconds <= 0 or not usable:
            return Recognition("", "grammar", 0.0, seconds, matched=False)
        key = tuple(usable)
        name = self._grammars.get(key)
        if name is None:
            name = f"g{len(self._grammars)}"
            self._decoder.add_jsgf_string(name, jsgf(usable))
            self._grammars[key] = name
        self._decoder.activate_search(name)
        found = self._decode(audio, rate)
        if found is None:
            return Recognition("", "grammar", 0.0, seconds, matched=False)
        text = normalize(found[0])
        if text in key:
            return Recognition(text, "grammar", found[1], seconds)
        return self._complete(text, audio, rate, key, seconds) or Recognition(
            text, "grammar", found[1], seconds, matched=False
        )

    def _complete(
        self, partial: str, audio: Pcm, rate: int, phrases: tuple[str, ...], seconds: float
    ) -> Recognition | None:
        """The one phrase continuing ``partial`` that aligns to the audio, if exactly one.

        pocketsphinx's grammar search returns its best partial path when it reaches no
        whole phrase ("call get" for "call get time" over a lossy codec); aligning each
        phrase that continues that path tells them apart. A short phrase aligns to almost
        any audio, so only continuations of a non-empty path are tried.
        """
        if not partial:
            return None
        fits = []
        for phrase in phrases:
            if phrase == partial or phrase.startswith(partial + " "):
                aligned = self.align(audio, rate, phrase)
                if aligned.matched:
                    fits.append(aligned)
        if len(fits) != 1:
            return None
        return Recognition(fits[0].text, "grammar", fits[0].confidence, seconds)

    def align(self, audio: Pcm, rate: int, text: str) -> Recognition:
        """Whether ``audio`` says ``text``: ``matched`` and a 0..1 ``confidence``.

        Words missing from the dictionary are left out of the alignment and lower the
        confidence by their share.
        """
        seconds = speech_seconds(audio, rate)
        words = normalize(text).split()
        usable = [w for w in words if self.known(w)]
        if seconds <= 0 or not usable:
            return Recognition(" ".join(words), "align", 0.0, seconds, matched=False)
        self._decoder.set_align_text(" ".join(usable))
        found = self._decode(audio, rate)
        if found is None:
            return Recognition(" ".join(words), "align", 0.0, seconds, matched=False)
        share = len(usable) / len(words)
        return Recognition(" ".join(words), "align", share * found[1], seconds, matched=True)

    def cover(self, audio: Pcm, rate: int, text: str) -> Coverage:
        """The words of ``text`` that ``audio`` says, in order, found by forced alignment.

        An alignment that stops short (the bundled model loses its place at some pauses)
        is resumed: the words left are aligned to the audio after the last word aligned.
        A text the audio does not say finds no alignment at all, so the share covered
        is a measure of "does this audio say this text?" that does not depend on the free
        decoder's poor accuracy on synthetic voices.
        """
        words = normalize(text).split()
        pcm = convert(audio, rate, STT_RATE)
        seconds = speech_seconds(pcm, STT_RATE)
        covered: list[str] = []
        at_word, at_sample = 0, 0
        while at_word < len(words) and seconds > 0:
            # An unknown word cannot be aligned: skip it (it counts as not covered).
            if not self.known(words[at_word]):
                at_word += 1
                continue
            run = [w for w in words[at_word:] if self.known(w)]
            self._decoder.set_align_text(" ".join(run))
            if self._decode(pcm[at_sample:], STT_RATE) is None:
                break
            aligned = [
                (seg.word.split("(")[0], seg.start_frame, seg.end_frame)
                for seg in self._decoder.seg()
                if not seg.word.startswith(("<", "[")) and seg.word != "</s>"
            ]
            if not aligned:
                break
            covered += [w for w, _, _ in aligned]
            at_word = words.index(aligned[-1][0], at_word) + 1
            # Where the alignment lost its place, the last word's end is unreliable (a
            # long silence after it may hold the next words): resume at its start, the
            # leading silence of the next alignment taking the word itself.
            at_sample += aligned[-1][1] * STT_RATE // 100  # pocketsphinx frames: 10 ms
        share = len(covered) / len(words) if words else 0.0
        return Coverage(tuple(words), tuple(covered), share, seconds)

    def spoken_prefix(self, audio: Pcm, rate: int, text: str) -> int:
        """How many of ``text``'s first words ``audio`` says: the most words of its start
        that align to the audio whole (0: none).

        For a cut reply, whose audio says the start of its transcript and stops: an
        alignment of more words than the audio says finds none (measured on espeak-ng: a
        21-word text over the audio of its first 3, 6 or 10 words aligns no word), and one
        of fewer leaves speech over and does not align whole either, so the longest whole
        alignment counts the words spoken. Tried from the whole text down.
        """
        words = normalize(text).split()
        for n in range(len(words), 0, -1):
            known = [w for w in words[:n] if self.known(w)]
            if known and list(self.cover(audio, rate, " ".join(words[:n])).covered) == known:
                return n
        return 0

    def understand(self, audio: Pcm, rate: int, phrases: list[str]) -> Recognition:
        """A whole phrase of ``phrases`` if the audio says one, else free decoding."""
        heard = self.grammar(audio, rate, phrases)
        if heard.matched or heard.speech_seconds <= 0:
            return heard
        return self.free(audio, rate)


__all__ = [
    "INSTALL_EXTRA",
    "Coverage",
    "Recognizer",
    "available",
    "jsgf",
    "load",
    "load_check",
    "speech_seconds",
]
