"""The journal's writer threads: a daemon thread that runs until it is asked to stop, once."""

from __future__ import annotations

import threading
from collections.abc import Callable


class WriterThread:
    """Runs ``target`` on a daemon thread named ``name`` once :meth:`start` is called;
    ``target`` watches :attr:`stopping`. :meth:`stop` asks it to finish and waits for it up
    to a timeout; a second call does nothing."""

    def __init__(self, target: Callable[[], None], name: str) -> None:
        self.stopping = threading.Event()
        """Set by :meth:`stop`: the thread writes what is left and returns."""
        self._stopped = False
        self._thread = threading.Thread(target=target, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.stopping.set()
        self._thread.join(timeout)
