"""The whole sim in a child process of its own, for runs of many sessions at once.

A sim in the process of its clients shares one interpreter lock with them: its server
(aiortc: SRTP and Opus in Python), its agents' voices and ears, and every client's audio
take turns on one core. Four sessions at once on a busy two-core machine left the sim
waiting seconds at a time (voices late, turns timed out), and that is not the agent under
test. In a child (``python -m fishtalk.sim.process``, an argv list, no shell) the sim has
an interpreter, and a core, of its own.

The parent pickles :func:`~fishtalk.sim.runner.run_sim`'s arguments to the child's stdin
and reads back the :class:`~fishtalk.sim.runner.SimInfo`, or the exception that starting
raised (a bad scenario or setting: :class:`~fishtalk.core.errors.ScenarioError`; a
port taken: :class:`~fishtalk.core.errors.SimServeError`).
The child serves until its stdin closes: when the parent stops it, or exits in any way.
It ignores Ctrl-C (the parent hangs its sessions up first, then stops it) and its output
never reaches the terminal.
"""

from __future__ import annotations

import contextlib
import pickle
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fishtalk.core.errors import SimServeError

if TYPE_CHECKING:
    from fishtalk.sim.fish.scenario import Scenario
    from fishtalk.sim.runner import SimInfo

STOP_WITHIN = 30.0
"""How long the child gets to stop (its agents leave, its server stops) once told to."""


class SimProcess:
    """:func:`~fishtalk.sim.runner.run_sim` in a child process.

    ::

        with SimProcess("demo") as info:
            ...  # sessions against info.api_url with info.dev_key
    """

    def __init__(self, scenario: Scenario | str | Path | None = None, **options: Any) -> None:
        self._call = ((scenario,), options)
        self._child: subprocess.Popen[bytes] | None = None
        self._info: SimInfo | None = None

    @property
    def pid(self) -> int | None:
        """The child's process id, while it runs."""
        child = self._child
        return child.pid if child is not None and child.poll() is None else None

    def start(self) -> SimInfo:
        """Start the sim and return where it listens; raises what starting raised."""
        if self._info is not None:
            return self._info
        try:
            child = self._child = subprocess.Popen(
                [sys.executable, "-m", "fishtalk.sim.process"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError as exc:
            raise SimServeError(f"the simulator's process could not start: {exc}") from None
        assert child.stdin is not None
        assert child.stdout is not None
        try:
            pickle.dump(self._call, child.stdin)
            child.stdin.flush()
            ok, value = pickle.load(child.stdout)  # noqa: S301 - our own child, our pipe
        except (OSError, EOFError, pickle.UnpicklingError):
            self.stop()
            raise SimServeError("the simulator's process stopped while starting") from None
        if not ok:
            self.stop()
            raise value
        from fishtalk.sim.runner import SimInfo

        assert isinstance(value, SimInfo), value
        self._info = value
        return value

    def stop(self) -> None:
        """Stop the sim (its agents leave, its server stops) and wait for its process."""
        child, self._child, self._info = self._child, None, None
        if child is None:
            return
        assert child.stdin is not None
        with contextlib.suppress(OSError):
            child.stdin.close()
        try:
            child.wait(STOP_WITHIN)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

    def __enter__(self) -> SimInfo:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _serve() -> None:
    import os
    import signal

    from fishtalk.sim.runner import SimThread

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what a library prints goes to stderr, never into the reply
    args, options = pickle.load(sys.stdin.buffer)  # noqa: S301 - from the parent, our pipe
    sim = SimThread(*args, **options)
    try:
        info = sim.start()
    except Exception as exc:
        try:
            failure = pickle.dumps((False, exc))
        except Exception:
            failure = pickle.dumps((False, SimServeError(f"{type(exc).__name__}: {exc}")))
        replies.write(failure)
        replies.flush()
        return
    try:
        replies.write(pickle.dumps((True, info)))
        replies.flush()
        sys.stdin.buffer.read()  # until the parent closes it
    finally:
        sim.stop()


if __name__ == "__main__":
    _serve()


__all__ = ["STOP_WITHIN", "SimProcess"]
