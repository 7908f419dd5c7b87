"""Real Locust runs against the sim on 127.0.0.1 (WebRTC in the private namespace): a
master and two workers count what the sim saw, a worker with 20 users stays live,
Ctrl-C hangs every session up and still writes the report, ``fishtalk load`` over
forked worker processes writes Locust's CSV reports, and ``--web`` serves its live
statistics."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TextIO

import pytest

from .conftest import FILES, WAIT, Sim, free_port, locust, locust_env

# Generous: each test runs real Locust processes and WebRTC sessions on a shared host. One
# worker runs them one after another: each starts several processes and up to 20 sessions,
# and two side by side would load a 2-core host for no purpose of either (liveness under
# load is one test's subject, with its own 20 users).
pytestmark = [
    pytest.mark.webrtc,
    pytest.mark.timeout(300),
    pytest.mark.xdist_group("locust-runs"),
]


def _fishtalk_args(sim: Sim, test: str, *, pace: float = 0.5) -> list[str]:
    return [
        "--fishtalk-test", str(FILES / test), "--fishtalk-agent", "chat",
        "--fishtalk-api-url", sim.handle.api_url, "--fishtalk-pace", f"{pace:g}",
        "--fishtalk-max-sessions", "1000",
    ]  # fmt: skip


def _log(path: Path) -> TextIO:
    # Files, not pipes: an unread pipe fills up and blocks the process writing to it.
    return path.open("w", encoding="utf-8")


def _tail(path: Path, chars: int = 3000) -> str:
    """The end of a process's log, for an assertion's message."""
    return path.read_text("utf-8", "replace")[-chars:]


def _master_and_workers(
    sim: Sim, tmp_path: Path, test: str, *, users: int, workers: int, run_time: str
) -> tuple[int, list[int]]:
    env = locust_env(sim)
    port = free_port()
    # --stop-timeout bounds the sessions' finishing (a hello session takes about 5 s),
    # and each worker waits that long after a stop before it reads the master's quit.
    master = subprocess.Popen(
        locust(
            "--master", "--headless", "--master-bind-host", "127.0.0.1",
            "--master-bind-port", str(port), "--expect-workers", str(workers),
            "-u", str(users), "-r", str(users), "-t", run_time, "--stop-timeout", "10",
            "--json-file", str(tmp_path / "stats"), *_fishtalk_args(sim, test),
        ),
        env=env, stdout=_log(tmp_path / "master.log"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    started = [
        subprocess.Popen(
            locust("--worker", "--master-host", "127.0.0.1", "--master-port", str(port)),
            env=env,
            stdout=_log(tmp_path / f"worker{n}.log"),
            stderr=subprocess.STDOUT,
        )
        for n in range(workers)
    ]
    return master.wait(WAIT), [w.wait(WAIT) for w in started]


def test_a_master_and_two_workers_count_the_sessions_the_sim_saw(sim: Sim, tmp_path: Path) -> None:
    before = sim.sessions()
    master, workers = _master_and_workers(
        sim, tmp_path, "hello.toml", users=4, workers=2, run_time="3s"
    )
    assert master == 0, _tail(tmp_path / "master.log")
    assert workers == [0, 0], [_tail(tmp_path / f"worker{n}.log") for n in range(2)]
    entries = json.loads((tmp_path / "stats.json").read_text("utf-8"))  # Locust adds .json
    by_name = {(e["method"], e["name"]): e for e in entries}
    starts = by_name["session", "hello: start"]
    seen = sim.sessions() - before
    assert starts["num_requests"] == len(seen) > 0
    assert starts["num_failures"] == 0
    turn = ("turn", "hello: turn 1 (say 'hi') [first text]")
    assert turn in by_name, (sorted(by_name), _tail(tmp_path / "master.log"))
    assert by_name[turn]["num_requests"] == len(seen)
    assert by_name["session", "hello: whole session"]["num_failures"] == 0


def test_a_worker_with_20_users_stays_live_while_sessions_run(sim: Sim, tmp_path: Path) -> None:
    record = tmp_path / "live.json"
    env = locust_env(sim, FISHTALK_LIVE_OUT=str(record))
    port = free_port()
    master = subprocess.Popen(
        locust(
            "--master", "--headless", "--master-bind-host", "127.0.0.1",
            "--master-bind-port", str(port), "--expect-workers", "1", "-u", "20", "-r", "20",
            "-t", "12s", "--stop-timeout", "10", *_fishtalk_args(sim, "long.toml", pace=30),
        ),
        env=env, stdout=_log(tmp_path / "master.log"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    live = str(FILES / "live_locustfile.py")
    worker = subprocess.Popen(
        [sys.executable, "-m", "locust", "-f", live, "--worker", "--master-port", str(port)],
        env=env, stdout=_log(tmp_path / "worker.log"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    # Exit 1 is allowed: on a loaded host a session may time out starting; liveness is
    # what this test is about.
    assert master.wait(WAIT) in (0, 1), _tail(tmp_path / "master.log")
    assert worker.wait(WAIT) in (0, 1), _tail(tmp_path / "worker.log")
    master_log = (tmp_path / "master.log").read_text("utf-8")
    worker_log = (tmp_path / "worker.log").read_text("utf-8")
    # Locust's own verdicts on liveness, both ways. (A worker handling "stop" blocks its
    # receiving for up to twice --stop-timeout; 10 s keeps that well under Locust's 60 s.)
    assert "failed to send heartbeat" not in master_log
    assert "setting state to missing" not in master_log
    assert "Didn't get heartbeat" not in worker_log
    data = json.loads(record.read_text("utf-8"))
    # From the first session connected until the run began to stop (each session holds a
    # 4 s wait), the worker's hub kept receiving the master's heartbeats (one a second; the
    # master sends each in answer to the worker's).
    assert data["connects"]
    assert data["stopped"]
    first, stop = min(data["connects"]), min(data["stopped"])
    assert any(first <= beat <= stop for beat in data["beats"])


def test_ctrl_c_hangs_every_session_up_and_writes_the_report(sim: Sim, tmp_path: Path) -> None:
    before = sim.sessions()
    html = tmp_path / "report.html"
    run = subprocess.Popen(
        [
            sys.executable, "-m", "fishtalk", "load", str(FILES / "held.toml"),
            "--agent", "chat", "--api-url", sim.handle.api_url, "--yes", "-u", "3", "-r", "3",
            "-t", "5m", "--max-sessions", "1000", "--html", str(html),
        ],
        env=locust_env(sim), stdout=_log(tmp_path / "run.log"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + WAIT
    while len(sim.sessions() - before) < 3:
        assert run.poll() is None
        assert time.monotonic() < deadline
        time.sleep(0.1)
    opened = sim.sessions() - before
    sim.all_noted(opened, "received user.message", within=90)  # connected, in the minute-long wait
    run.send_signal(signal.SIGINT)
    run.wait(WAIT)
    sim.all_noted(opened, "received user.hangup")
    out = (tmp_path / "run.log").read_text("utf-8")
    assert html.exists(), out[-3000:]
    assert "Traceback" not in out


def test_fishtalk_load_over_two_processes_writes_locusts_csv(sim: Sim, tmp_path: Path) -> None:
    """``--processes`` forks Locust's workers (each starts its own engine after the fork);
    ``--csv`` writes Locust's reports, whose totals are the sessions the sim saw."""
    before = sim.sessions()
    prefix = tmp_path / "run"
    run = subprocess.run(
        [
            sys.executable, "-m", "fishtalk", "load", str(FILES / "hello.toml"),
            "--agent", "chat", "--api-url", sim.handle.api_url, "--yes", "-u", "4", "-r", "4",
            "-t", "3s", "--max-sessions", "1000", "--processes", "2", "--csv", str(prefix),
            "--pace", "0.5", "--stop-timeout", "10",
        ],
        env=locust_env(sim), stdout=_log(tmp_path / "run.log"), stderr=subprocess.STDOUT,
        timeout=WAIT,
    )  # fmt: skip
    assert run.returncode == 0, _tail(tmp_path / "run.log")
    seen = sim.sessions() - before
    with (tmp_path / "run_stats.csv").open(encoding="utf-8", newline="") as table:
        rows = {(r["Type"], r["Name"]): r for r in csv.DictReader(table)}
    starts = rows["session", "hello: start"]
    assert int(starts["Request Count"]) == len(seen) > 0
    assert int(starts["Failure Count"]) == 0
    turn = ("turn", "hello: turn 1 (say 'hi') [first text]")
    assert turn in rows, (sorted(rows), _tail(tmp_path / "run.log"))
    assert int(rows[turn]["Request Count"]) == len(seen)
    assert (tmp_path / "run_stats_history.csv").exists()
    assert "Traceback" not in _tail(tmp_path / "run.log", 100_000)


