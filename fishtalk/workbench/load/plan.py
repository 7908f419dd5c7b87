"""The guards of a load run, pure: its worst-case session count, ``--max-sessions``, and the
line a real-agent run asks to go on with.

Each user starts a session at most once every ``pace`` seconds (Locust's constant pacing:
a longer session is followed by the next at once), so a run of ``run_time`` seconds opens
at most ``users * (run_time // pace + 1)`` sessions. A real agent needs a run time (an
open-ended run has no bound); the sim does not.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

from fishtalk.core.errors import ConfigError, RunLimitError

MAX_SESSIONS_AGENT: Final = 50
"""``--max-sessions``' default against a real agent (every session costs money)."""
MAX_SESSIONS_SIM: Final = 100_000
"""``--max-sessions``' default against the sim."""
DEFAULT_PACE: Final = 5.0
"""Seconds between the starts of one user's sessions, at the least."""

_SPAN = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_run_time(text: str) -> int:
    """Seconds in a Locust run time (``90``, ``30s``, ``5m``, ``1h30m``); raises
    :class:`ConfigError` for anything else."""
    text = text.strip().lower()
    if text.isdigit():
        return int(text)
    match = _SPAN.match(text)
    if not text or match is None:
        raise ConfigError(f"--run-time {text!r}: give seconds, or e.g. 30s, 5m, 1h30m")
    hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return hours * 3600 + minutes * 60 + seconds


@dataclass(frozen=True)
class LoadPlan:
    """What a ``fishtalk load`` run may do."""

    agent: str
    """The agent id, or ``sim`` (its scenario) for the sim."""
    users: int
    run_time: int | None
    """Seconds; None: until stopped."""
    pace: float = DEFAULT_PACE
    max_sessions: int | None = None
    """None: the default for the target."""
    sim: bool = False

    @property
    def cap(self) -> int:
        """The session cap in force."""
        if self.max_sessions is not None:
            return self.max_sessions
        return MAX_SESSIONS_SIM if self.sim else MAX_SESSIONS_AGENT

    def worst_case(self) -> int | None:
        """The most sessions the run can open (None: no bound, no run time)."""
        if self.run_time is None:
            return None
        return self.users * (math.floor(self.run_time / self.pace) + 1)

    def check(self) -> int | None:
        """The worst case, or :class:`RunLimitError` when it is over the cap (or unbounded
        against a real agent)."""
        worst = self.worst_case()
        if worst is None:
            if self.sim:
                return None
            raise RunLimitError(
                "a run against a real agent needs --run-time (it bounds the sessions, and "
                "every session costs money)"
            )
        if worst > self.cap:
            raise RunLimitError(
                f"this run could open {worst} sessions ({self.users} users, one every "
                f"{self.pace:g} s each for {self.run_time} s), more than --max-sessions "
                f"{self.cap} (raise it, or lower --users or --run-time, or raise --pace)"
            )
        return worst

    def confirmation(self) -> str:
        """The one line a real-agent run asks to go on with."""
        return (
            f"load agent {self.agent} with {self.users} users for {self.run_time} s: at most "
            f"{self.worst_case()} sessions, each billed. Go on?"
        )
