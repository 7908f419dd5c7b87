"""Two sessions side by side (``fishtalk diff``) and the list of past ones (``sessions``).

:func:`diff` lines the sessions up turn by turn (the n-th turn of one against the n-th of
the other) and reports where the text, the speaker, the tools called in the turn (name and
params) or the timings differ. Timings differ when they are more than ``tolerance`` seconds
apart (the clock of two runs never agrees to the millisecond). Pure functions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any, Final

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


def _tools_of(data: dict[str, Any], index: int) -> list[dict[str, Any]]:
    return [
        {"name": t["name"], "params": t["params"], "status": t["status"]}
        for t in data["tools"]
        if t["turn"] == index
    ]


def _timing(turn: dict[str, Any] | None, key: str) -> float | None:
    if turn is None:
        return None
    value = turn["timings"].get(key)
    return float(value) if isinstance(value, int | float) else None


def diff(a: JournalSummary, b: JournalSummary, *, tolerance: float = TOLERANCE) -> dict[str, Any]:
    """Where ``b`` differs from ``a``, turn by turn (plain JSON data)."""
    da, db = to_data(a), to_data(b)
    rows: list[dict[str, Any]] = []
    for index, (ta, tb) in enumerate(zip_longest(da["turns"], db["turns"])):
        differences: list[str] = []
        if ta is None or tb is None:
            differences.append("missing")
        else:
            if ta["speaker"] != tb["speaker"]:
                differences.append("speaker")
            if " ".join(ta["text"].split()) != " ".join(tb["text"].split()):
                differences.append("text")
        tools_a, tools_b = _tools_of(da, index), _tools_of(db, index)
        if tools_a != tools_b:
            differences.append("tools")
        for key in ("latency", "duration"):
            va, vb = _timing(ta, key), _timing(tb, key)
            if (va is None) != (vb is None) or (
                va is not None and vb is not None and abs(va - vb) > tolerance
            ):
                differences.append(key)
        rows.append(
            {
                "index": index,
                "same": not differences,
                "differences": differences,
                "a": _side(ta, tools_a),
                "b": _side(tb, tools_b),
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


def _side(turn: dict[str, Any] | None, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    if turn is None:
        return None
    return {
        "speaker": turn["speaker"],
        "text": turn["text"],
        "start": turn["start"],
        "latency": turn["timings"]["latency"],
        "duration": turn["timings"]["duration"],
        "tools": tools,
    }


def _describe(side: dict[str, Any] | None) -> str:
    if side is None:
        return "(no turn)"
    text = " ".join(strip(side["text"]).split())
    timing = f"{side['duration']:.2f}s"
    if side["latency"] is not None:
        timing = f"after {side['latency']:.2f}s, {timing}"
    tools = ""
    if side["tools"]:
        calls = [
            f"{strip(t['name'])}({strip(json.dumps(t['params'], sort_keys=True))})"
            for t in side["tools"]
        ]
        tools = " tools: " + ", ".join(calls)
    return f"{side['speaker']} [{clock(side['start'])}, {timing}]: {text}{tools}"


def format_diff(result: dict[str, Any]) -> str:
    """The diff as text: ``=`` for a turn that matches, ``~`` for one that differs."""
    a, b = result["a"], result["b"]
    lines = [f"--- a {strip(a['journal_id'])} (ended: {strip(str(a['end']))})"]
    lines.append(f"+++ b {strip(b['journal_id'])} (ended: {strip(str(b['end']))})")
    before = result["tools_before_first_turn"]
    if before["a"] != before["b"]:
        lines.append("~ tools before the first turn differ")
    for row in result["turns"]:
        if row["same"]:
            lines.append(f"= {row['index'] + 1:>3} {_describe(row['a'])}")
            continue
        lines.append(f"~ {row['index'] + 1:>3} differs in: {', '.join(row['differences'])}")
        lines.append(f"  a   {_describe(row['a'])}")
        lines.append(f"  b   {_describe(row['b'])}")
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
        }


def list_sessions(directory: Path) -> list[SessionRow]:
    """Every journal in ``directory``, newest first; unreadable ones are listed as such."""
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
            )
        )
    return rows


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