def test_fishtalk_load_web_serves_locusts_live_stats(sim: Sim, tmp_path: Path) -> None:
    """``--web``: Locust's web UI on 127.0.0.1 (Locust's own flags pass through), its live
    statistics naming fishtalk's requests while the run goes on."""
    port = free_port()
    run = subprocess.Popen(
        [
            sys.executable, "-m", "fishtalk", "load", str(FILES / "hello.toml"),
            "--agent", "chat", "--api-url", sim.handle.api_url, "--yes", "-u", "2", "-r", "2",
            "-t", "6s", "--max-sessions", "1000", "--web", "--web-host", "127.0.0.1",
            "--web-port", str(port), "--autostart", "--autoquit", "1",
        ],
        env=locust_env(sim), stdout=_log(tmp_path / "run.log"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1 only
    names: set[str] = set()
    page = ""
    deadline = time.monotonic() + WAIT
    try:
        while "hello: start" not in names:
            assert run.poll() is None, _tail(tmp_path / "run.log")
            assert time.monotonic() < deadline, _tail(tmp_path / "run.log")
            time.sleep(0.2)
            try:
                with direct.open(f"http://127.0.0.1:{port}/stats/requests", timeout=5) as reply:
                    stats = json.loads(reply.read())
                with direct.open(f"http://127.0.0.1:{port}/", timeout=5) as reply:
                    page = reply.read().decode("utf-8", "replace")
            except OSError:
                continue  # not listening yet
            names = {str(row.get("name")) for row in stats.get("stats", [])}
        assert "locust" in page.lower()
        assert run.wait(WAIT) == 0, _tail(tmp_path / "run.log")
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(WAIT)
    assert "Traceback" not in _tail(tmp_path / "run.log", 100_000)
