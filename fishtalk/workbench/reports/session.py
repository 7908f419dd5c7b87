"""The session page: one self-contained HTML file from a journal (and its recorded audio).

The data comes from the journal reader's :class:`~fishtalk.engine.journal.reader.JournalSummary`
and the export module's timeline and latency figures (:func:`~fishtalk.workbench.journal.
export.events`, :func:`~fishtalk.workbench.journal.export.latency_data`), so the page says
what ``fishtalk export`` says. Pure: :func:`session_page` returns the text.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from fishtalk.core.conversation.latency import measure_words
from fishtalk.engine.journal.reader import (
    Journal,
    JournalSummary,
    ToolCall,
    Turn,
    summarize_journal,
)
from fishtalk.engine.journal.writer import AUDIO_SUFFIX
from fishtalk.workbench.journal.export import (
    SPEAKERS,
    audio_notes,
    clock,
    events,
    heard_note,
    latency_data,
)
from fishtalk.workbench.reports.audio import PageAudio, load_audio
from fishtalk.workbench.reports.charts import num, span, waterfall_svg, waveform_svg
from fishtalk.workbench.reports.page import document, esc, facts, filters, long_text, ms


def _payload(value: Any) -> str:
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)
    return long_text(value, "pre")


def _badge(text: str, kind: str = "") -> str:
    return f'<span class="badge {kind}">{esc(text)}</span>'


def _turn_item(turn: Turn) -> str:
    speaker = turn.speaker if turn.speaker in SPEAKERS else "agent"
    badges = []
    if turn.typed:
        badges.append(_badge("typed"))
    if turn.interrupted:
        badges.append(_badge("interrupted", "bad"))
    if not turn.final:
        badges.append(_badge("truncated: never final", "bad"))
    badges += [_badge(words) for words in measure_words(turn.first_text, turn.heard)]
    notes = f"<div>{''.join(badges)}</div>" if badges else ""
    if turn.heard_text is not None:  # what the reply's audio said (speech recognition)
        said = heard_note(turn.heard_text, turn.heard_method, turn.heard_confidence)
        notes += f'<p class="label">{esc(said)}</p>'
    return (
        f'<li class="item line {speaker}" data-kind="{speaker}" data-t="{turn.start:.3f}">'
        f"<time>{esc(clock(turn.start))}</time>"
        f'<span class="who">{esc(SPEAKERS[speaker])}</span>'
        f'<div class="body">{long_text(turn.text)}{notes}</div></li>'
    )


def _tool_item(call: ToolCall) -> str:
    kind = "client tool" if call.client else f"tool · {call.source}" if call.source else "tool"
    bad = call.error is not None or call.status in ("error", "failed", "denied", "timeout")
    badges = [_badge(call.status, "bad" if bad else "ok" if call.end is not None else "")]
    if call.duration is not None:
        badges.append(_badge(ms(call.duration * 1000)))
    if call.approval:
        badges.append(_badge(f"approval: {call.approval}"))
    if call.truncated:
        badges.append(_badge("truncated", "bad"))
    body = [f'<div class="label">params</div>{_payload(call.params)}']
    if call.error:
        body.append(f'<div class="label">error</div>{_payload(call.error)}')
    if call.result is not None:
        body.append(f'<div class="label">result</div>{_payload(call.result)}')
    return (
        f'<li class="item tool" data-kind="tool"><time>{esc(clock(call.start))}</time>'
        f'<span class="who">Tool</span><div class="body"><details class="card">'
        f'<summary><strong>{esc(call.name)}</strong> <span class="label">{esc(kind)}</span> '
        f"{''.join(badges)}</summary>{''.join(body)}</details></div></li>"
    )


def _error_item(at: float, error: dict[str, Any]) -> str:
    code = error.get("code")
    message = error.get("message") or code or "error"
    head = f"{_badge(str(code), 'bad')} " if code and code != message else ""
    return (
        f'<li class="item error" data-kind="error"><time>{esc(clock(at))}</time>'
        f'<span class="who">Error</span><div class="body"><p class="text">{head}'
        f"{esc(message)}</p></div></li>"
    )


def transcript(summary: JournalSummary) -> str:
    """The conversation as one list: turns, tool cards and errors on the session clock."""
    items = []
    for at, _order, _kind, item in events(summary):
        if isinstance(item, Turn):
            items.append(_turn_item(item))
        elif isinstance(item, ToolCall):
            items.append(_tool_item(item))
        else:
            items.append(_error_item(at, item))
    if not items:
        return '<p class="label">Nothing was said.</p>'
    return f'<ol class="items" id="transcript">{"".join(items)}</ol>'


def waterfalls(turns: list[dict[str, Any]]) -> str:
    """Each turn's latency waterfall, on one scale so turns compare at a glance."""
    if not turns:
        return '<p class="label">No latency was measured in this session.</p>'
    scale = max((span(w) for w in turns), default=0.0)
    blocks = []
    for w in turns:
        heard = num(w.get("heard_ms"))
        why = w.get("incomplete")
        figure = f"heard {ms(heard)}" if heard is not None else "no heard figure"
        if heard is None and why:
            figure += f" ({why})"
        blocks.append(
            f'<div class="wf"><h3>Turn {esc(w.get("turn", "?"))} · {esc(w.get("kind") or "?")}'
            f" · {esc(figure)}</h3>{waterfall_svg(w, scale)}</div>"
        )
    return "".join(blocks)


