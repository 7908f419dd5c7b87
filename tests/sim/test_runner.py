"""The runners: SimThread (for `fishtalk demo`) and SimProcess (for `fishtalk test --sim`),
without any WebRTC."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import httpx
import pytest

from fishtalk.core.errors import ScenarioError
from fishtalk.sim.fish.endpoint import DEFAULT_DEV_KEY
from fishtalk.sim.process import SimProcess
from fishtalk.sim.runner import DEV_KEY, SimThread


def test_dev_keys_agree() -> None:
    assert DEV_KEY == DEFAULT_DEV_KEY


def test_sim_thread_serves_and_stops() -> None:
    before = {t.name for t in threading.enumerate()}
    sim = SimThread("demo")
    info = sim.start()
    try:
        assert info.api_url.startswith("http://127.0.0.1:")
        assert info.dev_key == DEV_KEY
        assert sim.start() == info  # idempotent
        r = httpx.post(
            f"{info.api_url}/v1/agent/sessions",
            json={"agent_id": "err-502"},
            headers={"Authorization": f"Bearer {info.dev_key}"},
            timeout=10.0,
        )
        assert r.status_code == 502
    finally:
        sim.stop()
    assert "fishtalk-sim" not in {t.name for t in threading.enumerate()} - before
    with pytest.raises(httpx.ConnectError):
        httpx.post(f"{info.api_url}/v1/agent/sessions", json={}, timeout=2.0)
    sim.stop()  # twice is harmless


def test_sim_thread_context_manager_and_bad_scenario(tmp_path: Path) -> None:
    with SimThread() as info:
        assert info.api_url
    bad = tmp_path / "bad.toml"
    bad.write_text("then = 3", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"bad\.toml"):
        SimThread(bad).start()


def test_sim_process_serves_ignores_ctrl_c_and_stops() -> None:
    """The sim in a child process (``fishtalk test --sim``): it answers, a Ctrl-C at the
    terminal (SIGINT to the whole group) leaves it serving, and stop() ends the child."""
    sim = SimProcess("demo")
    info = sim.start()
    try:
        assert sim.start() == info  # idempotent
        pid = sim.pid
        assert pid is not None
        os.kill(pid, signal.SIGINT)
        r = httpx.post(
            f"{info.api_url}/v1/agent/sessions",
            json={"agent_id": "err-502"},
            headers={"Authorization": f"Bearer {info.dev_key}"},
            timeout=10.0,
        )
        assert r.status_code == 502
        assert sim.pid == pid  # still serving
    finally:
        sim.stop()
    assert sim.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # gone, and reaped
    with pytest.raises(httpx.ConnectError):
        httpx.post(f"{info.api_url}/v1/agent/sessions", json={}, timeout=2.0)
    sim.stop()  # twice is harmless


def test_sim_process_raises_what_starting_raised(tmp_path: Path) -> None:
    """A bad ``[agent]`` setting, found in the child, is raised in the parent as itself
    (exit 2 at the CLI), and the child is gone."""
    sim = SimProcess(agent_overrides={"think_seconds": "soon"})
    with pytest.raises(ScenarioError, match="think_seconds"):
        sim.start()
    assert sim.pid is None
    bad = tmp_path / "bad.toml"
    bad.write_text("then = 3", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"bad\.toml"):
        SimProcess(bad).start()
