"""The session page shows how each reply sounded (its audio checks) and what its audio
said (the heard text), in the words ``fishtalk export`` uses; remote words stay text."""

from __future__ import annotations

import json
from pathlib import Path

from journal.test_replay_closing import _write

from fishtalk.engine.journal.reader import read_journal, summarize_journal
from fishtalk.workbench.journal.export import audio_notes, render
from fishtalk.workbench.reports.session import session_page


def _with_heard(path: Path, text: str) -> None:
    """Append what a speech recogniser heard in reply 1's audio, as the journal records it."""
    record = {
        "type": "heard",
        "t": 8.6,
        "segment_ids": ["seg-a1"],
        "heard_text": text,
        "method": "align",
        "confidence": 0.93,
    }
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def test_the_page_shows_the_audio_checks_and_the_heard_text(tmp_path: Path) -> None:
    path = tmp_path / "late.jsonl"
    _write(path)  # reply 1 starts sounding 5.29 s after its first text
    _with_heard(path, "hi <b>there</b>")
    journal = read_journal(path)
    page = session_page(journal)
    [note] = audio_notes(summarize_journal(journal))
    assert "leading silence of 5.29 s after its first text" in note
    assert "How the replies sounded" in page
    assert f"<li>{note}</li>" in page  # the same words as the export (nothing to escape)
    assert "audio said &#x27;hi &lt;b&gt;there&lt;/b&gt;&#x27; (alignment, 0.93)" in page
    assert "<b>there</b>" not in page
    assert "audio said 'hi <b>there</b>' (alignment, 0.93)" in render(
        summarize_journal(journal), "txt"
    )


def test_a_session_without_audio_checks_has_no_such_section(tmp_path: Path) -> None:
    from journal.test_latency_journal import write_journal

    path = tmp_path / "plain.jsonl"
    write_journal(path)
    page = session_page(read_journal(path))
    assert "How the replies sounded" not in page
    assert "audio said" not in page
