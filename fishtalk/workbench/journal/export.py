"""A journal rendered for people and programs: Markdown, text, JSON, SRT and WebVTT.

Every time is on the session clock (seconds since the journal's header), so the cues of
``srt``/``vtt`` line up with a recording of the call; the latency waterfall's marks too
(:func:`~fishtalk.engine.journal.reader.on_journal_clock`). A reply's measures have one
name, one value and one wording everywhere: *first text* and *heard*, the reducer's
waterfall figures bound to the line that began the reply (``first text 0.43 s`` in text,
``first_text_ms: 432.8`` in JSON, as in ``--metrics-json``). Remote text is written as it was
said, minus control characters (:func:`fishtalk.core.text.strip`): an export is safe to ``cat``.
Pure functions: they return the text.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal, TypeAlias

from fishtalk.core.conversation.latency import measure_words, percentile
from fishtalk.core.conversation.reply_audio import (
    DEFAULT_BUDGETS,
    ReplyAudioReport,
    audio_note,
    problems,
    worst_note,
)
from fishtalk.core.text import json_escape, strip
from fishtalk.engine.journal.reader import JournalSummary, ToolCall, Turn

Format: TypeAlias = Literal["md", "txt", "json", "srt", "vtt"]
FORMATS: Final[tuple[Format, ...]] = ("md", "txt", "json", "srt", "vtt")
SPEAKERS: Final = {"user": "User", "agent": "Agent"}
MIN_CUE: Final = 0.5
"""Seconds a subtitle cue lasts at least (a typed turn has no duration of its own)."""


def clock(seconds: float) -> str:
    """``M:SS.s`` (or ``H:MM:SS.s``) for transcripts."""
    tenths = round(max(0.0, seconds) * 10)
    hours, rest = divmod(tenths, 36000)
    minutes, rest = divmod(rest, 600)
    secs, tenth = divmod(rest, 10)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}.{tenth}"
    return f"{minutes}:{secs:02d}.{tenth}"


def cue_time(seconds: float, sep: str) -> str:
    """``HH:MM:SS,mmm`` (SRT, ``sep=","``) or ``HH:MM:SS.mmm`` (WebVTT)."""
    ms = round(max(0.0, seconds) * 1000)
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{sep}{millis:03d}"


def _line(text: str) -> str:
    return " ".join(strip(text).split())


MAX_VALUE_CHARS: Final = 300
"""A tool's params or result longer than this is cut in ``md``/``txt`` (``json`` keeps all)."""


def _compact(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        text = _line(value)
    else:
        text = _line(json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True))
    if len(text) > MAX_VALUE_CHARS:
        more = len(text) - MAX_VALUE_CHARS
        text = f"{text[:MAX_VALUE_CHARS]}… [{more} more characters]"
    return text


def _turn_note(turn: Turn) -> str:
    notes = []
    if turn.typed:
        notes.append("typed")
    if turn.interrupted:
        notes.append("interrupted")
    notes += measure_words(turn.first_text, turn.heard)
    if turn.heard_text is not None:
        notes.append(heard_note(turn.heard_text, turn.heard_method, turn.heard_confidence))
    return f" ({', '.join(notes)})" if notes else ""


def heard_note(text: str, method: str | None, confidence: float | None) -> str:
    """What a reply's audio said, in a few words: ``audio said "..." (alignment, 0.93)``."""
    if method == "none" or not text:
        return "audio: heard nothing"
    how = {"align": "alignment", "free": "free decoding"}.get(method or "", method or "?")
    return f"audio said {text!r} ({how}, {confidence or 0.0:.2f})"


def _tool_line(call: ToolCall) -> str:
    kind = "client tool" if call.client else f"tool ({call.source})" if call.source else "tool"
    params = _compact(call.params)
    outcome = call.status
    if call.error:
        outcome += f": {_line(call.error)}"
    elif call.result is not None:
        outcome += f" -> {_compact(call.result)}"
    took = f", {call.duration:.2f} s" if call.duration is not None else ""
    approval = f", {call.approval}" if call.approval else ""
    cut = " [truncated by the agent]" if call.truncated else ""
    return f"{kind} {_line(call.name)}({params}) {outcome}{took}{approval}{cut}"


def events(
    summary: JournalSummary,
) -> list[tuple[float, int, str, Turn | ToolCall | dict[str, Any]]]:
    """The session as one timeline: (time, order, kind, item) for each turn (``turn``), tool
    call (``tool``) and error (``error``), sorted by time."""
    items: list[tuple[float, int, str, Turn | ToolCall | dict[str, Any]]] = []
    for turn in summary.turns:
        items.append((turn.start, 0, "turn", turn))
    for call in summary.tools:
        items.append((call.start, 1, "tool", call))
    for error in summary.errors:
        items.append((float(error.get("t", 0.0)), 2, "error", error))
    items.sort(key=lambda item: (item[0], item[1]))
    return items


