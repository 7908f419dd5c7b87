"""Two sessions side by side (``fishtalk diff``) and the list of past ones (``sessions``).

:func:`diff` aligns the sessions' turns as :mod:`difflib` aligns lines: an exchange (a user turn and
the lines after it) aligns on the user's words. So one extra early turn is an insertion
(``+``) and the turns after it still face their counterparts; each pair
reports where the text, the speaker, the tools called in the turn (name and params) or the
measures differ (``=``/``~``). Turns are numbered from 1, in text and JSON alike; a
reply's measures are the journal's (*first text*, *heard*: :mod:`.export`), and differ when
they are more than ``tolerance`` seconds apart (the clocks of two runs never agree to the
millisecond). Pure functions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import zip_longest
from pathlib import Path
from typing import Any, Final

from fishtalk.core.conversation.latency import measure_words
from fishtalk.core.errors import JournalError
from fishtalk.core.text import strip
from fishtalk.engine.journal.reader import (
    JournalSummary,
    read_journal,
    summarize_journal,
)
from fishtalk.workbench.journal.export import clock, to_data

TOLERANCE: Final = 0.5
"""Seconds two timings may differ by and still count as the same."""
MEASURES: Final = (("first_text_ms", 1000.0), ("heard_ms", 1000.0), ("duration", 1.0))
"""The timings compared, each with its units per second."""


def _tools_of(data: dict[str, Any], index: int) -> list[dict[str, Any]]:
    return [
        {"name": t["name"], "params": t["params"], "status": t["status"]}
        for t in data["tools"]
        if t["turn"] == index
    ]


def _timing(turn: dict[str, Any] | None, key: str, per_second: float) -> float | None:
    if turn is None:
        return None
    value = turn["timings"].get(key)
    return float(value) / per_second if isinstance(value, int | float) else None


def _words(text: str) -> str:
    return " ".join(text.split()).casefold()


def _exchanges(turns: list[dict[str, Any]]) -> list[list[int]]:
    """The turns' indexes in exchanges: a user turn and the lines after it (the first
    exchange may have no user turn: the greeting)."""
    out: list[list[int]] = []
    for index, turn in enumerate(turns):
        if turn["speaker"] == "user" or not out:
            out.append([])
        out[-1].append(index)
    return out


def _key(turns: list[dict[str, Any]], exchange: list[int]) -> str:
    """What aligning compares: the words of the exchange's user turn."""
    first = turns[exchange[0]]
    return _words(first["text"]) if first["speaker"] == "user" else ""


