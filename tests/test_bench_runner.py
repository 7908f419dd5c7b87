"""bench/run.py: which sections of BENCHMARKS.md a run keeps."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


EXISTING = (
    "<!-- bench:session -->\n## session\nold session\n<!-- /bench:session -->\n"
    "<!-- bench:sim -->\n## sim\nold sim\n<!-- /bench:sim -->\n"
    "<!-- bench:overview -->\n## overview\nwritten by hand\n<!-- /bench:overview -->\n"
)


def test_a_full_run_keeps_only_the_hand_written_sections_and_puts_them_first() -> None:
    run = _runner()
    text = run.render(
        [run.Result("session", "## session\nnew session\n", True, 1.0)], EXISTING, full=True
    )
    assert "written by hand" in text
    assert "new session" in text
    assert "old session" not in text
    assert "old sim" not in text  # a benchmark that was not re-run
    assert text.index("overview") < text.index("new session")


def test_a_partial_run_replaces_only_what_it_ran() -> None:
    run = _runner()
    text = run.render([run.Result("session", "## session\nnew session\n", True, 1.0)], EXISTING)
    assert "written by hand" in text
    assert "old sim" in text
    assert "new session" in text
    assert "old session" not in text


def test_the_summary_table_gathers_every_sections_summary_lines_with_its_command() -> None:
    run = _runner()
    section = (
        "## session\n<!-- summary: typed turn | 1.07 ms | bare 1.02 ms | 1.05x | ≤1.05x -->\n"
        "the rest of the section\n"
    )
    text = run.render([run.Result("session", section, True, 1.0)], EXISTING)
    table = text.split("<!-- bench:summary -->\n", 1)[1].split("<!-- /bench:summary -->")[0]
    assert table.splitlines() == [
        "| metric | fishtalk | floor or peer | ratio | goal | reproduce |",
        "|---|---|---|---|---|---|",
        "| typed turn | 1.07 ms | bare 1.02 ms | 1.05x | ≤1.05x | `--only session` |",
    ]
    assert text.index("<!-- bench:summary -->") < text.index("written by hand")
    # A second run rebuilds the table instead of keeping the old one as a section.
    again = run.render([], text)
    assert again.count("<!-- bench:summary -->") == 1
    assert again.count("| typed turn |") == 1


def test_summary_lines_of_a_script_that_prints_bare_lines_stay_out_of_its_code_block(
    tmp_path: Path,
) -> None:
    run = _runner()
    script = tmp_path / "bench_plain.py"
    script.write_text(
        "print('<!-- summary: rtt | 1.4 ms | – | – | – -->')\nprint('rtt: median=1.4 ms')\n"
    )
    result = run.run_one(script, timeout=60)
    assert result.ok
    assert result.section == (
        "## plain\n\n<!-- summary: rtt | 1.4 ms | – | – | – -->\n\n```\nrtt: median=1.4 ms\n```\n"
    )
    assert run.summary_rows("plain", result.section) == [
        ["rtt", "1.4 ms", "–", "–", "–", "`--only plain`"]
    ]


def test_benchmarks_md_reads_in_one_screen_before_its_sections() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text("utf-8")
    before_sections = text.split("<!-- /bench:summary -->", 1)[0]
    assert "| metric | fishtalk | floor or peer | ratio | goal | reproduce |" in before_sections
    assert len(before_sections.splitlines()) <= 40
    assert "<!-- bench:overview -->" not in text  # how figures moved is in commit messages
