"""The report pages in a real headless Chromium (playwright-core, the system's Chromium):
no console error, no request leaving the page, hostile text rendered as text, a click on a
line seeks the audio, the filters hide lines. Screenshots (light and dark, 1400 and 400 px)
land in ``$FISHTALK_REPORT_SHOTS`` when it is set, to look at by hand.

Needs ``apt-get install chromium`` and ``npm ci`` at the repository root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fishtalk.engine.journal.reader import read_journal
from fishtalk.workbench.reports.session import session_page
from fishtalk.workbench.reports.testrun import run_page

from .hostile import (
    BIG,
    HOSTILE,
    SEGMENT_TIMES,
    hostile_records,
    hostile_results,
    write_journal,
    write_recording,
)

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CHROMIUM = os.environ.get("FISHTALK_CHROMIUM", "/usr/bin/chromium")
NODE = shutil.which("node") or "node"


def drive(page: Path, **config: Any) -> dict[str, Any]:
    """Open ``page`` from disk in Chromium (see drive.mjs) and return what it saw."""
    if not Path(CHROMIUM).exists() or not (ROOT / "node_modules" / "playwright-core").exists():
        pytest.fail(f"needs {CHROMIUM} (apt-get install chromium) and npm ci at the root")
    shots = os.environ.get("FISHTALK_REPORT_SHOTS")
    if shots:
        Path(shots, page.stem).mkdir(parents=True, exist_ok=True)
    config = {
        "pageUrl": page.resolve().as_uri(),
        "chromium": CHROMIUM,
        "shots": str(Path(shots, page.stem)) if shots else None,
        "clickLine": -1,
        "search": "",
        **config,
    }
    proc = subprocess.run(
        [NODE, str(HERE / "drive.mjs"), json.dumps(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        pytest.fail(f"drive.mjs failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


def assert_quiet(result: dict[str, Any]) -> None:
    """No console error or warning, no script error, no request, nothing ran."""
    assert result["console"] == []
    assert result["pageErrors"] == []
    assert result["requests"] == []
    assert result["pwned"] is False
    assert result["handlers"] == []
    assert result["scripts"] == 1


def test_hostile_session_page_renders_as_text_and_plays(tmp_path: Path) -> None:
    journal = write_journal(tmp_path / "session.jsonl", hostile_records())
    write_recording(journal.with_suffix(".wav"))
    page = tmp_path / "session.html"
    page.write_text(session_page(read_journal(journal)), encoding="utf-8")
    result = drive(page, clickLine=1, search="calm", uncheck=["tool", "error"])
    assert_quiet(result)
    shown = "\n".join(result["texts"])
    for raw in HOSTILE:
        assert raw in shown  # literally, as text
    assert BIG in shown
    assert result["items"] == 6  # four lines, a tool card, an error
    assert result["clickedT"] == SEGMENT_TIMES[1]
    assert abs(result["seekedTo"] - SEGMENT_TIMES[1]) < 0.001  # the seek went to the line
    assert result["currentTime"] >= SEGMENT_TIMES[1] - 0.001  # and played on from there
    assert result["playing"] == [f"{SEGMENT_TIMES[1]:.3f}"]
    assert result["playhead"] > 0
    assert result["shownAfterSearch"] == 1
    assert result["count"] == "1 of 6 shown"
    assert sorted(set(result["shownAfterUncheck"])) == ["agent", "user"]


def test_test_run_page_renders_and_filters(tmp_path: Path) -> None:
    journal = write_journal(tmp_path / "session.jsonl", hostile_records())
    page = tmp_path / "run.html"
    page.write_text(run_page(hostile_results(journal)), encoding="utf-8")
    result = drive(page, search="could not run", uncheck=["passed"])
    assert_quiet(result)
    shown = "\n".join(result["texts"])
    for raw in HOSTILE[:2]:
        assert raw in shown
    assert result["items"] == 3
    assert result["shownAfterSearch"] == 1
    assert result["shownAfterUncheck"] == ["failed", "failed"]
    assert len(result["hrefs"]) == 3  # one journal link per run (no session pages here)
    assert all(href.startswith("file:") for href in result["hrefs"])
