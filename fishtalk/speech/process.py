"""Speech-to-text in a child process of its own.

pocketsphinx holds Python's global interpreter lock for a whole decode: 1.4 s for a
3-second utterance, measured on one core, during which no other thread of the process
runs. In the sim that froze every other session's audio; in ``fishtalk test`` it froze
the microphones of the sessions still running (a spoken turn heard as two, a turn lost).
So the decodes run here, in one child per model (``python -m fishtalk.speech.process``,
an argv list, no shell) that loads its recogniser once (about half a second) and decodes
one utterance at a time, while the calling process keeps its audio flowing.

:func:`shared` gives the process's one :class:`SpeechProcess` for a model;
:meth:`SpeechProcess.run` calls a module-level function ``fn(recognizer, *args)`` there
and returns its result. Calls and results are pickled over the child's own stdin and
stdout pipes (numpy audio, dataclasses); an exception in the child is raised again here.
The child is a plain subprocess, not :mod:`multiprocessing`, which would import the
caller's main script again in the child.
"""

from __future__ import annotations

import asyncio
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

if TYPE_CHECKING:
    from fishtalk.speech.models import UserModel
    from fishtalk.speech.stt import Recognizer

P = ParamSpec("P")
T = TypeVar("T")


class SpeechProcessError(RuntimeError):
    """The speech process stopped or could not return a result."""


class SpeechProcess:
    """One child process decoding for one model, one call at a time, in call order."""

    def __init__(self, model: UserModel | None = None) -> None:
        self._model = model
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The child's process id, while it runs."""
        child = self._child
        return child.pid if child is not None and child.poll() is None else None

    def _started(self) -> subprocess.Popen[bytes]:
        child = self._child
        if child is None or child.poll() is not None:
            child = self._child = subprocess.Popen(
                [sys.executable, "-m", "fishtalk.speech.process"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # Nothing of it reaches the terminal (a TUI may be drawing there): a
                # failure comes back as an exception, or as SpeechProcessError.
                stderr=subprocess.DEVNULL,
            )
        return child

    def run(
        self, fn: Callable[Concatenate[Recognizer, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(recognizer, *args)`` in the child (its exception raised again here)."""
        assert not kwargs, "positional arguments only"
        with self._lock:
            child = self._started()
            assert child.stdin is not None
            assert child.stdout is not None
            try:
                pickle.dump((self._model, fn, args), child.stdin)
                child.stdin.flush()
                ok, value = pickle.load(child.stdout)  # noqa: S301 - our own child, our pipe
            except Exception as exc:  # a dead child, or a reply that cannot be read
                child.kill()
                child.wait()
                self._child = None
                raise SpeechProcessError(f"the speech process stopped ({exc!r})") from None
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]  # fn's result, unpickled

    async def arun(
        self, fn: Callable[Concatenate[Recognizer, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """:meth:`run`, awaited without blocking the event loop."""
        return await asyncio.to_thread(lambda: self.run(fn, *args, **kwargs))

    def close(self) -> None:
        """Stop the child (it exits when its stdin closes)."""
        with self._lock:
            child, self._child = self._child, None
        if child is not None:
            assert child.stdin is not None
            child.stdin.close()
            try:
                child.wait(5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


_shared: dict[object, SpeechProcess] = {}
_shared_lock = threading.Lock()


def shared(model: UserModel | None = None) -> SpeechProcess:
    """The process's one :class:`SpeechProcess` for ``model`` (None: the bundled one),
    started on first use; it exits with this process (its stdin closes)."""
    key = None if model is None else model.path
    with _shared_lock:
        found = _shared.get(key)
        if found is None:
            found = _shared[key] = SpeechProcess(model)
        return found


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """The child's loop: each request ``(model, fn, args)`` answered ``(True, result)``
    or ``(False, exception)``, until ``requests`` ends."""
    from fishtalk.speech import stt

    loaded: dict[object, Recognizer] = {}
    while True:
        try:
            model, fn, args = pickle.load(requests)  # noqa: S301 - from the parent, our pipe
        except EOFError:
            return
        reply: tuple[bool, Any]
        try:
            key = None if model is None else model.path
            recognizer = loaded.get(key)
            if recognizer is None:
                recognizer = loaded[key] = stt.load(model)
            reply = (True, fn(recognizer, *args))
        except Exception as exc:  # raised again in the caller
            reply = (False, exc)
        try:
            data = pickle.dumps(reply)
            pickle.loads(data)  # noqa: S301 - our own bytes: what the parent will read back
        except Exception as exc:
            data = pickle.dumps((False, SpeechProcessError(f"{type(exc).__name__}: {exc}")))
        replies.write(data)
        replies.flush()


def _main() -> None:
    import os
    import signal

    # Ctrl-C is the caller's to handle; the child ends when its stdin closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what a library prints goes to stderr, never into the replies
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    _main()


__all__ = ["SpeechProcess", "SpeechProcessError", "serve", "shared"]
