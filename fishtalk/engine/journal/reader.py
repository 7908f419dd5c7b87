"""Reading a journal back, damage included, and what a session was: :func:`summarize_journal`.

:func:`read_journal` never raises anything but :class:`JournalError` (one sentence, exit
code 2 at the CLI edge). A journal cut short (a crash mid-line) or with a corrupted line is
read up to the damage: :attr:`Journal.damage` says where, and the records before it are
kept. A journal written by a newer fishtalk (a higher ``version``), one with no header, or
a file that is not a journal at all is refused.

:func:`summarize_journal` turns the records into turns (who said what, when, how long the agent
took to answer), tool calls (params, result or error, timings, approval) and errors, on the
session clock (seconds since the header). Pure functions over plain data.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from fishtalk.core import conversation as conv
from fishtalk.core.conversation.changes import event_from_dict
from fishtalk.core.errors import JournalError
from fishtalk.engine.journal import FORMAT, JOURNAL_VERSION, SUFFIX

LATEST: Final = "latest"
"""The reference that names the newest journal."""
MAX_LINE_CHARS: Final = 8_000_000
"""A line longer than this is damage, not a record."""


@dataclass(frozen=True, slots=True)
class Journal:
    """A journal as read: its header, the readable records, and the damage (if any)."""

    path: Path | None
    header: Mapping[str, Any]
    records: tuple[Mapping[str, Any], ...]
    damage: str | None = None
    """One sentence saying where the journal is damaged; None when intact."""

    @property
    def journal_id(self) -> str:
        """The journal's id: its file stem (what the commands accept), else the header's."""
        if self.path is not None:
            return self.path.stem
        value = self.header.get("journal_id")
        return value if isinstance(value, str) else ""

    @property
    def session_id(self) -> str | None:
        """The Fish session id: the header's, else the grant record's."""
        value = self.header.get("session_id")
        if isinstance(value, str) and value:
            return value
        for rec in self.records:
            if rec.get("type") == "grant" and isinstance(rec.get("session_id"), str):
                return str(rec["session_id"])
        return None


def parse_lines(lines: Iterable[str], *, path: Path | None = None) -> Journal:
    """A journal from its lines (see :func:`read_journal`)."""
    name = str(path) if path is not None else "the journal"
    header: dict[str, Any] | None = None
    records: list[Mapping[str, Any]] = []
    damage: str | None = None
    number = 0
    for number, raw in enumerate(lines, start=1):
        complete = raw.endswith("\n")
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        try:
            if len(line) > MAX_LINE_CHARS:
                raise ValueError("line too long")
            record = json.loads(line)
        except (ValueError, RecursionError):
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            if header is None:
                raise JournalError(f"{name} is not a fishtalk journal (line {number} unreadable)")
            what = "is cut short" if not complete else "is corrupted"
            damage = f"{name} {what} at line {number}; read the {len(records)} records before it"
            break
        if header is None:
            if record.get("type") != "header" or record.get("format") != FORMAT:
                raise JournalError(f"{name} is not a fishtalk journal (no journal header)")
            version = record.get("version")
            if not isinstance(version, int) or version > JOURNAL_VERSION:
                raise JournalError(
                    f"{name} was written by a newer fishtalk (journal version {version}; this "
                    f"fishtalk reads up to {JOURNAL_VERSION}): upgrade fishtalk to read it"
                )
            header = record
            continue
        records.append(record)
    if header is None:
        raise JournalError(f"{name} is empty: no journal header")
    return Journal(path, header, tuple(records), damage)


def read_journal(path: Path) -> Journal:
    """Read the journal at ``path``; raises :class:`JournalError` (one sentence)."""
    try:
        with path.open(encoding="utf-8", errors="replace", newline="\n") as handle:
            return parse_lines(handle, path=path)
    except FileNotFoundError:
        raise JournalError(f"no journal at {path}") from None
    except IsADirectoryError:
        raise JournalError(f"{path} is a directory, not a journal") from None
    except OSError as exc:
        raise JournalError(f"cannot read {path}: {exc.strerror or exc}") from None


def find_journal(ref: str, directory: Path) -> Path:
    """The journal ``ref`` names: a file path, ``latest``, a journal id (or a unique prefix
    of one) in ``directory``, or a Fish session id; raises :class:`JournalError`."""
    candidate = Path(ref).expanduser()
    if candidate.is_file():
        return candidate
    from fishtalk.engine.journal.writer import journal_files

    files = journal_files(directory)
    if ref == LATEST:
        if not files:
            raise JournalError(f"no journals yet in {directory}")
        return files[-1]
    exact = [p for p in files if p.stem == ref]
    if exact:
        return exact[0]
    prefixed = [p for p in files if p.stem.startswith(ref)]
    if len(prefixed) == 1:
        return prefixed[0]
    if len(prefixed) > 1:
        raise JournalError(f"{ref!r} matches {len(prefixed)} journals; give more of the id")
    for path in files:
        with_id = _session_id_of(path)
        if with_id == ref:
            return path
    if ref.endswith(SUFFIX) or "/" in ref:
        raise JournalError(f"no journal at {ref}")
    raise JournalError(f"no journal {ref!r} in {directory} (`fishtalk sessions` lists them)")


def _session_id_of(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle):
                if number > 200:
                    return None
                if '"grant"' in line or '"header"' in line:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        return None
                    sid = rec.get("session_id") if isinstance(rec, dict) else None
                    if isinstance(sid, str) and sid:
                        return sid
    except OSError:
        return None
    return None


def clock_origin(journal: Journal) -> float:
    """The session clock (monotonic seconds) at the journal's header: the zero of its
    ``t``. The header says (``mono``); a journal written before it did is dated by its
    first agent or user line (a line opens at the time its record is stamped with)."""
    value = journal.header.get("mono")
    if isinstance(value, int | float):
        return float(value)
    for rec in journal.records:
        segment = rec.get("segment")
        if rec.get("kind") == "segment_opened" and isinstance(segment, dict):
            started = segment.get("started_at")
            if isinstance(started, int | float):
                return float(started) - _num(rec.get("t"))
    return 0.0


MARKS: Final = frozenset(
    {
        "user_ended_at",
        "user_final_at",
        "thinking_at",
        "first_text_at",
        "audio_received_at",
        "audio_handed_at",
        "pressed_at",
        "flushed_at",
        "wire_stopped_at",
    }
)
"""The marks of a waterfall or an interrupt timing: times on the session clock."""


def on_journal_clock(marks: Mapping[str, Any], origin: float) -> dict[str, Any]:
    """A waterfall's or interrupt's dict with its marks (:data:`MARKS`) moved from the
    session's monotonic clock to the journal's (seconds since the header, like every
    ``t``): one clock for every time a journal's readers show. Figures (``*_ms``) are
    differences of two marks and stay as they are."""
    return {
        key: round(value - origin, 6)
        if key in MARKS and isinstance(value, int | float) and not isinstance(value, bool)
        else value
        for key, value in marks.items()
    }


def _rebased(rec: Mapping[str, Any], origin: float) -> Mapping[str, Any]:
    for key in ("waterfall", "interrupt"):
        value = rec.get(key)
        if isinstance(value, dict):
            return {**rec, key: on_journal_clock(value, origin)}
    return rec


def change_events(journal: Journal) -> list[conv.Change]:
    """The typed events of ``journal``'s ``change`` records (any journal version), each
    ``at`` on the journal's clock (its record's ``t``: seconds since the header), and so
    are the marks of its latency events (:func:`on_journal_clock`)."""
    origin = clock_origin(journal)
    return [
        event_from_dict(
            {**_rebased(rec, origin), "type": rec.get("kind"), "at": _num(rec.get("t"))}
        )
        for rec in journal.records
        if rec.get("type") == "change"
    ]


# --- what a session was ----------------------------------------------------------------


@dataclass(slots=True)
class Turn:
    """One transcript line: who, what, and when (seconds on the session clock)."""

    speaker: str
    """``user`` or ``agent``."""
    text: str
    start: float
    end: float
    segment_id: str
    typed: bool = False
    interrupted: bool = False
    final: bool = False
    first_text: float | None = None
    """For an agent line that began the reply to a user turn: the reply's *first text*,
    seconds from the end of the user's turn to this line's first text
    (:attr:`~fishtalk.core.conversation.Waterfall.first_text`, from the line's
    ``turn_latency`` record: the reducer's one rule binds a reply to its turn)."""
    heard: float | None = None
    """For that line: the reply's *heard* latency, seconds
    (:attr:`~fishtalk.core.conversation.Waterfall.heard`), when it has one."""
    heard_text: str | None = None
    """For the first line of a reply whose audio was heard offline (a ``heard`` record):
    the words heard, with :attr:`heard_method` and :attr:`heard_confidence`."""
    heard_method: str | None = None
    heard_confidence: float | None = None

    @property
    def duration(self) -> float:
        """Seconds from the first to the last text of the turn."""
        return max(0.0, self.end - self.start)


@dataclass(slots=True)
class ToolCall:
    """One tool call: the agent's own (``source`` webhook, mcp...) or a client tool."""

    call_id: str
    name: str
    source: str
    start: float
    end: float | None = None
    status: str = "running"
    params: Any = None
    result: Any = None
    error: str | None = None
    client: bool = False
    approval: str | None = None
    run_duration: float | None = None
    turn: int | None = None
    """Index of the turn during which the call started (None: before the first)."""
    truncated: bool = False
    """The agent cut the call's input or output short before sending it."""

    @property
    def duration(self) -> float | None:
        """Seconds from the call's start to its end, when it ended."""
        return None if self.end is None else max(0.0, self.end - self.start)


@dataclass(slots=True)
class JournalSummary:
    """What a session was, from its journal."""

    journal: Journal
    turns: list[Turn] = field(default_factory=list)
    tools: list[ToolCall] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    end_reason: str | None = None
    end_message: str | None = None
    duration: float = 0.0
    """Seconds from the header to the call's end (to the last record if it never ended)."""
    latency_turns: list[dict[str, Any]] = field(default_factory=list)
    """Each ``turn_latency`` record's waterfall (``Waterfall.to_dict()``), in order, its
    marks on the journal's clock (:func:`on_journal_clock`)."""
    latency_interrupts: list[dict[str, Any]] = field(default_factory=list)
    """Each ``interrupt_latency`` record's timing, in order (marks as above)."""
    reply_audio: list[dict[str, Any]] = field(default_factory=list)
    """Each ``reply_audio`` record's report (how a reply sounded), in order."""

    @property
    def started_at(self) -> str:
        """The header's ISO start time."""
        return str(self.journal.header.get("started_at") or "")

    @property
    def agent_id(self) -> str:
        """The agent id from the header ("" when unknown)."""
        return str(self.journal.header.get("agent_id") or "")


def _num(value: object, default: float = 0.0) -> float:
    return float(value) if isinstance(value, int | float) else default


def summarize_journal(journal: Journal) -> JournalSummary:
    """Turns, tool calls, errors and the end of ``journal``."""
    out = JournalSummary(journal)
    by_segment: dict[str, Turn] = {}
    tools: dict[str, ToolCall] = {}
    heard_by_segment: dict[str, Mapping[str, Any]] = {}
    last_t = 0.0
    ended_at: float | None = None
    for rec in journal.records:
        t = _num(rec.get("t"), last_t)
        last_t = max(last_t, t)
        kind = rec.get("type")
        if kind == "change":
            _apply_change(out, rec, t, by_segment, tools)
        elif kind == "tool_run":
            call_id = str(rec.get("call_id"))
            call = tools.get(call_id)
            if call is None:
                start = t - _num(rec.get("duration"))
                call = tools[call_id] = ToolCall(
                    call_id, str(rec.get("tool_name")), "client", start
                )
            call.client = True
            call.params = rec.get("params")
            call.result = rec.get("result")
            call.error = rec.get("error") or call.error
            call.status = str(rec.get("status") or call.status)
            call.approval = rec.get("approval")
            call.run_duration = _num(rec.get("duration"))
            call.end = call.end if call.end is not None else t
        elif kind == "heard":
            ids = rec.get("segment_ids")
            if isinstance(ids, list) and ids:
                heard_by_segment[str(ids[0])] = rec  # the reply's first line shows it
        elif kind == "end":
            out.end_reason = str(rec.get("reason") or "") or None
            out.end_message = rec.get("message") if isinstance(rec.get("message"), str) else None
            ended_at = t if ended_at is None else ended_at
        if ended_at is None and kind == "change" and rec.get("kind") == "ended":
            ended_at = t
    # The call lasts until it ended (the reducer's ``ended``, else the ``end`` record), not
    # until the journal closed: a front end's ended screen is not part of the call.
    out.duration = ended_at if ended_at is not None else last_t
    out.turns.sort(key=lambda turn: turn.start)
    origin = clock_origin(journal)
    out.latency_turns = [on_journal_clock(w, origin) for w in out.latency_turns]
    out.latency_interrupts = [on_journal_clock(i, origin) for i in out.latency_interrupts]
    _bind_measures(out)
    for turn in out.turns:
        found = heard_by_segment.get(turn.segment_id)
        if turn.speaker == "agent" and found is not None:
            turn.heard_text = str(found.get("heard_text") or "")
            turn.heard_method = str(found.get("method") or "")
            turn.heard_confidence = _num(found.get("confidence"))
    out.tools = sorted(tools.values(), key=lambda call: call.start)
    for call in out.tools:
        index = None
        for i, turn in enumerate(out.turns):
            if turn.start <= call.start:
                index = i
        call.turn = index
    return out


def _seconds(ms: object) -> float | None:
    return float(ms) / 1000.0 if isinstance(ms, int | float) and not isinstance(ms, bool) else None


def _bind_measures(out: JournalSummary) -> None:
    """Each reply's measures onto the agent line that began it: the waterfall names that
    line (``segment_id``), so a line answering no user turn (the greeting) gets none and
    every export, diff and report shows the reducer's figures, never a guess of its own."""
    by_segment = {
        str(w["segment_id"]): w
        for w in out.latency_turns
        if w.get("segment_id") and w.get("kind") != "unprompted"
    }
    if not by_segment:
        return
    for turn in out.turns:
        w = by_segment.pop(turn.segment_id, None) if turn.speaker == "agent" else None
        if w is not None:
            turn.first_text = _seconds(w.get("first_text_ms"))
            turn.heard = _seconds(w.get("heard_ms"))


def _maybe_json(value: Any) -> Any:
    """A server tool's input/output arrives as JSON text: the value when it parses."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _apply_change(
    out: JournalSummary,
    rec: Mapping[str, Any],
    t: float,
    by_segment: dict[str, Turn],
    tools: dict[str, ToolCall],
) -> None:
    kind = rec.get("kind")
    if kind == "reply_audio":
        if isinstance(rec.get("report"), dict):
            out.reply_audio.append(dict(rec["report"]))
        return
    if kind == "turn_latency" or kind == "interrupt_latency":
        value = rec.get("waterfall" if kind == "turn_latency" else "interrupt")
        if isinstance(value, dict):
            target = out.latency_turns if kind == "turn_latency" else out.latency_interrupts
            target.append(dict(value))
        return
    segment = rec.get("segment")
    if isinstance(segment, dict):
        key = f"{segment.get('role')}:{segment.get('segment_id')}:{segment.get('seq')}"
        turn = by_segment.get(key)
        if turn is None:
            role = "user" if segment.get("role") == "user" else "agent"
            turn = Turn(role, "", t, t, str(segment.get("segment_id") or ""))
            by_segment[key] = turn
            out.turns.append(turn)
        text = segment.get("text")
        if isinstance(text, str) and text != turn.text:
            turn.text = text
            turn.end = t
        turn.typed = bool(segment.get("typed"))
        turn.interrupted = bool(segment.get("interrupted"))
        if segment.get("final") and not turn.final:
            turn.final = True
            turn.end = t
        return
    card = rec.get("card")
    if isinstance(card, dict):
        call_id = str(card.get("call_id"))
        call = tools.get(call_id)
        if call is None:
            call = tools[call_id] = ToolCall(
                call_id, str(card.get("tool_name")), str(card.get("source") or ""), t
            )
        client = card.get("client")
        if card.get("input_truncated") or card.get("output_truncated"):
            call.truncated = True
        call.status = str(card.get("status") or call.status)
        if isinstance(client, dict):
            call.client = True
            call.params = client.get("params", call.params)
            call.status = str(client.get("status") or call.status)
            call.error = client.get("error") or call.error
            if call.result is None and client.get("result_preview") is not None:
                call.result = client.get("result_preview")
        else:
            call.params = _maybe_json(card.get("input", call.params))
            if card.get("output") is not None:
                call.result = _maybe_json(card.get("output"))
            call.error = card.get("error") or call.error
        if call.status not in ("running", "pending", "waiting") and call.end is None:
            call.end = t
        return
    if kind == "error" and isinstance(rec.get("error"), dict):
        out.errors.append({"t": t, **rec["error"]})


__all__ = [
    "MARKS",
    "Journal",
    "JournalError",
    "JournalSummary",
    "ToolCall",
    "Turn",
    "change_events",
    "clock_origin",
    "find_journal",
    "on_journal_clock",
    "parse_lines",
    "read_journal",
    "summarize_journal",
]
