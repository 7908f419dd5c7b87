"""Startup figures: `fishtalk --version` against `python -c pass`, and the time until
`fishtalk demo` draws its first frame on a pseudo-terminal (against the smallest Textual
app), each the median of several runs.

Bytecode: an installed fishtalk (a wheel, or pip's editable install run once) reads its
modules from ``.pyc`` files, as the floor's textual does from site-packages. Where
``PYTHONDONTWRITEBYTECODE`` is set (this sandbox sets it) a checkout never gets them, and
every run would compile fishtalk's ~60 modules from source while textual is read from
bytecode, which charges fishtalk alone about 0.4x. So the bench compiles fishtalk's bytecode
first (``compileall``, into the gitignored ``__pycache__`` folders), as an installer would;
``--source`` skips that and measures a checkout without bytecode.

Run inside the private network namespace (the demo needs a non-loopback interface):
``.venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/bench_startup.py``
"""

from __future__ import annotations

import argparse
import compileall
import os
import pty
import select
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent
SMALLEST_APP = """
from textual.app import App
from textual.widgets import Static

class Tiny(App[None]):
    def compose(self):
        yield Static("first frame")

Tiny().run()
"""


def wall_once(argv: list[str]) -> float:
    """Wall seconds of ``argv`` run to completion."""
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def frame_once(argv: list[str], marker: bytes, within: float = 30.0) -> float:
    """Seconds from start until ``marker`` appears on a pseudo-terminal of 100x30."""
    pid, fd = pty.fork()
    if pid == 0:  # the child
        os.environ.update(COLUMNS="100", LINES="30", TERM="xterm-256color")
        os.execv(argv[0], argv)
    started = time.perf_counter()
    seen = b""
    try:
        while marker not in seen:
            left = within - (time.perf_counter() - started)
            if left <= 0:
                raise TimeoutError(f"{marker!r} never appeared")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                try:
                    seen += os.read(fd, 65536)
                except OSError:
                    break
        return time.perf_counter() - started
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


def paired(measure_a: Callable[[], float], measure_b: Callable[[], float], runs: int) -> Pair:
    """A and B in turn (A B A B ...), so a drift in the machine's speed moves both; the
    ratio is taken pair by pair. Medians of each, and of the ratios."""
    a_times, b_times, ratios = [], [], []
    for _ in range(runs):
        a, b = measure_a(), measure_b()
        a_times.append(a)
        b_times.append(b)
        ratios.append(a / b)
    return Pair(statistics.median(a_times), statistics.median(b_times), statistics.median(ratios))


@dataclass(frozen=True)
class Pair:
    a: float
    b: float
    ratio: float


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--source", action="store_true", help="do not compile fishtalk's bytecode first"
    )
    args = parser.parse_args()
    if not args.source:
        package = Path(__file__).resolve().parent.parent / "fishtalk"
        compileall.compile_dir(package, quiet=1)
    python = str(BIN / "python")
    fishtalk = str(BIN / "fishtalk")
    version = paired(
        lambda: wall_once([fishtalk, "--version"]),
        lambda: wall_once([python, "-c", "pass"]),
        args.runs,
    )
    demo = paired(
        lambda: frame_once([fishtalk, "demo", "--no-audio"], b"simulated agent"),
        lambda: frame_once([python, "-c", SMALLEST_APP], b"first frame"),
        args.runs,
    )
    load = os.getloadavg()[0]
    print("## Startup\n")
    print(
        "<!-- lead: Wall time of `fishtalk --version` and of the demo's first frame, each "
        "against its floor. -->"
    )
    print(
        f"<!-- summary: `fishtalk --version` wall | {version.a * 1000:.0f} ms | "
        f"`python -c pass` {version.b * 1000:.0f} ms | {version.ratio:.2f}x | ≤2x -->"
    )
    print(
        f"<!-- summary: `fishtalk demo` first frame | {demo.a * 1000:.0f} ms | "
        f"smallest Textual app {demo.b * 1000:.0f} ms | {demo.ratio:.2f}x | ≤2.5x -->\n"
    )
    print(
        f"Median of {args.runs} runs each, fishtalk and its floor in turn; the ratio is the "
        f"median of the pairs' ratios. Load average at the end: {load:.1f}. "
        + (
            "fishtalk read from source (no bytecode).\n"
            if args.source
            else "fishtalk's bytecode compiled first, as an installer does.\n"
        )
    )
    print("| path | fishtalk | floor | ratio |")
    print("| --- | --- | --- | --- |")
    print(
        f"| `fishtalk --version` wall | {version.a * 1000:.0f} ms | "
        f"`python -c pass` {version.b * 1000:.0f} ms | {version.ratio:.2f}x |"
    )
    print(
        f"| `fishtalk demo` first frame | {demo.a * 1000:.0f} ms | "
        f"smallest Textual app {demo.b * 1000:.0f} ms | {demo.ratio:.2f}x |"
    )


if __name__ == "__main__":
    main()
