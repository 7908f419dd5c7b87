"""Process hardening for whatever holds the API key: :func:`make_non_dumpable`.

Kept apart from :mod:`fishtalk.engine.system` (which loads asyncio) because the CLI calls it
before every command, ``--help`` included, and that path loads nothing heavy.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Final

log = logging.getLogger(__name__)

PR_SET_DUMPABLE: Final = 4
"""``prctl`` option (linux/prctl.h): 0 makes the process non-dumpable."""


def make_non_dumpable() -> bool:
    """Make this process non-dumpable (Linux ``prctl(PR_SET_DUMPABLE, 0)``), so processes
    of the same user, the command tools it starts among them, cannot read its
    ``/proc/<pid>/environ`` or memory (where the API key is) nor ptrace it, and it leaves
    no core dump. Root (``CAP_SYS_PTRACE``) still can. Called at the start of anything
    that holds the key (the CLI, ``AgentSession``); True when it took effect, False
    elsewhere than Linux or when the call failed (logged, never fatal)."""
    if sys.platform != "linux":
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        failed = libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0
    except (OSError, AttributeError) as exc:
        log.debug("prctl(PR_SET_DUMPABLE) unavailable: %s", exc)
        return False
    if failed:
        log.debug("prctl(PR_SET_DUMPABLE, 0) failed: %s", os.strerror(ctypes.get_errno()))
    return not failed


__all__ = ["make_non_dumpable"]
