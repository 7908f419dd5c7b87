"""Startup figures: `fishtalk --version` against `python -c pass`, and the time until
`fishtalk demo` draws its first frame on a pseudo-terminal (against the smallest Textual
app), each the median of several runs.

Run inside the private network namespace (the demo needs a non-loopback interface):
``.venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/bench_startup.py``
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import signal
import statistics
import subprocess
import sys
import time
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


def wall(argv: list[str], runs: int) -> float:
    """Median wall seconds of ``argv`` run to completion."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def first_frame(argv: list[str], marker: bytes, runs: int, within: float = 30.0) -> float:
    """Median seconds from start until ``marker`` appears on the pseudo-terminal."""
    times = []
    for _ in range(runs):
        pid, fd = pty.fork()
        if pid == 0:  # the child: a terminal of 100x30
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
            times.append(time.perf_counter() - started)
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    python = str(BIN / "python")
    fishtalk = str(BIN / "fishtalk")
    base = wall([python, "-c", "pass"], args.runs)
    version = wall([fishtalk, "--version"], args.runs)
    tiny = first_frame([python, "-c", SMALLEST_APP], b"first frame", args.runs)
    demo = first_frame([fishtalk, "demo", "--no-audio"], b"simulated agent", args.runs)
    print("## Startup\n")
    print(f"Median of {args.runs} runs each; the ratio is against the floor in the same run.\n")
    print("| path | fishtalk | floor | ratio |")
    print("| --- | --- | --- | --- |")
    print(
        f"| `fishtalk --version` wall | {version * 1000:.0f} ms | "
        f"`python -c pass` {base * 1000:.0f} ms | {version / base:.2f}x |"
    )
    print(
        f"| `fishtalk demo` first frame | {demo * 1000:.0f} ms | "
        f"smallest Textual app {tiny * 1000:.0f} ms | {demo / tiny:.2f}x |"
    )


if __name__ == "__main__":
    main()
