"""``fishtalk load`` capacity: client CPU and memory per concurrent text session, on Locust.

The sim runs in a process of its own (``fishtalk sim serve``); each row is one plain
``locust -f`` process with the shipped locustfile (one worker process, one engine thread),
N users each running a one-turn text file (a typed turn, a 3 s wait, hang up) for a fixed
time. Client CPU and peak RSS come from the Locust process; sessions and the first-text
percentiles from Locust's JSON stats. The floor is bare livekit SDK participants doing the
same exchange (``load_floor.py``), at the lowest and highest user counts; each side's CPU
per session is its marginal cost (the CPU added from the lowest to the highest row, over
the sessions added), so neither process's start-up counts. Prints a markdown section.
Needs the network namespace.

Not measured here (yet): audio sessions (synthetic mic, APM off), and the knee where heard
p95 rises 10 %.
"""

from __future__ import annotations

import json
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
FLOOR = Path(__file__).resolve().parent / "load_floor.py"
LOCUSTFILE = ROOT / "fishtalk" / "workbench" / "load" / "locustfile.py"
TEST = """text_only = true
timeout = 120
[[turns]]
say = "Hello there"
[[turns]]
wait = 3
[[turns]]
hangup = true
"""
USERS = (1, 5, 10)
RUN_SECONDS = 20


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(times: dict[str, int], q: float) -> float:
    """The q-quantile (ms) of Locust's rounded response-time histogram."""
    points = sorted((float(ms), n) for ms, n in times.items())
    total = sum(n for _, n in points)
    seen = 0
    for ms, n in points:
        seen += n
        if seen >= q * total:
            return ms
    return points[-1][0] if points else float("nan")


def _row(n: int, url: str, env: dict[str, str], tmp: Path) -> tuple[float, float, float, int, str]:
    """Wall, client CPU, peak RSS MB, sessions, first-text p50/p95 for N users."""
    stats = tmp / f"stats{n}"
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "-u", str(n),
         "-r", str(n), "-t", f"{RUN_SECONDS}s", "--stop-timeout", "60", "--only-summary",
         "--json-file", str(stats), "--fishtalk-test", str(tmp / "load.toml"),
         "--fishtalk-agent", "chat", "--fishtalk-api-url", url, "--fishtalk-pace", "4",
         "--fishtalk-max-sessions", "100000"],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"locust failed ({done.returncode}): {done.stderr[-2000:]}")
    entries = json.loads(Path(f"{stats}.json").read_text("utf-8"))
    starts = next(e for e in entries if e["name"].endswith(": start"))
    turn = next((e for e in entries if e["method"] == "turn"), None)
    first = "–"
    if turn is not None:
        first = f"{_percentile(turn['response_times'], 0.5) / 1000:.2f} / "
        first += f"{_percentile(turn['response_times'], 0.95) / 1000:.2f}"
    sessions = starts["num_requests"] - starts["num_failures"]
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, sessions, first


