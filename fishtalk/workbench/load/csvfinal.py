"""Locust's CSV reports hold every request of the run, the last ones included.

Locust's CSV writer rewrites its files once a second and closes them at shutdown without a
last write. The sessions still running when ``--run-time`` ends finish during the shutdown
(within ``--stop-timeout``) and report their turns then, after the last rewrite: the CSV
missed them while the totals Locust printed held them (seen in a lone process's run, whose
sessions all outlast its run time). :func:`write_before_closing` makes the writer write its
rows once more as it closes its files.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

_MARK = "_fishtalk_writes_before_closing"


def write_before_closing() -> None:
    """Have every Locust CSV writer write its rows once more before it closes its files
    (once per process; what a failed last write leaves is the writer's own last rewrite).
    Locust is imported here, not with this module: see :mod:`.locustfile` for why."""
    from locust.stats import StatsCSVFileWriter

    close: Callable[[Any], None] = StatsCSVFileWriter.close_files
    if getattr(close, _MARK, False):
        return

    def close_files(writer: Any) -> None:
        with contextlib.suppress(ValueError, OSError):  # a file closed already
            _rewrite(writer)
        close(writer)

    setattr(close_files, _MARK, True)
    setattr(StatsCSVFileWriter, "close_files", close_files)  # noqa: B010 - a class attribute


def _rewrite(writer: Any) -> None:
    """The writer's own once-a-second rewrite (``stats_writer``'s loop body), once."""
    requests = writer.requests_csv_filehandle
    requests.seek(0)
    writer.requests_csv_writer.writerow(writer.requests_csv_columns)
    writer._requests_data_rows(writer.requests_csv_writer)
    requests.truncate()
    writer._stats_history_data_rows(writer.stats_history_csv_writer, time.time())
    if writer.failures_csv_data_start and writer.exceptions_csv_data_start:  # headers written
        writer.failures_csv_filehandle.seek(writer.failures_csv_data_start)
        writer._failures_data_rows(writer.failures_csv_writer)
        writer.failures_csv_filehandle.truncate()
        writer.exceptions_csv_filehandle.seek(writer.exceptions_csv_data_start)
        writer._exceptions_data_rows(writer.exceptions_csv_writer)
        writer.exceptions_csv_filehandle.truncate()


__all__ = ["write_before_closing"]
