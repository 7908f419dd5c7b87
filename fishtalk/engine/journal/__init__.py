"""The session journal: every call leaves a JSON Lines record of what happened.

- :mod:`fishtalk.engine.journal.records` turns what a session observes
  (:mod:`fishtalk.engine.observe`) into journal records (plain JSON);
- :mod:`fishtalk.engine.journal.writer` writes them from a thread (:class:`JournalWriter`),
  with the retention of the journal directory, and :mod:`fishtalk.engine.journal.audio`
  records the call's audio beside it, each on a thread of :mod:`fishtalk.engine.journal.worker`;
- :mod:`fishtalk.engine.journal.reader` reads a journal back, damage included;
- :mod:`fishtalk.workbench.journal.export` renders one as Markdown, text, JSON, SRT or WebVTT.

The format (``FORMAT``, version ``JOURNAL_VERSION``): the first line is a header record
(``type: "header"``), then one record per line, each with ``t`` (seconds on the session's
monotonic clock since the header) and ``wall`` (Unix seconds). This package's ``__init__``
imports nothing heavy.
"""

from __future__ import annotations

from typing import Final

FORMAT: Final = "fishtalk-journal"
"""The header's ``format`` value."""
JOURNAL_VERSION: Final = 2
"""The header's ``version``: bumped when records change incompatibly (2: a ``change``
record's ``t`` is its event's own ``at``, and the header's ``schema_version`` is 2; version
1 journals still read, export and replay)."""
SUFFIX: Final = ".jsonl"

__all__ = ["FORMAT", "JOURNAL_VERSION", "SUFFIX"]
