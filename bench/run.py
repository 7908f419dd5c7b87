"""Run every ``bench/bench_*.py``: each one's full section into ``bench/results/NAME.md``, and
BENCHMARKS.md, which reads in one screen, from them.

Each benchmark is a standalone script that prints one markdown section (starting with a
``## `` heading) to stdout and exits 0. This runner only discovers, runs and collects them;
it knows nothing about what they measure. A section names its headline figures in lines
``<!-- summary: metric | fishtalk | floor or peer | ratio | goal -->`` and what it measures
in one line ``<!-- lead: ... -->`` (both invisible in the rendered page; without a lead line
the first sentence of its first paragraph is used). BENCHMARKS.md is the summary table
(every section's summary lines, with the command that reproduces each) and one short
paragraph per benchmark (its lead, linked to its full section).

Benchmarks that use WebRTC need the private network namespace, so run the whole thing as::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/run.py

Options: ``--only NAME`` (repeatable; ``sim`` or ``bench_sim``) runs a subset and keeps the
other benchmarks' results; ``--output PATH`` (BENCHMARKS.md; the results folder sits in
``bench/results`` beside the scripts); ``--timeout SECONDS`` per benchmark; ``--list``.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DEFAULT_OUTPUT = ROOT / "BENCHMARKS.md"
RESULTS_DIR = BENCH_DIR / "results"
HEADER = """# Benchmarks

Written by `bench/run.py` from the `bench/bench_*.py` scripts; each script's full section,
with its tables and method, is in `bench/results/`. Reproduce a row with its command, under
the network namespace the WebRTC benchmarks need:
`.venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/run.py --only NAME`.
Compare ratios (each against a floor measured in the same run, interleaved with it), not
absolute figures. How a figure moved is told in the commit that moved it.
"""
_SUMMARY_RE = re.compile(r"^<!-- summary: (?P<row>.*?) -->$", re.M)
_LEAD_RE = re.compile(r"^<!-- lead: (?P<lead>.*?) -->$", re.M)
SUMMARY_COLUMNS = ("metric", "fishtalk", "floor or peer", "ratio", "goal")


@dataclass(frozen=True)
class Result:
    """One benchmark's outcome: its markdown section (or a failure note) and wall time."""

    name: str
    section: str
    ok: bool
    seconds: float


def discover() -> list[Path]:
    """All benchmark scripts, in name order."""
    return sorted(BENCH_DIR.glob("bench_*.py"))


def _name(path: Path) -> str:
    return path.stem.removeprefix("bench_")


