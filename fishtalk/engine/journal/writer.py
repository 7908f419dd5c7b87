"""Writing a journal without ever blocking the session's event loop.

:class:`JournalWriter` is a session observer (``session.add_observer(writer.observe)``):
on the loop it only appends the observation to a bounded deque (no lock, no wake-up; a
full deque drops it and counts the drop). A daemon thread, every :data:`FLUSH_INTERVAL`,
takes what is queued, turns it into records
(:class:`~fishtalk.engine.journal.records.Recorder`), writes one JSON line each and flushes (so
at most one round is lost if the process dies), polls the audio levels about twice a
second, and writes a ``closed`` record (with the drop count) on :meth:`JournalWriter.close`.

Files are created with mode 0600. :func:`prune` keeps a journal directory within its
retention (the newest N files and M megabytes).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from fishtalk.engine.journal import SUFFIX
from fishtalk.engine.journal.records import Recorder, dumps, header
from fishtalk.engine.journal.worker import WriterThread
from fishtalk.engine.observe import AudioFrame, Observation

if TYPE_CHECKING:
    from fishtalk.engine.tools.registry import ApprovalRequest, Approver

_log = logging.getLogger(__name__)

AUDIO_SUFFIX: Final = ".wav"
"""A journal's ``--record-audio`` file: same name, this suffix (pruned with it)."""
QUEUE_SIZE: Final = 20_000
"""Observations that may wait for the writer thread before new ones are dropped."""
FLUSH_INTERVAL: Final = 0.05
"""Seconds between the writer thread's rounds: it takes everything queued, writes it and
flushes. Working in rounds rather than per record keeps it off the loop's critical path
(one wake-up per round, not a lock and a wake-up per observation)."""
LEVELS_INTERVAL: Final = 0.5
"""Seconds between audio-level records (2 Hz)."""
CLOSE_TIMEOUT: Final = 5.0
"""How long :meth:`JournalWriter.close` waits for the thread to write what is queued."""

LevelsFn = Callable[[], Any]
"""Returns an object with ``mic_rms``, ``mic_peak``, ``agent_rms``, ``agent_peak``."""


def append_records(path: Path, records: list[dict[str, Any]]) -> None:
    """Add ``records`` to the end of a closed journal (what was worked out after the call,
    e.g. ``heard`` records). Raises ``OSError``."""
    with path.open("a", encoding="utf-8") as handle:
        for record in records:
            handle.write(dumps(record) + "\n")


def new_journal_id(now: datetime | None = None) -> str:
    """A sortable, unique file stem: ``20261130-232700-1a2b3c``."""
    now = now or datetime.now(UTC).astimezone()
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def _open_private(path: Path) -> TextIO:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # a new directory: private
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.chmod(path, 0o600)  # an existing file keeps its old mode through O_CREAT
    return os.fdopen(fd, "w", encoding="utf-8", newline="\n")


@dataclass(frozen=True, slots=True)
class Retention:
    """How many journals a directory keeps: the newest ``keep_sessions`` files, and no more
    than ``keep_bytes`` in all (the newest file is always kept)."""

    keep_sessions: int = 100
    keep_bytes: int = 200 * 1024 * 1024


def journal_files(directory: Path) -> list[Path]:
    """The journals in ``directory``, oldest first (by name: names start with the time)."""
    try:
        return sorted(p for p in directory.iterdir() if p.suffix == SUFFIX and p.is_file())
    except OSError:
        return []


def prune(directory: Path, retention: Retention, *, keep: Path | None = None) -> list[Path]:
    """Delete the oldest journals (and their recordings) beyond ``retention``; returns the
    journals deleted. ``keep``
    (the journal being written) is never deleted."""
    files = journal_files(directory)
    kept: list[Path] = []
    total = 0
    removed: list[Path] = []
    full = False
    for path in reversed(files):
        audio = path.with_suffix(AUDIO_SUFFIX)
        try:
            size = path.stat().st_size + (audio.stat().st_size if audio.exists() else 0)
        except OSError:
            continue
        full = full or len(kept) >= retention.keep_sessions or total + size > retention.keep_bytes
        if path == keep or not full or not kept:
            kept.append(path)
            total += size
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
        with contextlib.suppress(OSError):
            audio.unlink(missing_ok=True)
    return removed


