"""An opt-in trace of the sim's insides, for failures that only a loaded host shows.

Set ``FISHTALK_SIM_LOG`` to a file path and every sim started in that process or its
children (:func:`fishtalk.sim.runner.run_sim`: ``fishtalk demo``, ``fishtalk test --sim``,
``fishtalk sim serve``, the tests' in-process sims) appends to it, one line per record:
the sim's own loggers (the agents' journals, signalling, media) at DEBUG, aioice's ICE
checks and consent at INFO, and aiortc's peer connection, ICE and DTLS transports at
DEBUG (not its RTP senders, which log every packet). Each line carries the time of day to
the millisecond and the process id, so the lines of two processes can be told apart and
set beside a client's own log.

The test suite sets it for every WebRTC test and prints the file's tail under a failure
(tests/conftest.py). Nobody else needs it: unset, this module does nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

ENV = "FISHTALK_SIM_LOG"

LEVELS = {
    "fishtalk.sim": logging.DEBUG,
    "aioice": logging.INFO,
    "aiortc.rtcpeerconnection": logging.DEBUG,
    "aiortc.rtcicetransport": logging.DEBUG,
    "aiortc.rtcdtlstransport": logging.DEBUG,
}
"""What the trace holds: logger name -> the level it is raised to while a sim runs."""

_FORMAT = "%(asctime)s.%(msecs)03d %(process)d %(threadName)s %(name)s: %(message)s"


class _OneLine(logging.Formatter):
    """One line per record: aiortc logs each SDP it sets in full (40 lines apiece), which
    would crowd out the rest of a failure's trace. The sim's own records keep their lines."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if record.name.startswith("fishtalk."):
            return text
        first, _, rest = text.partition("\n")
        return f"{first} [+{rest.count(chr(10)) + 1} lines]" if rest else first


_saved: list[tuple[logging.Logger, int, bool]] = []
"""The loggers' own levels and propagation while any trace is on (two sims in one process
overlap in any order: the first to start raises the levels, the last to stop restores)."""
_active = 0


@contextlib.contextmanager
def traced() -> Iterator[None]:
    """While the block runs, append the sim's trace to ``$FISHTALK_SIM_LOG`` if it is set.

    Levels and handlers are put back as they were once the last traced block ends. The
    third-party loggers stop propagating meanwhile, so their chatter reaches the trace file
    only and not the caller's own logging; the sim's loggers propagate as before.
    """
    global _active
    path = os.environ.get(ENV)
    if not path:
        yield
        return
    try:
        handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    except OSError:  # an unwritable path: the sim runs untraced rather than not at all
        yield
        return
    handler.setFormatter(_OneLine(_FORMAT, datefmt="%H:%M:%S"))
    if _active == 0:
        for name, level in LEVELS.items():
            logger = logging.getLogger(name)
            _saved.append((logger, logger.level, logger.propagate))
            logger.setLevel(min(level, logger.getEffectiveLevel()))
            if not name.startswith("fishtalk."):
                logger.propagate = False
    _active += 1
    for name in LEVELS:
        logging.getLogger(name).addHandler(handler)
    try:
        yield
    finally:
        for name in LEVELS:
            logging.getLogger(name).removeHandler(handler)
        handler.close()
        _active -= 1
        if _active == 0:
            for logger, level, propagate in _saved:
                logger.setLevel(level)
                logger.propagate = propagate
            _saved.clear()