def run_one(path: Path, timeout: float) -> Result:
    """Run one benchmark script in a fresh interpreter and capture its section."""
    name = _name(path)
    started = time.monotonic()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    try:
        proc = subprocess.run(
            [sys.executable, str(path)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        elapsed = time.monotonic() - started
        note = f"## {name}\n\nFailed: did not finish within {timeout:.0f} s.\n"
        return Result(name, note, False, elapsed)
    elapsed = time.monotonic() - started
    out = proc.stdout.strip()
    if proc.returncode != 0 or not out:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        note = f"## {name}\n\nFailed (exit {proc.returncode}): `{tail[:300]}`\n"
        return Result(name, note, False, elapsed)
    if not out.startswith("#"):
        # A script that printed bare lines still gets a heading (and a code block, so its
        # lines are not merged into one paragraph); its summary and lead lines stay outside.
        lifted = [
            line for line in out.splitlines() if _SUMMARY_RE.match(line) or _LEAD_RE.match(line)
        ]
        summary = "".join(line + "\n" for line in lifted)
        lines = "\n".join(line for line in out.splitlines() if line not in lifted)
        out = f"## {name}\n\n" + (f"{summary}\n" if summary else "") + f"```\n{lines}\n```"
    return Result(name, out + "\n", True, elapsed)


def _machine() -> str:
    cpus = os.cpu_count() or 0
    return (
        f"Machine: {platform.system()} {platform.release()}, {cpus} CPUs, "
        f"Python {platform.python_version()}."
    )


def _when() -> str:
    return f"Run at {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}."


def summary_rows(name: str, section: str) -> list[list[str]]:
    """The summary lines of one section, each as the table's cells (the command last)."""
    rows: list[list[str]] = []
    for match in _SUMMARY_RE.finditer(section):
        cells = [cell.strip() for cell in match.group("row").split("|")]
        cells += [""] * (len(SUMMARY_COLUMNS) - len(cells))
        rows.append([*cells[: len(SUMMARY_COLUMNS)], f"`--only {name}`"])
    return rows


def summary_table(sections: dict[str, str]) -> str:
    """The table at the top: every section's summary lines, in section order."""
    header = [*SUMMARY_COLUMNS, "reproduce"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, section in sections.items():
        for row in summary_rows(name, section):
            lines.append("| " + " | ".join(cell or "–" for cell in row) + " |")
    return "\n".join(lines) + "\n"


def lead(section: str) -> str:
    """What a section measures, in one line: its lead line, else its first sentence."""
    match = _LEAD_RE.search(section)
    if match:
        return match.group("lead").strip()
    for paragraph in section.split("\n\n"):
        text = " ".join(paragraph.split())
        if text and not text.startswith(("#", "<!--", "|", "```")):
            sentence, dot, _ = text.partition(". ")
            return sentence + (dot.strip() or "")
    return "(no description)"


def _title(section: str, name: str) -> str:
    first = section.lstrip().splitlines()[0] if section.strip() else ""
    return first.removeprefix("## ").strip() if first.startswith("## ") else name


def render(sections: dict[str, str], machine: str) -> str:
    """BENCHMARKS.md from every benchmark's full section, in name order."""
    body = [
        HEADER,
        machine,
        "",
        summary_table(sections),
        "## What each benchmark measures",
        "",
    ]
    for name, section in sections.items():
        body.append(f"- [{_title(section, name)}](bench/results/{name}.md): {lead(section)}")
    return "\n".join(body) + "\n"


def read_results(results_dir: Path) -> dict[str, str]:
    """Every stored section, by benchmark name."""
    return {
        path.stem: path.read_text(encoding="utf-8") for path in sorted(results_dir.glob("*.md"))
    }


def store(results: list[Result], results_dir: Path, stamp: str, *, full: bool) -> None:
    """Write each result's section (stamped with the machine and time it ran) into the
    results folder.
    A full run also drops the results of benchmarks that no longer have a script."""
    results_dir.mkdir(parents=True, exist_ok=True)
    for result in results:
        section = result.section.rstrip("\n") + "\n"
        (results_dir / f"{result.name}.md").write_text(f"{section}\n{stamp}\n", "utf-8")
    if full:
        scripts = {_name(path) for path in discover()}
        for path in results_dir.glob("*.md"):
            if path.stem not in scripts:
                path.unlink()


def main(argv: list[str] | None = None) -> int:
    """Entry point: returns 0 when every benchmark that ran succeeded, else 1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="run only this benchmark")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per benchmark")
    parser.add_argument("--list", action="store_true", help="list benchmarks and exit")
    args = parser.parse_args(argv)

    scripts = discover()
    if args.list:
        for path in scripts:
            print(_name(path))
        return 0
    wanted = {name.removeprefix("bench_").removesuffix(".py") for name in args.only}
    if wanted:
        unknown = wanted - {_name(p) for p in scripts}
        if unknown:
            print(f"unknown benchmark(s): {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        scripts = [p for p in scripts if _name(p) in wanted]

    results: list[Result] = []
    for path in scripts:
        print(f"running {path.name} ...", file=sys.stderr, flush=True)
        result = run_one(path, args.timeout)
        status = "ok" if result.ok else "FAILED"
        print(f"  {status} in {result.seconds:.1f} s", file=sys.stderr, flush=True)
        results.append(result)

    machine = _machine()
    store(results, RESULTS_DIR, f"{machine} {_when()}", full=not wanted)
    text = render(read_results(RESULTS_DIR), f"{machine} Each result says when it ran.")
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} and {RESULTS_DIR.relative_to(ROOT)}/", file=sys.stderr)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
