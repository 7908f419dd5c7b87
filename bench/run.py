"""Run every ``bench/bench_*.py`` and write their sections into BENCHMARKS.md.

Each benchmark is a standalone script that prints one markdown section (starting with a
``## `` heading) to stdout and exits 0. This runner only discovers, runs and collects them;
it knows nothing about what they measure. A section names its headline figures in lines
``<!-- summary: metric | fishtalk | floor or peer | ratio | goal -->`` (invisible in the
rendered page); the runner gathers them, on every run, into the summary table at the top,
with the command that reproduces each.

Benchmarks that use WebRTC need the private network namespace, so run the whole thing as::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/run.py

Options: ``--only NAME`` (repeatable; ``sim`` or ``bench_sim``) runs a subset and replaces
only those sections in an existing BENCHMARKS.md; ``--output PATH``; ``--timeout SECONDS``
per benchmark; ``--list``.
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
HEADER = """# Benchmarks

Written by `bench/run.py`; each section below by one `bench/bench_*.py` script, the table
from the sections' summary lines. Reproduce a row with its command, under the network
namespace the WebRTC benchmarks need:
`.venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/run.py --only NAME`.
One machine, one run: compare the ratios (each against a floor measured in the same run,
interleaved with it), not the absolute figures. How a figure moved is told in the commit
that moved it.
"""
_BEGIN = "<!-- bench:{name} -->"
_END = "<!-- /bench:{name} -->"
_SECTION_RE = re.compile(
    r"<!-- bench:(?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- /bench:(?P=name) -->\n?", re.S
)
_SUMMARY_RE = re.compile(r"^<!-- summary: (?P<row>.*?) -->$", re.M)
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
        # lines are not merged into one paragraph); its summary lines stay outside it.
        summary = "".join(m.group(0) + "\n" for m in _SUMMARY_RE.finditer(out))
        lines = "\n".join(line for line in out.splitlines() if not _SUMMARY_RE.match(line))
        out = f"## {name}\n\n" + (f"{summary}\n" if summary else "") + f"```\n{lines}\n```"
    return Result(name, out + "\n", True, elapsed)


def _machine() -> str:
    cpus = os.cpu_count() or 0
    return (
        f"Machine: {platform.system()} {platform.release()}, {cpus} CPUs, "
        f"Python {platform.python_version()}. "
        f"Run at {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}."
    )


def _wrap(result: Result) -> str:
    return f"{_BEGIN.format(name=result.name)}\n{result.section}{_END.format(name=result.name)}\n"


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


def render(results: list[Result], existing: str | None, *, full: bool = False) -> str:
    """The new BENCHMARKS.md text. A partial run keeps the sections of benchmarks that were
    not re-run; a full run drops them. Either way, hand-written sections (a name no
    ``bench_*.py`` script has) are kept, first; the summary table is rebuilt from all."""
    scripts = {_name(path) for path in discover()}
    kept: dict[str, str] = {}
    if existing:
        for match in _SECTION_RE.finditer(existing):
            name = match.group("name")
            if name != "summary" and (not full or name not in scripts):
                kept[name] = match.group(0)
    for result in results:
        kept[result.name] = _wrap(result)
    order = sorted(kept, key=lambda name: (name in scripts, name))
    sections = {name: kept[name] for name in order}
    summary = _wrap(Result("summary", summary_table(sections), True, 0.0))
    body = "\n".join(sections.values())
    return f"{HEADER}\n{_machine()}\n\n{summary}\n{body}"


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

    existing = args.output.read_text(encoding="utf-8") if args.output.exists() else None
    # A partial run keeps the other sections; a full run keeps only the hand-written ones.
    text = render(results, existing, full=not wanted)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
