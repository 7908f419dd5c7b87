"""The sim in a child process of its own, for suites that run many sessions at once.

A sim on a thread of the test process shares its interpreter lock with every client
session of the test: its server (aiortc: SRTP and Opus in Python), its agents' voices and
ears, and the clients' audio all take turns on one core. Four sessions at once, on a busy
two-core machine, left the sim's loop waiting seconds at a time: voices late, turns
timing out. In a process of its own the sim has an interpreter, and a core, to itself.

The parent pickles the scenarios (by agent id) to the child's stdin and reads back the
:class:`~fishtalk.sim.runner.SimInfo`; the child serves until its stdin closes.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from fishtalk.sim.fish.scenario import Scenario
from fishtalk.sim.runner import SimInfo

STOP_WITHIN = 30.0
"""How long the child gets to stop (agents leave, server stops) once told to."""


@contextlib.contextmanager
def sim_process(scenarios: dict[str, Scenario]) -> Iterator[SimInfo]:
    """The sim in a child process, playing ``scenarios`` by agent id (the first one for
    any other id)."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    child = subprocess.Popen(
        [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        pickle.dump(scenarios, child.stdin)
        child.stdin.flush()
        info = pickle.load(child.stdout)
        assert isinstance(info, SimInfo), info
        yield info
    finally:
        child.stdin.close()
        try:
            child.wait(STOP_WITHIN)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _serve() -> None:
    from fishtalk.sim.runner import SimThread

    scenarios = pickle.load(sys.stdin.buffer)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the sim prints goes to stderr, never into the reply
    with SimThread(next(iter(scenarios.values())), scenarios=scenarios) as info:
        pickle.dump(info, replies)
        replies.flush()
        sys.stdin.buffer.read()  # until the parent closes it


if __name__ == "__main__":
    _serve()