def _heading(summary: JournalSummary) -> list[str]:
    journal = summary.journal
    return [
        f"agent: {_line(summary.agent_id) or '?'}",
        f"session: {_line(journal.session_id or '?')}",
        f"started: {_line(summary.started_at)}",
        f"duration: {clock(summary.duration)}",
        f"ended: {_line(summary.end_reason or 'unfinished')}",
    ]


def _reports(summary: JournalSummary) -> list[ReplyAudioReport]:
    """The journal's reply-audio reports this version can read (another version's are in
    the JSON export only, as recorded)."""
    reports = (ReplyAudioReport.from_record(data) for data in summary.reply_audio)
    return [report for report in reports if report is not None]


def audio_notes(summary: JournalSummary) -> list[str]:
    """How each reply sounded: one line per reply (its figures, then what is wrong with it
    by :data:`~fishtalk.core.conversation.reply_audio.DEFAULT_BUDGETS`)."""
    notes = []
    for report in _reports(summary):
        figures = [f"longest gap {report.longest_gap:.2f} s", f"clipping {report.clipping:.1%}"]
        if report.leading_from_text is not None:
            figures.insert(0, f"leading silence {report.leading_from_text:.2f} s")
        if report.loudness is not None:
            figures.append(f"{report.loudness:.1f} LUFS")
        if report.talk_over:
            figures.append(f"talk-over {report.talk_over:.2f} s")
        if report.after_interrupt is not None:
            figures.append(f"{report.after_interrupt:.2f} s after the interrupt")
        wrong = [p.text.split(": ", 1)[1] for p in problems(report, DEFAULT_BUDGETS)]
        notes.append(
            f"reply {report.reply}: {', '.join(figures)}" + "".join(f"; {w}" for w in wrong)
        )
    return notes


def audio_problems(summary: JournalSummary) -> list[dict[str, Any]]:
    """Each reply's problems by :data:`~fishtalk.core.conversation.reply_audio.DEFAULT_BUDGETS`
    as JSON data, in reply order: ``{"reply", "check", "text"}``."""
    return [
        {"reply": p.reply, "check": p.check, "text": p.text}
        for report in _reports(summary)
        for p in problems(report, DEFAULT_BUDGETS)
    ]


def to_txt(summary: JournalSummary) -> str:
    """Plain text: one line per turn, tool call and error, with its time."""
    lines = [*_heading(summary), ""]
    for at, _, kind, item in events(summary):
        if isinstance(item, Turn):
            speaker = SPEAKERS.get(item.speaker, item.speaker)
            lines.append(f"[{clock(at)}] {speaker}: {_line(item.text)}{_turn_note(item)}")
        elif isinstance(item, ToolCall):
            lines.append(f"[{clock(at)}] * {_tool_line(item)}")
        else:
            lines.append(f"[{clock(at)}] ! {_line(str(item.get('message') or item.get('code')))}")
        del kind
    if summary.reply_audio:
        head = audio_note(_reports(summary))
        lines += ["", f"audio: {head}" if head else "audio:"]
        lines += [f"  {note}" for note in audio_notes(summary)]
    return "\n".join(lines) + "\n"


def to_md(summary: JournalSummary) -> str:
    """Markdown: a heading, the facts, then the conversation."""
    title = _line(summary.agent_id) or "session"
    lines = [f"# Conversation with {title}", ""]
    lines += [f"- {fact}" for fact in _heading(summary)]
    lines.append("")
    for at, _, _kind, item in events(summary):
        if isinstance(item, Turn):
            speaker = SPEAKERS.get(item.speaker, item.speaker)
            text = _line(item.text).replace("*", "\\*").replace("_", "\\_")
            lines.append(f"**{speaker}** `{clock(at)}`{_turn_note(item)}: {text}")
        elif isinstance(item, ToolCall):
            lines.append(f"> `{clock(at)}` {_tool_line(item)}")
        else:
            lines.append(f"> `{clock(at)}` error: {_line(str(item.get('message') or ''))}")
        lines.append("")
    if summary.reply_audio:
        lines += ["## How the replies sounded", ""]
        head = audio_note(_reports(summary))
        if head:
            lines += [f"{head[:1].upper()}{head[1:]}.", ""]
        lines += [f"- {n}" for n in audio_notes(summary)]
    return "\n".join(lines).rstrip("\n") + "\n"


def _tool_dict(call: ToolCall) -> dict[str, Any]:
    return {
        "call_id": call.call_id,
        "name": call.name,
        "source": call.source,
        "client": call.client,
        "params": call.params,
        "status": call.status,
        "result": call.result,
        "error": call.error,
        "approval": call.approval,
        "start": round(call.start, 3),
        "end": round(call.end, 3) if call.end is not None else None,
        "duration": round(call.duration, 3) if call.duration is not None else None,
        "turn": call.turn,
    }


def _ms(seconds: float | None) -> float | None:
    # As the waterfall writes its figures (Waterfall.to_dict): one value, one rounding.
    return None if seconds is None else round(seconds * 1000.0, 1)


