"""``fishtalk test --init``'s starter file against ``--sim``: how long the smallest test takes.

Writes the starter with ``fishtalk test --init``, then runs ``fishtalk test STARTER --sim``
``RUNS`` times, one process each. Reports the test's own time (the ``PASS ... (N s)`` line:
session request to hang-up) and the process's wall time (the interpreter, the sim's start
and the WebRTC set-up included). The goal (issue 24) is a test time of 1.5 s. Prints a
markdown section. Needs the network namespace (WebRTC).
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 3
GOAL = 1.5


def _run(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    """Wall seconds and stdout of one ``fishtalk test`` process."""
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fishtalk", "test", *args],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=300,
    )  # fmt: skip
    wall = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"fishtalk test failed ({done.returncode}): {done.stdout}{done.stderr}")
    return wall, done.stdout


def main() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}
    tests: list[float] = []
    walls: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _run(["--init", "starter.toml"], env, folder)
        for _ in range(RUNS):
            wall, out = _run(["starter.toml", "--sim", "--no-journal"], env, folder)
            took = re.search(r"PASS .* \(([\d.]+) s\)", out)
            if took is None:
                raise SystemExit(f"no PASS line: {out}")
            tests.append(float(took.group(1)))
            walls.append(wall)
    test, wall = statistics.median(tests), statistics.median(walls)
    print("## The starter test against the sim")
    print(
        "<!-- lead: How long `fishtalk test --sim` takes for the `--init` starter file "
        "(goal ≤1.5 s). -->\n"
    )
    print(
        f"<!-- summary: `fishtalk test --init` starter, --sim | {test:.2f} s | goal "
        f"{GOAL:.2f} s | {test / GOAL:.2f}x | – -->\n"
    )
    print(
        f"`fishtalk test --init` writes the starter; `fishtalk test starter.toml --sim` runs it "
        f"{RUNS} times, one process each (medians). Test: the PASS line's time (session "
        "request to hang-up). Wall: the whole process (the interpreter, the sim's start).\n"
    )
    print("| runs | test s (median) | test s (each) | wall s (median) |")
    print("|---:|---:|---|---:|")
    each = ", ".join(f"{t:.2f}" for t in tests)
    print(f"| {RUNS} | {test:.2f} | {each} | {wall:.2f} |")


if __name__ == "__main__":
    main()