def _pairs(
    ta: list[dict[str, Any]], tb: list[dict[str, Any]]
) -> list[tuple[int | None, int | None]]:
    """The aligned turn indexes of ``a`` and ``b`` (None: the turn has no counterpart).
    Exchanges align on their user turn's words (:class:`difflib.SequenceMatcher`); within
    two aligned exchanges the lines face each other in order."""
    ea, eb = _exchanges(ta), _exchanges(tb)
    matcher = SequenceMatcher(
        None, [_key(ta, e) for e in ea], [_key(tb, e) for e in eb], autojunk=False
    )
    pairs: list[tuple[int | None, int | None]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        facing: list[tuple[list[int], list[int]]]
        if op in ("equal", "replace"):
            facing = [(x or [], y or []) for x, y in zip_longest(ea[i1:i2], eb[j1:j2])]
        elif op == "delete":
            facing = [(x, []) for x in ea[i1:i2]]
        else:
            facing = [([], y) for y in eb[j1:j2]]
        for left, right in facing:
            pairs += list(zip_longest(left, right))
    return pairs


def _compare(
    da: dict[str, Any], db: dict[str, Any], i: int | None, j: int | None, tolerance: float
) -> tuple[str, list[str]]:
    ta = da["turns"][i] if i is not None else None
    tb = db["turns"][j] if j is not None else None
    if ta is None:
        return "inserted", []
    if tb is None:
        return "deleted", []
    differences: list[str] = []
    if ta["speaker"] != tb["speaker"]:
        differences.append("speaker")
    if " ".join(ta["text"].split()) != " ".join(tb["text"].split()):
        differences.append("text")
    if _tools_of(da, ta["index"]) != _tools_of(db, tb["index"]):
        differences.append("tools")
    for key, per_second in MEASURES:
        va, vb = _timing(ta, key, per_second), _timing(tb, key, per_second)
        if (va is None) != (vb is None) or (
            va is not None and vb is not None and abs(va - vb) > tolerance
        ):
            differences.append(key.removesuffix("_ms"))
    return ("differs" if differences else "same"), differences


def diff(a: JournalSummary, b: JournalSummary, *, tolerance: float = TOLERANCE) -> dict[str, Any]:
    """Where ``b`` differs from ``a``, turn by turn, aligned (plain JSON data): each row has
    ``change`` (``same``, ``differs``, ``inserted`` in b, ``deleted`` from a), the turn
    numbers ``a_turn``/``b_turn`` (from 1; None on the side without it), the
    ``differences`` and each side."""
    da, db = to_data(a), to_data(b)
    rows: list[dict[str, Any]] = []
    for i, j in _pairs(da["turns"], db["turns"]):
        change, differences = _compare(da, db, i, j, tolerance)
        rows.append(
            {
                "a_turn": None if i is None else i + 1,
                "b_turn": None if j is None else j + 1,
                "change": change,
                "same": change == "same",
                "differences": differences,
                "a": _side(da, i),
                "b": _side(db, j),
            }
        )
    before_a, before_b = _tools_before(da), _tools_before(db)
    return {
        "a": {"journal_id": da["journal_id"], "end": da["end"]["reason"]},
        "b": {"journal_id": db["journal_id"], "end": db["end"]["reason"]},
        "same": all(r["same"] for r in rows)
        and before_a == before_b
        and da["end"]["reason"] == db["end"]["reason"],
        "tools_before_first_turn": {"a": before_a, "b": before_b},
        "turns": rows,
    }


def _tools_before(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": t["name"], "params": t["params"]} for t in data["tools"] if t["turn"] is None]


def _side(data: dict[str, Any], index: int | None) -> dict[str, Any] | None:
    if index is None:
        return None
    turn = data["turns"][index]
    return {
        "speaker": turn["speaker"],
        "text": turn["text"],
        "start": turn["start"],
        **turn["timings"],
        "tools": _tools_of(data, index),
    }


def _describe(side: dict[str, Any] | None) -> str:
    if side is None:
        return "(no turn)"
    text = " ".join(strip(side["text"]).split())
    first, heard = side["first_text_ms"], side["heard_ms"]
    timing = ", ".join(
        [
            *measure_words(
                None if first is None else first / 1000.0,
                None if heard is None else heard / 1000.0,
            ),
            f"lasted {side['duration']:.2f} s",
        ]
    )
    tools = ""
    if side["tools"]:
        calls = [
            f"{strip(t['name'])}({strip(json.dumps(t['params'], sort_keys=True))})"
            for t in side["tools"]
        ]
        tools = " tools: " + ", ".join(calls)
    return f"{side['speaker']} [{clock(side['start'])}, {timing}]: {text}{tools}"


def _number(row: dict[str, Any]) -> str:
    a, b = row["a_turn"], row["b_turn"]
    return f"{'-' if a is None else a:>3}/{'-' if b is None else b:<3}"


MARKS: Final = {"same": "=", "differs": "~", "inserted": "+", "deleted": "-"}
"""The text diff's mark of each ``change``."""


def format_diff(result: dict[str, Any]) -> str:
    """The diff as text: ``=`` a turn that matches, ``~`` one that differs, ``+`` a turn
    only b has, ``-`` one only a has; ``A/B`` are the turn numbers on each side."""
    a, b = result["a"], result["b"]
    lines = [f"--- a {strip(a['journal_id'])} (ended: {strip(str(a['end']))})"]
    lines.append(f"+++ b {strip(b['journal_id'])} (ended: {strip(str(b['end']))})")
    before = result["tools_before_first_turn"]
    if before["a"] != before["b"]:
        lines.append("~ tools before the first turn differ")
    for row in result["turns"]:
        mark, number = MARKS[row["change"]], _number(row)
        if row["change"] == "same":
            lines.append(f"{mark} {number} {_describe(row['a'])}")
        elif row["change"] == "inserted":
            lines.append(f"{mark} {number} only in b: {_describe(row['b'])}")
        elif row["change"] == "deleted":
            lines.append(f"{mark} {number} only in a: {_describe(row['a'])}")
        else:
            lines.append(f"{mark} {number} differs in: {', '.join(row['differences'])}")
            lines.append(f"  a       {_describe(row['a'])}")
            lines.append(f"  b       {_describe(row['b'])}")
    lines.append("same" if result["same"] else "different")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One past session, for ``fishtalk sessions``."""

    journal_id: str
    path: Path
    started_at: str
    agent_id: str
    duration: float
    turns: int
    tools: int
    errors: int
    end_reason: str
    damage: str | None
    opened: bool = True
    """A session was opened (the journal holds its grant); False for a session request
    that failed, whose journal keeps only why."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return {
            "id": self.journal_id,
            "path": str(self.path),
            "started_at": self.started_at,
            "agent_id": self.agent_id,
            "duration": round(self.duration, 3),
            "turns": self.turns,
            "tools": self.tools,
            "errors": self.errors,
            "end_reason": self.end_reason,
            "damage": self.damage,
            "opened": self.opened,
        }


def list_sessions(directory: Path, *, requests: bool = False) -> list[SessionRow]:
    """The sessions journaled in ``directory``, newest first; unreadable journals are listed
    as such. A session request that failed opened no session: its journal is kept (it says
    why, and a ``fishtalk test`` failure names it) but it is not a session, so it is listed
    only with ``requests``."""
    from fishtalk.engine.journal.writer import journal_files

    rows = []
    for path in reversed(journal_files(directory)):
        try:
            summary = summarize_journal(read_journal(path))
        except JournalError as exc:
            rows.append(SessionRow(path.stem, path, "", "", 0.0, 0, 0, 0, "unreadable", str(exc)))
            continue
        rows.append(
            SessionRow(
                summary.journal.journal_id,
                path,
                summary.started_at,
                summary.agent_id,
                summary.duration,
                len(summary.turns),
                len(summary.tools),
                len(summary.errors),
                summary.end_reason or "unfinished",
                summary.journal.damage,
                opened=summary.journal.session_id is not None,
            )
        )
    return rows if requests else [row for row in rows if row.opened]


def format_sessions(rows: list[SessionRow]) -> str:
    """A table: id, when, agent, duration, turns, tools, errors, end reason."""
    header = ("ID", "STARTED", "AGENT", "DURATION", "TURNS", "TOOLS", "ERRORS", "ENDED")
    table = [header]
    for row in rows:
        when = row.started_at[:19].replace("T", " ")
        end = row.end_reason + (" (damaged)" if row.damage else "")
        table.append(
            (
                row.journal_id,
                when,
                strip(row.agent_id),
                clock(row.duration),
                str(row.turns),
                str(row.tools),
                str(row.errors),
                strip(end),
            )
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table
    ]
    return "\n".join(lines) + "\n"


__all__ = ["TOLERANCE", "SessionRow", "diff", "format_diff", "format_sessions", "list_sessions"]