def to_data(summary: JournalSummary) -> dict[str, Any]:
    """The summary as plain JSON data (what ``--format json`` prints)."""
    journal = summary.journal
    turns = []
    for index, turn in enumerate(summary.turns):
        turns.append(
            {
                "index": index,
                "speaker": turn.speaker,
                "text": turn.text,
                "start": round(turn.start, 3),
                "end": round(turn.end, 3),
                "typed": turn.typed,
                "interrupted": turn.interrupted,
                "timings": {
                    "duration": round(turn.duration, 3),
                    "first_text_ms": _ms(turn.first_text),
                    "heard_ms": _ms(turn.heard),
                },
                "tools": [c.call_id for c in summary.tools if c.turn == index],
            }
        )
        if turn.heard_text is not None:
            # Only in journals `fishtalk test` heard: other exports stay as they were.
            turns[-1]["heard"] = {
                "text": turn.heard_text,
                "method": turn.heard_method,
                "confidence": turn.heard_confidence,
            }
    return {
        "journal_id": journal.journal_id,
        "session_id": journal.session_id,
        "agent_id": summary.agent_id or None,
        "started_at": summary.started_at or None,
        "fishtalk_version": journal.header.get("fishtalk_version"),
        "duration": round(summary.duration, 3),
        "end": {"reason": summary.end_reason, "message": summary.end_message},
        "turns": turns,
        "tools": [_tool_dict(c) for c in summary.tools],
        "errors": summary.errors,
        "latency": latency_data(summary),
        "reply_audio": summary.reply_audio,
        "audio_problems": audio_problems(summary),
        "audio_worst": worst_note(_reports(summary)),
        "damage": journal.damage,
    }


def latency_data(summary: JournalSummary) -> dict[str, Any]:
    """The measured latency: each turn's waterfall, each interrupt, p50/p95/worst (ms)."""
    # As conversation.latency.summarize counts: an unprompted turn (the greeting) answers
    # no user turn and is left out.
    answered = [w for w in summary.latency_turns if w.get("kind") != "unprompted"]
    measured = [
        (float(w["heard_ms"]), w.get("turn"))
        for w in answered
        if isinstance(w.get("heard_ms"), int | float)
    ]
    heard = [ms for ms, _ in measured]
    worst = max(measured, key=lambda item: item[0]) if measured else None
    return {
        "turns": summary.latency_turns,
        "interrupts": summary.latency_interrupts,
        "summary": {
            "turns": len(answered),
            "measured": len(measured),
            "p50_ms": percentile(heard, 0.5),
            "p95_ms": percentile(heard, 0.95),
            "worst_ms": worst[0] if worst is not None else None,
            "worst_turn": worst[1] if worst is not None else None,
        },
    }


def to_json(summary: JournalSummary) -> str:
    """JSON: turns with per-turn timings, tool calls with params and results, errors."""
    return json_escape(json.dumps(to_data(summary), ensure_ascii=False, indent=2)) + "\n"


def _cues(summary: JournalSummary) -> list[tuple[float, float, str]]:
    """One cue per turn; a cue lasts at least MIN_CUE unless the next one starts sooner."""
    turns = [turn for turn in summary.turns if _line(turn.text)]
    cues = []
    for i, turn in enumerate(turns):
        end = max(turn.end, turn.start + MIN_CUE)
        if i + 1 < len(turns) and turn.end <= turns[i + 1].start < end:
            end = turns[i + 1].start
        end = max(end, turn.start + 0.001)
        label = SPEAKERS.get(turn.speaker, turn.speaker)
        cues.append((turn.start, end, f"{label}: {_line(turn.text)}"))
    return cues


def to_srt(summary: JournalSummary) -> str:
    """SubRip subtitles: one cue per turn, on the session clock."""
    blocks = []
    for number, (start, end, text) in enumerate(_cues(summary), start=1):
        blocks.append(f"{number}\n{cue_time(start, ',')} --> {cue_time(end, ',')}\n{text}\n")
    return "\n".join(blocks)


def to_vtt(summary: JournalSummary) -> str:
    """WebVTT subtitles: one cue per turn (with a voice tag), on the session clock."""
    blocks = ["WEBVTT\n"]
    for start, end, text in _cues(summary):
        speaker, _, said = text.partition(": ")
        said = said.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        blocks.append(f"{cue_time(start, '.')} --> {cue_time(end, '.')}\n<v {speaker}>{said}\n")
    return "\n".join(blocks)


def render(summary: JournalSummary, fmt: Format) -> str:
    """``summary`` in format ``fmt``."""
    renderers = {"md": to_md, "txt": to_txt, "json": to_json, "srt": to_srt, "vtt": to_vtt}
    return renderers[fmt](summary)


__all__ = [
    "FORMATS",
    "Format",
    "clock",
    "cue_time",
    "events",
    "latency_data",
    "render",
    "to_data",
    "to_json",
    "to_md",
    "to_srt",
    "to_txt",
    "to_vtt",
]
