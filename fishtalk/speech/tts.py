"""Text to speech, offline: the ``espeak-ng`` program, run with an argv list (no shell).

espeak-ng is a system package on Linux (``apt install espeak-ng``), Homebrew on macOS
(``brew install espeak-ng``) and an installer on Windows; it ships its voices, so nothing
is downloaded. The text goes in on stdin, so a text starting with ``-`` is never parsed as
an option. piper-tts was left out: its voices are separate downloads that no package ships.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import wave
from dataclasses import dataclass

from fishtalk.core.errors import SpeechUnavailableError
from fishtalk.speech.pcm import Pcm, decode_wav

ESPEAK = "espeak-ng"
INSTALL_ESPEAK = "install the espeak-ng package (apt install espeak-ng, brew install espeak-ng)"


class SynthesisError(ValueError):
    """espeak-ng refused the request (an unknown voice): ``str(exc)`` is its reason."""


def find_espeak() -> str | None:
    """The ``espeak-ng`` executable on PATH, or None."""
    return shutil.which(ESPEAK)


@dataclass(frozen=True)
class Espeak:
    """One espeak-ng voice at one speed; :meth:`synthesize` turns text into PCM."""

    executable: str
    voice: str = ""
    """An espeak-ng voice name (``en-us``); empty for its default."""
    words_per_minute: int = 165

    @classmethod
    def find(cls, *, voice: str = "", words_per_minute: int = 165) -> Espeak:
        """The installed espeak-ng; :class:`SpeechUnavailableError` when there is none."""
        exe = find_espeak()
        if exe is None:
            raise SpeechUnavailableError(ESPEAK, INSTALL_ESPEAK)
        return cls(exe, voice, words_per_minute)

    @property
    def key(self) -> str:
        """What identifies this voice's output for a cache (voice and speed)."""
        return f"espeak-ng:{self.voice or 'default'}:{self.words_per_minute}"

    def argv(self) -> list[str]:
        """The command line: WAV on stdout, text on stdin."""
        argv = [self.executable, "--stdout", "--stdin", "-s", str(self.words_per_minute)]
        if self.voice:
            argv += ["-v", self.voice]
        return argv

    def _decode(self, out: bytes, rate: int, code: int | None, err: bytes) -> Pcm:
        if code:
            # espeak-ng's own reason ("The specified espeak-ng voice does not exist.").
            reason = err.decode("utf-8", "replace").strip().removeprefix("Error: ")
            raise SynthesisError(reason.splitlines()[0] if reason else f"exit status {code}")
        try:
            return decode_wav(out, rate)
        except (wave.Error, EOFError, ValueError) as exc:
            raise SpeechUnavailableError(ESPEAK, f"it gave no usable audio ({exc})") from exc

    def synthesize(self, text: str, rate: int) -> Pcm:
        """``text`` spoken, as mono int16 at ``rate`` (blocking: one espeak-ng run)."""
        done = subprocess.run(
            self.argv(), input=text.strip().encode("utf-8"), capture_output=True, check=False
        )
        return self._decode(done.stdout, rate, done.returncode, done.stderr)

    async def synthesize_async(self, text: str, rate: int) -> Pcm:
        """:meth:`synthesize` without blocking the event loop."""
        proc = await asyncio.create_subprocess_exec(
            *self.argv(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate(text.strip().encode("utf-8"))
        return self._decode(out, rate, proc.returncode, err)


__all__ = ["ESPEAK", "INSTALL_ESPEAK", "Espeak", "SynthesisError", "find_espeak"]