def _floor(n: int, url: str, env: dict[str, str]) -> tuple[int, float, float]:
    """Sessions, CPU seconds and wall seconds of ``n`` bare SDK participants
    (``load_floor.py``)."""
    done = subprocess.run(
        [sys.executable, str(FLOOR), url, env["FISH_API_KEY"], "chat", str(n)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the floor failed ({done.returncode}): {done.stderr[-2000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return int(figures["sessions"]), float(figures["cpu"]), float(figures["wall"])


def _marginal(low: tuple[int, float, float], high: tuple[int, float, float]) -> float:
    """CPU seconds per session added from the ``low`` row to the ``high`` one."""
    return (high[1] - low[1]) / max(high[0] - low[0], 1)


def main() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    rows: list[str] = []
    figures: dict[int, tuple[float, float, float]] = {}
    totals: dict[int, tuple[int, float, float]] = {}
    floor: dict[int, tuple[int, float, float]] = {}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        (tmp / "load.toml").write_text(TEST, "utf-8")
        log = tmp / "sim.out"
        with log.open("w") as out:
            sim = subprocess.Popen(
                [sys.executable, "-m", "fishtalk", "sim", "serve", "--port", "0",
                 "--scenario", str(SCENARIO)],
                stdout=out, stderr=subprocess.DEVNULL, env=env,
            )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while not (url := re.search(r"http://[\d.:]+", log.read_text())):
                if time.monotonic() > deadline:
                    raise SystemExit("the sim did not start")
                time.sleep(0.1)
            client_env = {**env, "FISH_API_KEY": "fishtalk-sim-dev-key"}
            cpu_before = 0.0
            for n in USERS:
                sim_before = _proc_cpu(sim.pid)
                wall, cpu_total, rss, sessions, first = _row(n, url.group(0), client_env, tmp)
                cpu, cpu_before = cpu_total - cpu_before, cpu_total
                sim_cpu = _proc_cpu(sim.pid) - sim_before
                per, sim_per = cpu / max(sessions, 1), sim_cpu / max(sessions, 1)
                figures[n] = (per, cpu / wall, rss)
                totals[n] = (sessions, cpu, wall)
                rows.append(
                    f"| {n} | {sessions} | {wall:.1f} | {per:.2f} | {sim_per:.2f}"
                    f" | {cpu / wall:.0%} / {sim_cpu / wall:.0%} | {rss:.0f} | {first} |"
                )
            for n in (min(USERS), max(USERS)):
                floor[n] = _floor(n, url.group(0), client_env)
        finally:
            sim.terminate()
            sim.wait(10)
    top = max(figures)
    per, busy, _ = figures[top]
    per_core = top / busy if busy else float("nan")
    print("## fishtalk load (Locust) capacity")
    print(
        "<!-- lead: Client CPU, memory and first-text latency per text session as "
        "`fishtalk load` users grow, on Locust against the sim. -->\n"
    )
    low = min(figures)
    ours, bare = _marginal(totals[low], totals[top]), _marginal(floor[low], floor[top])
    print(
        f"<!-- summary: `fishtalk load`, text sessions per client core at {top} users "
        f"| {per_core:.0f} | goal 30 | {per_core / 30:.2f}x | ≥30 -->"
    )
    print(
        f"<!-- summary: `fishtalk load`, client CPU per added text session | {ours:.3f} s "
        f"| bare SDK participant {bare:.3f} s | {ours / bare:.2f}x | ≤1.3x -->\n"
    )
    print(
        f"One plain `locust -f` process (the shipped locustfile) per row, N users for "
        f"{RUN_SECONDS} s, each starting a text session (typed turn, 3 s wait, hang up) at most "
        "every 4 s, against the sim in its own process (quick chat scenario). CPU per "
        "session = client CPU / sessions started; busy = CPU / wall (100% = one core); RSS = "
        "the Locust process's peak. Sessions per core = users / busy at the top row (the "
        "users held at once per core of client CPU).\n"
    )
    print(
        "| users | sessions | wall s | client CPU s / session | sim CPU s / session "
        "| busy client / sim | client peak RSS MB | first text p50 / p95 s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(row)
    mem = (figures[top][2] - figures[low][2]) / (top - low) if top > low else float("nan")
    print(
        f"\nAt {top} users: {per_core:.0f} concurrent text sessions per core of client CPU, "
        f"about {mem:.1f} MB of client memory per added concurrent session."
    )
    print(
        f"\nThe floor: bare livekit SDK participants (`bench/load_floor.py`: httpx for the "
        f"grant, join, publish `user.message`, read the reply's transcript stream, wait, "
        f"hang up, the agent's audio drained), {low} and {top} at once, same sim, same pace: "
        f"{floor[low][0]} and {floor[top][0]} sessions, {floor[low][1]:.2f} and "
        f"{floor[top][1]:.2f} CPU s. CPU per added session, {low} to {top} users: fishtalk "
        f"{ours:.3f} s, the floor {bare:.3f} s ({ours / bare:.2f}x; goal ≤1.3x). The floor "
        f"holds {top / (floor[top][1] / floor[top][2]):.0f} sessions per core at {top} users, "
        f"against fishtalk's {per_core:.0f}: the SDK's own cost per session sets the "
        "capacity, not fishtalk's."
    )


if __name__ == "__main__":
    main()