def sound(summary: JournalSummary) -> str:
    """How each reply sounded (its audio checks), in the words ``fishtalk export`` uses."""
    notes = audio_notes(summary)
    if not notes:
        return ""
    items = "".join(f"<li>{esc(note)}</li>" for note in notes)
    return f'<section><h2>How the replies sounded</h2><ul id="sound">{items}</ul></section>'


def when(started_at: str | None) -> str:
    """The journal's ISO start time as a person reads it: ``2026-12-02 02:22:02 +00:00``
    (the session's own offset kept; anything unparsable shown as it is)."""
    if not started_at:
        return "?"
    try:
        at = datetime.fromisoformat(started_at)
    except ValueError:
        return started_at
    offset = at.strftime("%z")  # "+0000", or "" without a zone
    zone = f" {offset[:3]}:{offset[3:5]}" if offset else ""
    return f"{at:%Y-%m-%d %H:%M:%S}{zone}"


def _header(summary: JournalSummary) -> str:
    journal: Journal = summary.journal
    head = journal.header
    ended = summary.end_reason or "unfinished"
    if summary.end_message:
        ended += f": {summary.end_message}"
    rows = [
        ("Agent", esc(summary.agent_id or "?")),
        ("When", esc(when(summary.started_at))),
        ("Duration", esc(clock(summary.duration))),
        ("Ended", esc(ended)),
        ("Session", esc(journal.session_id or "?")),
        ("Journal", esc(journal.journal_id or "?")),
        ("fishtalk", esc(head.get("fishtalk_version") or "?")),
        ("Protocol", esc(head.get("protocol_version") or "?")),
    ]
    return facts(rows)


def _figures(summary: JournalSummary, figures: dict[str, Any]) -> str:
    s = figures["summary"]
    rows = [
        ("Turns", esc(len(summary.turns))),
        ("Tool calls", esc(len(summary.tools))),
        ("Errors", esc(len(summary.errors))),
        ("Heard p50", esc(ms(s["p50_ms"]))),
        ("Heard p95", esc(ms(s["p95_ms"]))),
        (
            "Worst turn",
            esc(f"{ms(s['worst_ms'])} (turn {s['worst_turn']})" if s["worst_ms"] else "–"),
        ),
    ]
    return facts(rows)


def _audio(audio: PageAudio) -> str:
    return (
        "<h2>Audio</h2>"
        f'<audio id="audio" controls preload="metadata" src="{esc(audio.data_url)}"></audio>'
        f"{waveform_svg(audio.mic, audio.agent, audio.duration)}"
        f'<p class="legend">Microphone above the line, agent below. {esc(audio.codec)}, '
        f"{esc(clock(audio.duration))}. Click a line of the transcript to hear it.</p>"
    )


def session_page(journal: Journal, audio: Path | None = None) -> str:
    """The session page of ``journal``; ``audio`` is its recording (default: the journal's
    own ``--record-audio`` file, when it exists)."""
    summary = summarize_journal(journal)
    if audio is None and journal.path is not None:
        audio = journal.path.with_suffix(AUDIO_SUFFIX)
    recorded = load_audio(audio) if audio is not None and audio.is_file() else None
    figures = latency_data(summary)
    title = f"Conversation with {summary.agent_id or 'an agent'}"
    damage = f'<p class="banner">{esc(journal.damage)}</p>' if journal.damage else ""
    interrupts = "".join(
        f"<li>Interrupt {n}: the speaker went quiet after {esc(ms(num(i.get('local_flush_ms'))))}"
        f", the agent's audio stopped after {esc(ms(num(i.get('wire_stop_ms'))))}</li>"
        for n, i in enumerate(figures["interrupts"], start=1)
        if isinstance(i, dict)
    )
    body = [
        f"<header><h1>{esc(title)}</h1>{_header(summary)}{damage}</header>",
        f"<section><h2>At a glance</h2>{_figures(summary, figures)}</section>",
        _audio(recorded) if recorded is not None else "",
        "<section><h2>Transcript</h2>",
        filters(
            [("user", "User"), ("agent", "Agent"), ("tool", "Tools"), ("error", "Errors")],
            "Search the transcript",
        ),
        transcript(summary),
        "</section>",
        f"<section><h2>Latency per turn</h2>{waterfalls(figures['turns'])}",
        f"<ul>{interrupts}</ul>" if interrupts else "",
        "</section>",
        sound(summary),
    ]
    return document(title, "\n".join(body))


__all__ = ["session_page", "sound", "transcript", "waterfalls", "when"]
