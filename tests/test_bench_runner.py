"""bench/run.py: where each benchmark's section goes, and BENCHMARKS.md in one screen."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SESSION = (
    "## session\n<!-- lead: A typed turn against bare publish_data. -->\n"
    "<!-- summary: typed turn | 1.07 ms | bare 1.02 ms | 1.05x | ≤1.10x -->\n\n"
    "| a | long | table |\n"
)


def test_a_partial_run_replaces_only_what_it_ran(tmp_path: Path) -> None:
    run = _runner()
    (tmp_path / "sim.md").write_text("## sim\nold sim\n")
    (tmp_path / "session.md").write_text("## session\nold session\n")
    run.store([run.Result("session", SESSION, True, 1.0)], tmp_path, "Run then.", full=False)
    stored = run.read_results(tmp_path)
    assert stored["sim"] == "## sim\nold sim\n"
    assert stored["session"] == SESSION + "\nRun then.\n"


def test_a_full_run_drops_results_of_benchmarks_without_a_script(tmp_path: Path) -> None:
    run = _runner()
    (tmp_path / "gone.md").write_text("## gone\nits script was deleted\n")
    (tmp_path / "sim.md").write_text("## sim\nkept: it has a script\n")
    run.store([run.Result("session", SESSION, True, 1.0)], tmp_path, "Run then.", full=True)
    assert sorted(run.read_results(tmp_path)) == ["session", "sim"]


def test_benchmarks_md_is_the_summary_table_and_one_linked_line_per_benchmark() -> None:
    run = _runner()
    text = run.render({"session": SESSION, "sim": "## sim\n\n```\nrtt 1 ms\n```\n"}, "Machine.")
    assert (
        "| metric | fishtalk | floor or peer | ratio | goal | reproduce |\n"
        "|---|---|---|---|---|---|\n"
        "| typed turn | 1.07 ms | bare 1.02 ms | 1.05x | ≤1.10x | `--only session` |\n"
    ) in text
    line = "- [session](bench/results/session.md): A typed turn against bare publish_data.\n"
    assert line in text
    assert "- [sim](bench/results/sim.md): (no description)\n" in text
    assert "| a | long | table |" not in text  # the detail stays in the results file


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ("## x\n<!-- lead: Said once. -->\n\nFirst. Second.\n", "Said once."),
        ("## x\n<!-- summary: a | b -->\n\nFirst sentence. Second one.\n", "First sentence."),
        ("## x\n\n| table |\n\nA line\nwrapped.\n", "A line wrapped."),
    ],
)
def test_the_lead_is_the_lead_line_else_the_first_sentence(section: str, expected: str) -> None:
    assert _runner().lead(section) == expected


def test_summary_and_lead_lines_of_a_script_that_prints_bare_lines_stay_out_of_its_code_block(
    tmp_path: Path,
) -> None:
    run = _runner()
    script = tmp_path / "bench_plain.py"
    script.write_text(
        "print('<!-- lead: Round trips. -->')\n"
        "print('<!-- summary: rtt | 1.4 ms | – | – | – -->')\nprint('rtt: median=1.4 ms')\n"
    )
    result = run.run_one(script, timeout=60)
    assert result.ok
    assert result.section == (
        "## plain\n\n<!-- lead: Round trips. -->\n<!-- summary: rtt | 1.4 ms | – | – | – -->\n\n"
        "```\nrtt: median=1.4 ms\n```\n"
    )
    assert run.summary_rows("plain", result.section) == [
        ["rtt", "1.4 ms", "–", "–", "–", "`--only plain`"]
    ]


def test_benchmarks_md_reads_in_one_screen_and_links_every_benchmark() -> None:
    run = _runner()
    text = (ROOT / "BENCHMARKS.md").read_text("utf-8")
    assert len(text.splitlines()) <= 60
    assert text == run.render(run.read_results(ROOT / "bench" / "results"), _machine_line(text))
    for script in run.discover():
        name = script.stem.removeprefix("bench_")
        assert f"(bench/results/{name}.md)" in text, f"{name} has no results: run it"
        assert "<!-- lead: " in script.read_text("utf-8"), f"{script.name} prints no lead line"


def _machine_line(text: str) -> str:
    match = re.search(r"^Machine: .*$", text, re.M)
    assert match is not None
    return match.group(0)
