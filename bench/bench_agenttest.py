"""``fishtalk test`` under load: 1, 4 and 16 concurrent sessions against the sim.

Two set-ups: the sim in a process of its own (``fishtalk sim serve``), so the client's and
the sim's CPU can be told apart; and ``--sim`` (the sim in the client's process and event
loop, as users run it). Each run is one ``fishtalk test`` process with ``--repeat N
--concurrency N`` of a one-turn file. Prints a markdown section. Needs the network
namespace (WebRTC).
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "tests" / "agenttest" / "scenarios" / "chat.toml"
TEST = """agent = "chat"
timeout = 120
[[turns]]
say = "Hello there"
expect.contains = "you said"
[[turns]]
hangup = true
"""
COUNTS = (1, 4, 16)


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _client(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (the child) and stdout of one `fishtalk test`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fishtalk", "test", *args],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"fishtalk test failed ({done.returncode}): {done.stdout}{done.stderr}")
    return wall, cpu, done.stdout


def _p50(out: str) -> str:
    found = re.search(r"first text: p50 ([\d.]+) s, p95 ([\d.]+) s", out)
    return f"{found.group(1)} / {found.group(2)}" if found else "?"


def main() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}
    rows: list[str] = []
    busy: dict[int, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        test = Path(tmp) / "load.toml"
        test.write_text(TEST, "utf-8")
        log = Path(tmp) / "sim.out"
        with log.open("w") as out:
            sim = subprocess.Popen(
                [sys.executable, "-m", "fishtalk", "sim", "serve", "--port", "0",
                 "--scenario", str(SCENARIO)],
                stdout=out, stderr=subprocess.DEVNULL, env=env,
            )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while not (url := re.search(r"http://[\d.:]+", log.read_text())):
                if time.monotonic() > deadline:
                    raise SystemExit("the sim did not start")
                time.sleep(0.1)
            key = re.search(r"fishtalk-sim-dev-key", log.read_text())
            client_env = {**env, "FISH_API_KEY": key.group(0) if key else ""}
            for n in COUNTS:
                sim_before = _proc_cpu(sim.pid)
                wall, cpu, out_text = _client(
                    [str(test), "--agent", "chat", "--api-url", url.group(0),
                     "--repeat", str(n), "--concurrency", str(n)],
                    client_env,
                )  # fmt: skip
                sim_cpu = _proc_cpu(sim.pid) - sim_before
                busy[n] = (cpu / wall, sim_cpu / wall, float(_p50(out_text).split(" / ")[0]))
                rows.append(
                    f"| separate sim | {n} | {wall:.1f} | {cpu / n:.2f} | {sim_cpu / n:.2f} "
                    f"| {cpu / wall:.0%} / {sim_cpu / wall:.0%} | {_p50(out_text)} |"
                )
        finally:
            sim.terminate()
            sim.wait(10)
        for n in COUNTS:
            wall, cpu, out_text = _client(
                [str(test), "--sim", "--scenario", str(SCENARIO),
                 "--repeat", str(n), "--concurrency", str(n)],
                env,
            )  # fmt: skip
            rows.append(
                f"| `--sim` (one process) | {n} | {wall:.1f} | {cpu / n:.2f} | (included) "
                f"| {cpu / wall:.0%} | {_p50(out_text)} |"
            )
    print("## fishtalk test under load\n")
    print(
        "<!-- lead: `fishtalk test --repeat N --concurrency N` of a one-turn file: wall, CPU "
        "per session and first-text latency as N grows. -->"
    )
    one, most = busy[min(busy)][2], busy[max(busy)][2]
    print(
        f"<!-- summary: `fishtalk test`, first text p50 at {max(busy)} sessions (separate sim) "
        f"| {most:.2f} s | {min(busy)} session {one:.2f} s | {most / one:.2f}x | – -->\n"
    )
    print(
        "One `fishtalk test` process per row, `--repeat N --concurrency N` of a one-turn "
        "file (a typed turn, then hang up) against the quick chat scenario. Wall time "
        "includes the interpreter's start. CPU per session = process CPU / N; busy = CPU "
        "/ wall (100% = one core). First text: p50 / p95 seconds from the typed turn to the "
        "agent's first text.\n"
    )
    print(
        "| set-up | sessions | wall s | client CPU s / session | sim CPU s / session "
        "| busy client / sim | first text p50 / p95 s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(row)
    n = max(busy)
    client, sim_busy, first = busy[n]
    side = "the sim" if sim_busy > client else "the client"
    print(
        f"\nSaturation: at {n} sessions {side} is the busier process ({sim_busy:.0%} of a "
        f"core for the sim, {client:.0%} for the client; each is one Python event loop, so "
        f"about 100% is its ceiling) and the first text takes {first:.1f} s against "
        f"{busy[min(busy)][2]:.1f} s for one session. With `--sim` both share one loop and "
        "saturate it sooner (see the rows above)."
    )


if __name__ == "__main__":
    main()
