"""``fishtalk sim serve`` as a person runs it: a real process, real HTTP, Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from fishtalk.sim.fish.endpoint import DEFAULT_DEV_KEY

FISHTALK = [sys.executable, "-m", "fishtalk"]


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*FISHTALK, "sim", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _read_banner(proc: subprocess.Popen[str], within: float = 30.0) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if "Ctrl-C" in line:
            return lines
    proc.kill()
    pytest.fail(f"no banner; got {lines!r}; stderr {proc.stderr.read() if proc.stderr else ''}")


def test_serve_prints_url_and_key_and_stops_on_ctrl_c() -> None:
    proc = _start("--port", "0", "--scenario", "converse")
    try:
        lines = _read_banner(proc)
        url_line = next(line for line in lines if line.strip().startswith("API URL:"))
        api_url = url_line.split("API URL:")[1].strip()
        assert api_url.startswith("http://127.0.0.1:")
        assert any(DEFAULT_DEV_KEY in line for line in lines)
        # The endpoint answers (an injected error: no agent, no WebRTC needed).
        r = httpx.post(
            f"{api_url}/v1/agent/sessions",
            json={"agent_id": "err-409"},
            headers={"Authorization": f"Bearer {DEFAULT_DEV_KEY}"},
            timeout=10.0,
        )
        assert r.status_code == 409
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert "stopping" in out
        assert "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_bad_scenario_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[steps]]\ndo = "dance"\n', encoding="utf-8")
    proc = subprocess.run(
        [*FISHTALK, "sim", "serve", "--port", "0", "--scenario", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"fishtalk: scenario {bad}: steps.0")
    assert proc.stderr.count("\n") == 1
    assert proc.stdout == ""


def test_port_in_use_is_one_line() -> None:
    proc = _start("--port", "0")
    try:
        lines = _read_banner(proc)
        url_line = next(line for line in lines if line.strip().startswith("API URL:"))
        port = url_line.rsplit(":", 1)[1].strip()
        second = subprocess.run(
            [*FISHTALK, "sim", "serve", "--port", port],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 2
        assert second.stderr.startswith(f"fishtalk: cannot listen on 127.0.0.1:{port}:")
        assert second.stderr.count("\n") == 1
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)
