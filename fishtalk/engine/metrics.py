"""``fishtalk chat --metrics-json PATH``: every turn's latency waterfall, written when the
call ends.

The file is opened (created, mode 0600 like the journal) before the call starts, so a
path that cannot be written is a one-line error (exit 2) and not a lost measurement after
the call. The content is :func:`fishtalk.core.conversation.metrics` of the final state: each
closed turn's waterfall (:meth:`~fishtalk.core.conversation.Waterfall.to_dict`), each
interrupt, and the summary (p50, p95, the worst turn). :func:`settled` is the one
correction every front end makes to a closed turn once its line is known (see there).

Every mark (``user_ended_at``, ``first_text_at``, ...) is written on the journal's clock:
seconds since the call's journal began (its records' ``t``), as ``fishtalk export`` writes
them, so one turn has one time wherever it is shown. Without a journal the zero is the
moment the file was opened, just before the call started. ``clock_origin`` in the file
says which.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from fishtalk.core import conversation as conv
from fishtalk.engine.journal.reader import on_journal_clock

_log = logging.getLogger(__name__)


def settled(w: conv.Waterfall, line: conv.Segment | None) -> conv.Waterfall:
    """Turn ``w`` with an honest reason, once its answering ``line`` is known.

    The reducer closes a turn when the next user turn arrives, and calls a reply not yet
    heard by then ``interrupted``; but a reply whose line then finished uncut (its audio was
    still being paced, or there was no audio at all) was not interrupted: its reason is
    ``no audio`` (no audio arrived) or ``not heard`` (audio arrived, never played).
    """
    if w.incomplete != "interrupted" or line is None or line.interrupted or not line.final:
        return w
    return replace(w, incomplete="no audio" if w.audio_received_at is None else "not heard")


def settled_metrics(state: conv.State) -> dict[str, object]:
    """:func:`fishtalk.core.conversation.metrics` of ``state``'s latency, each turn
    :func:`settled` against its line."""
    lat = state.latency
    turns = tuple(
        settled(w, state.segment(w.segment_id) if w.segment_id else None) for w in lat.turns
    )
    return conv.metrics(replace(lat, turns=turns))


class MetricsFile:
    """An open ``--metrics-json`` file; :meth:`write` fills it once, at the end."""

    def __init__(self, path: Path, handle: TextIO, *, opened_at: float) -> None:
        self.path = path
        self._handle: TextIO | None = handle
        self.opened_at = opened_at
        """The session clock (monotonic seconds) when the file was opened."""

    @classmethod
    def open(cls, path: Path) -> MetricsFile:
        """Create (or truncate) ``path`` with mode 0600; raises ``OSError`` if it cannot be
        written (the CLI says so in one line, exit code 2)."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.chmod(path, 0o600)  # an existing file keeps its old mode through O_CREAT
        except OSError:
            os.close(fd)
            raise
        return cls(path, os.fdopen(fd, "w", encoding="utf-8"), opened_at=time.monotonic())

    def write(self, state: conv.State, *, journal_origin: float | None = None) -> None:
        """Write the call's latency (once; later calls do nothing) and close the file.
        ``journal_origin``: the session clock at the call's journal header, if one was
        written (the marks' zero; otherwise the file's opening). A write that fails is
        logged, never raised: the call is over either way."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        origin = self.opened_at if journal_origin is None else journal_origin
        measured = settled_metrics(state)
        for key in ("turns", "interrupts"):
            rows = measured[key]
            assert isinstance(rows, list)
            measured[key] = [on_journal_clock(row, origin) for row in rows]
        data = {
            "schema_version": conv.SCHEMA_VERSION,
            "end_reason": state.end_reason,
            "clock_origin": "opened" if journal_origin is None else "journal",
            **measured,
        }
        try:
            with handle:
                json.dump(data, handle, ensure_ascii=False, indent=2, allow_nan=False)
                handle.write("\n")
        except (OSError, ValueError):
            _log.warning("could not write the metrics to %s", self.path, exc_info=True)

    def close(self) -> None:
        """Close without writing (nothing is written after this)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.close()


__all__ = ["MetricsFile", "settled", "settled_metrics"]