class JournalWriter:
    """Writes one session's journal to ``path`` (and each line to ``echo`` if given; a
    writer without a path only echoes).

    ``levels``: polled on the writer thread about twice a second (the audio backend's levels
    are safe to read from any thread). ``clock``/``wall``: the session's monotonic clock and
    Unix time (injected for reproducible journals).
    """

    def __init__(
        self,
        path: Path | None,
        *,
        agent_id: str | None,
        journal_id: str | None = None,
        front_end: str | None = None,
        spoken: bool | None = None,
        levels: LevelsFn | None = None,
        echo: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        queue_size: int = QUEUE_SIZE,
    ) -> None:
        from fishtalk._version import __version__
        from fishtalk.core.protocol import PROTOCOL_VERSION

        self.path = path
        self.journal_id = journal_id or (path.stem if path is not None else new_journal_id())
        self.dropped = 0
        self.written = 0
        self._echo = echo
        self.echo_closed = False
        """The echo's reader went away (``--events | head``): nothing more is echoed."""
        self._on_echo_closed: Callable[[], None] | None = None
        self._levels = levels
        self._items: deque[tuple[float, Observation | dict[str, Any]]] = deque()
        self._max = queue_size
        mono0, wall0 = clock(), wall()
        self._recorder = Recorder(mono0, wall0)
        self._clock = clock
        self._file = _open_private(path) if path is not None else None
        started = datetime.fromtimestamp(wall0, UTC).astimezone()
        self._write(
            header(
                fishtalk_version=__version__,
                protocol_version=PROTOCOL_VERSION,
                agent_id=agent_id,
                session_id=None,
                journal_id=self.journal_id,
                started_at=started.isoformat(timespec="milliseconds"),
                wall=wall0,
                front_end=front_end,
                spoken=spoken,
                mono=mono0,
            )
        )
        self._flush()
        self._worker = WriterThread(self._run, "fishtalk-journal")
        self._worker.start()

    @property
    def origin(self) -> tuple[float, float]:
        """The session clock and Unix time at the header: records' ``t`` count from it."""
        return self._recorder.mono0, self._recorder.wall0

    # --- on the loop ------------------------------------------------------------------

    def observe(self, item: Observation) -> None:
        """The session observer: enqueue, never block; a full queue counts a drop. Audio
        frames are not journal records (see :mod:`fishtalk.engine.journal.audio`)."""
        if isinstance(item, AudioFrame):
            return
        if len(self._items) >= self._max:
            self.dropped += 1
        else:
            self._items.append((self._clock(), item))

    def recording_approver(self, inner: Approver) -> Approver:
        """``inner``, with each answer recorded (an ``approval`` record; the tool run's
        ``approval`` field says ``approved`` or ``declined``)."""

        async def approve(request: ApprovalRequest) -> bool:
            answer = False
            try:
                answer = await inner(request)
            finally:
                self.note(
                    {
                        "type": "approval",
                        "call_id": request.call_id,
                        "tool_name": request.tool_name,
                        "summary": request.summary,
                        "answer": "approved" if answer else "declined",
                    }
                )
            return answer

        return approve

    def note(self, record: dict[str, Any]) -> None:
        """Write a ready-made record (its ``type`` set; ``t``/``wall`` are added)."""
        if len(self._items) >= self._max:
            self.dropped += 1
        else:
            self._items.append((self._clock(), record))

    def when_echo_closed(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the echo's reader goes away (at once if it has already);
        it runs on the writer thread, so it must be safe from any thread."""
        self._on_echo_closed = callback
        if self.echo_closed:
            callback()

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Write what is queued, a ``closed`` record, and close the file; safe twice."""
        self._worker.stop(timeout)

    # --- on the writer thread ---------------------------------------------------------

    def _run(self) -> None:
        last_levels = 0.0
        levels_moving = True
        try:
            while True:
                stopping = self._worker.stopping.wait(FLUSH_INTERVAL)
                self._drain()
                now = self._clock()
                if self._levels is not None and now - last_levels >= LEVELS_INTERVAL:
                    last_levels = now
                    levels_moving = self._record_levels(now, levels_moving)
                self._flush()
                if stopping:
                    break
            self._drain()
            stamp = self._recorder.stamp(self._clock())
            self._write({"type": "closed", **stamp, "dropped": self.dropped})
        except Exception:
            _log.exception("the journal writer failed; %s stops here", self.path)
        finally:
            with contextlib.suppress(Exception):
                self._flush()
                if self._file is not None:
                    self._file.close()

    def _drain(self) -> None:
        items = self._items
        while items:
            self._record(items.popleft())

    def _record(self, entry: tuple[float, Observation | dict[str, Any]]) -> None:
        at, item = entry
        if isinstance(item, dict):
            self._write(self._recorder.note(item, at))
            return
        try:
            records = self._recorder.records(item, at)
        except Exception:
            _log.exception("could not record %s", type(item).__name__)
            return
        for record in records:
            self._write(record)

    def _record_levels(self, now: float, moving: bool) -> bool:
        assert self._levels is not None
        try:
            lv = self._levels()
            values = [lv.mic_rms, lv.mic_peak, lv.agent_rms, lv.agent_peak]
        except Exception:
            return moving
        active = any(v > 0 for v in values)
        if active or moving:
            rounded = [round(float(v), 4) for v in values]
            self._write(
                {
                    "type": "levels",
                    **self._recorder.stamp(now),
                    "mic_rms": rounded[0],
                    "mic_peak": rounded[1],
                    "agent_rms": rounded[2],
                    "agent_peak": rounded[3],
                }
            )
        return active

    def _write(self, record: dict[str, Any]) -> None:
        try:
            line = dumps(record)
        except ValueError:
            line = dumps({"type": record.get("type"), "t": record.get("t"), "unwritable": True})
        if self._file is not None:
            self._file.write(line + "\n")
        self.written += 1
        if self._echo is not None:
            try:
                self._echo.write(line + "\n")
            except (OSError, ValueError):
                self._echo_gone()

    def _flush(self) -> None:
        if self._file is not None:
            self._file.flush()
        if self._echo is not None:
            try:
                self._echo.flush()
            except (OSError, ValueError):
                self._echo_gone()

    def _echo_gone(self) -> None:
        """The echo failed (EPIPE, a closed file): its reader went away, as line mode's
        does with ``| head``. Stop echoing (the file journal goes on) and say so once."""
        self._echo = None
        if self.echo_closed:
            return
        self.echo_closed = True
        if self._on_echo_closed is not None:
            with contextlib.suppress(Exception):
                self._on_echo_closed()


__all__ = [
    "CLOSE_TIMEOUT",
    "FLUSH_INTERVAL",
    "LEVELS_INTERVAL",
    "QUEUE_SIZE",
    "JournalWriter",
    "Retention",
    "journal_files",
    "new_journal_id",
    "prune",
]
