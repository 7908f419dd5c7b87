"""``fishtalk sim serve`` as a person runs it: a real process, real HTTP, Ctrl-C."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import aiohttp
import httpx
import pytest
from support.openlive_client import next_frame, said, turn

import fishtalk.core.openlive as ol
from fishtalk.core.errors import SimServeError
from fishtalk.sim.cli import serve
from fishtalk.sim.fish.endpoint import DEFAULT_DEV_KEY
from fishtalk.sim.fish.scenario import BUILTIN, builtin_scenario

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
        _ctrl_c_stops_cleanly(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _ctrl_c_stops_cleanly(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "stopping" in out
    assert "Traceback" not in err


async def _one_openlive_turn(url: str) -> str:
    async with aiohttp.ClientSession() as http, http.ws_connect(url) as live:
        assert await next_frame(live) == ol.SseMessage(event=ol.Status(text="ready"))
        return said(await turn(live, "hi"))


def test_serve_openlive_answers_on_its_socket_and_stops_on_ctrl_c() -> None:
    proc = _start("--openlive", "--port", "0")
    try:
        lines = _read_banner(proc)
        url = lines[0].split(" on ", 1)[1]
        assert url.startswith("ws://127.0.0.1:")
        assert url.endswith("/live")
        assert asyncio.run(_one_openlive_turn(url)) == "You said: hi. What else?"
        _ctrl_c_stops_cleanly(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.parametrize(
    "extra", [["--scenario", "demo"], ["--agent-setting", "think_seconds=1"]], ids=str
)
def test_serve_openlive_refuses_the_fish_options_in_one_line(extra: list[str]) -> None:
    proc = subprocess.run(
        [*FISHTALK, "sim", "serve", "--openlive", "--port", "0", *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("fishtalk: --openlive plays the OpenLive stand-in's own script")
    assert proc.stderr.count("\n") == 1


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


@pytest.mark.parametrize("openlive", [[], ["--openlive"]], ids=["fish", "openlive"])
def test_port_in_use_is_one_line(openlive: list[str]) -> None:
    proc = _start("--port", "0")
    try:
        lines = _read_banner(proc)
        url_line = next(line for line in lines if line.strip().startswith("API URL:"))
        port = url_line.rsplit(":", 1)[1].strip()
        second = subprocess.run(
            [*FISHTALK, "sim", "serve", *openlive, "--port", port],
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


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FISHTALK, "sim", "serve", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("port", ["99999", "65536", "-1"])
def test_port_out_of_range_is_a_usage_error(port: str) -> None:
    proc = _run("--port", port)
    assert proc.returncode == 2, proc.stderr
    assert "--port" in proc.stderr
    assert "65535" in proc.stderr or ">= 0" in proc.stderr or "greater than" in proc.stderr
    assert "OverflowError" not in proc.stderr
    assert "unexpected error" not in proc.stderr
    assert proc.stdout == ""


def test_serve_refuses_a_port_out_of_range_before_listening() -> None:
    with pytest.raises(SimServeError, match=r"port 70000 is out of range \(0-65535"):
        serve(port=70000, out=io.StringIO())


def test_builtin_scenarios_come_from_the_registry() -> None:
    folder = resources.files("fishtalk.sim.fish").joinpath("scenarios")
    shipped = {e.name.removesuffix(".toml") for e in folder.iterdir() if e.name.endswith(".toml")}
    assert set(BUILTIN) == shipped
    assert {"demo", "converse", "tools"} <= shipped
    assert BUILTIN[0] == "demo"


def test_banner_lists_every_builtin_scenario() -> None:
    proc = _start("--port", "0")
    try:
        lines = _read_banner(proc)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)
    for name in BUILTIN:
        description = builtin_scenario(name).description
        assert description
        assert any(line.split()[:1] == [name] and description in line for line in lines), (
            f"{name!r} missing from the banner: {lines!r}"
        )


def test_help_names_every_builtin_scenario() -> None:
    proc = _run("--help")
    assert proc.returncode == 0
    for name in BUILTIN:
        assert name in proc.stdout


@pytest.mark.parametrize(
    ("given", "suggestion"), [("nope", None), ("dmeo", "demo"), ("tool", "tools")]
)
def test_unknown_scenario_lists_the_builtins(given: str, suggestion: str | None) -> None:
    proc = _run("--port", "0", "--scenario", given)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert f"'{given}'" in proc.stderr
    assert f"(built-in: {', '.join(BUILTIN)})" in proc.stderr
    if suggestion is None:
        assert "did you mean" not in proc.stderr
    else:
        assert f"did you mean '{suggestion}'?" in proc.stderr


def test_closed_stdout_after_the_banner_ends_quietly() -> None:
    # `fishtalk sim serve | head -3`, then Ctrl-C: the "stopping" line finds no reader.
    proc = _start("--port", "0")
    assert proc.stdout is not None
    try:
        for _ in range(3):
            assert proc.stdout.readline()
        proc.stdout.close()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert err == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_closed_stdout_before_the_banner_ends_quietly() -> None:
    # The reader is gone before anything is written: the simulator stops by itself.
    proc = _start("--port", "0")
    assert proc.stdout is not None
    proc.stdout.close()
    try:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert err == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_allow_origin_lets_a_web_app_create_a_public_session() -> None:
    """A browser app on its own dev server (another origin) creates a keyless session once
    ``--allow-origin`` names that origin; any other origin is still refused."""
    proc = _start("--port", "0", "--allow-origin", "http://localhost:5173")
    try:
        lines = _read_banner(proc)
        assert any("http://localhost:5173" in line for line in lines)
        api_url = next(line for line in lines if "API URL:" in line).split("API URL:")[1]
        url = f"{api_url.strip()}/v1/agent/sessions"
        body = {"agent_id": "err-409"}  # answered after the origin check: no agent joins
        allowed = httpx.post(
            url, json=body, headers={"Origin": "http://localhost:5173"}, timeout=10.0
        )
        assert allowed.status_code == 409
        assert allowed.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"
        other = httpx.post(url, json=body, headers={"Origin": "http://evil.test"}, timeout=10.0)
        assert other.status_code == 403
        assert "Origin not allowed" in other.text
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)


def test_agent_setting_applies_to_every_scenario_and_is_shown() -> None:
    """``--agent-setting KEY=VALUE`` (the timings tests inject) is echoed in the banner."""
    proc = _start("--port", "0", "--agent-setting", "think_seconds=0.8")
    try:
        lines = _read_banner(proc)
        assert "  Agent settings for every scenario: think_seconds=0.8" in lines
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("think_seconds=-1", "agent override think_seconds: must be"),
        ("thinking=1", "agent override thinking: is not a known setting"),
        ("audio_chunk_ms=15", "agent override audio_chunk_ms: must be a multiple of 10"),
        ("think_seconds", "agent setting 'think_seconds': expected KEY=VALUE"),
    ],
)
def test_bad_agent_setting_is_one_line(setting: str, message: str) -> None:
    proc = _run("--port", "0", "--agent-setting", setting)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"fishtalk: {message}")
    assert proc.stderr.count("\n") == 1
    assert proc.stdout == ""
