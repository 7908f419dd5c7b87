"""The pages are inert: hostile remote text shows escaped, and the policy is tight."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fishtalk.cli.app import main
from fishtalk.engine.journal.reader import read_journal
from fishtalk.workbench.reports.page import CSP, esc
from fishtalk.workbench.reports.session import session_page
from fishtalk.workbench.reports.testrun import run_page, write_run_page

from .hostile import (
    BIDI,
    BIG,
    CONTROL,
    HOSTILE,
    hostile_records,
    hostile_results,
    write_journal,
    write_recording,
)


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def assert_inert(page: str) -> None:
    """Nothing hostile reached the markup: each string is there only escaped."""
    for raw in HOSTILE:
        if raw.startswith("javascript:"):
            assert not re.search(r"(href|src|action)\s*=\s*[\"']?\s*javascript:", page, re.I)
        else:
            assert raw not in page
            assert esc(raw) in page
    assert page.count("<script") == 1  # the page's own
    assert "<img" not in page
    assert "<svg onload" not in page
    for char in "\u202e\u2066\x1b\x07":
        assert char not in page
    parsed = Tags()
    parsed.feed(page)
    assert parsed.tags.count("script") == 1
    assert not {"img", "iframe", "object", "embed", "base", "form"} & set(parsed.tags)
    for tag, name, value in parsed.attrs:
        assert not name.startswith("on"), (tag, name)
        if name in ("href", "src", "action"):
            assert value.startswith(
                ("data:audio/ogg;codecs=opus;base64,", "file:", "report-sessions/")
            ), value


class Tags(HTMLParser):
    """Every tag and attribute as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend((tag, name, value or "") for name, value in attrs)


def assert_policy(page: str) -> None:
    """The CSP names exactly the page's own script and style, and allows no request."""
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in page
    assert "default-src 'none'" in CSP
    assert "media-src data:" in CSP
    assert "connect-src" not in CSP
    assert "http" not in CSP
    assert "unsafe" not in CSP
    script = page.split("<script>", 1)[1].split("</script>", 1)[0]
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    assert f"script-src {_hash(script)};" in CSP
    assert f"style-src {_hash(style)};" in CSP


def test_esc_escapes_quotes_and_shows_invisible_characters() -> None:
    assert esc("<a href=\"x\" onclick='y'>") == "&lt;a href=&quot;x&quot; onclick=&#x27;y&#x27;&gt;"
    assert esc(BIDI) == "abc&lt;U+202E&gt;dcba&lt;U+2066&gt;x"
    assert "\x1b" not in esc(CONTROL)
    assert "\x07" not in esc(CONTROL)


def test_hostile_session_page_is_inert(tmp_path: Path) -> None:
    journal = write_journal(tmp_path / "hostile.jsonl", hostile_records())
    write_recording(journal.with_suffix(".wav"))
    page = session_page(read_journal(journal))
    assert_inert(page)
    assert_policy(page)
    assert esc(BIG) in page  # shown whole, escaped
    assert 'src="data:audio/ogg;codecs=opus;base64,' in page
    assert "interrupted" in page
    assert "truncated" in page


def test_hostile_test_run_page_is_inert(tmp_path: Path) -> None:
    journal = write_journal(tmp_path / "hostile.jsonl", hostile_records())
    page = run_page(hostile_results(journal))
    assert_inert(page)
    assert_policy(page)
    assert "fishtalk test: 1 failed, 1 errors, 1 passed of 3" in page
    assert 'aria-label="latency histogram"' in page  # repeated: the distribution
    assert "p50 " in page
    assert "p95 " in page


def test_written_run_page_links_each_session_page(tmp_path: Path) -> None:
    journal = write_journal(tmp_path / "hostile.jsonl", hostile_records())
    report = tmp_path / "out" / "report.html"
    report.parent.mkdir()
    write_run_page(hostile_results(journal), report)
    page = report.read_text(encoding="utf-8")
    session = report.parent / "report-sessions" / "hostile.html"
    assert session.is_file()
    assert 'href="report-sessions/hostile.html"' in page
    assert f'href="{journal.as_uri()}"' in page
    assert_inert(session.read_text(encoding="utf-8"))


def test_export_html_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = write_journal(tmp_path / "hostile.jsonl", hostile_records())
    out = tmp_path / "page.html"
    with pytest.raises(SystemExit) as info:
        main(["export", str(journal), "--format", "html", "-o", str(out)])
    assert info.value.code in (0, None), capsys.readouterr().err
    assert_inert(out.read_text(encoding="utf-8"))
    assert capsys.readouterr().out == ""
