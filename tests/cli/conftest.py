"""Fixtures for CLI tests: an in-process runner with isolated user dirs, and a small real
HTTP server on 127.0.0.1 that answers like the Fish session API."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiohttp import web

from fishtalk.cli.app import main

API_KEY = "sk-test-key-0123456789"
TOKEN = "lk-join-token-SECRET"


@dataclass
class CliResult:
    """What one `fishtalk ...` invocation did."""

    code: int
    out: str
    err: str


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point platformdirs at a temp dir and drop every fishtalk/Fish variable."""
    for name in list(os.environ):
        if name.startswith(("FISHTALK_", "FISH_")):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    return home


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run `fishtalk ARGS` in-process; return exit code, stdout and stderr."""

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        else:
            code = 0
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@dataclass
class Seen:
    """One request the fake API received."""

    method: str
    path: str
    headers: dict[str, str]
    body: object


@dataclass
class FakeFishApi:
    """A real aiohttp server on 127.0.0.1 speaking the session endpoints."""

    url: str = ""
    api_key: str = API_KEY
    token: str = TOKEN
    seen: list[Seen] = field(default_factory=list)

    async def create(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.seen.append(Seen("POST", request.path, dict(request.headers), body))
        auth = request.headers.get("Authorization")
        if auth is None and "Origin" not in request.headers:
            return web.json_response({"status": 403, "message": "Origin required"}, status=403)
        if auth is not None and auth != f"Bearer {API_KEY}":
            return web.json_response({"status": 401, "message": "Invalid token"}, status=401)
        if body.get("agent_id") == "missing":
            return web.json_response({"status": 404, "message": "Agent not found"}, status=404)
        expires = datetime.now(UTC) + timedelta(minutes=5)
        return web.json_response(
            {
                "session_id": "sess-123",
                "expires_at": expires.isoformat().replace("+00:00", "Z"),
                "max_duration_seconds": 1800,
                "transport": "livekit",
                "livekit_url": "wss://lk.example.test",
                "token": TOKEN,
            },
            status=201,
        )

    async def end(self, request: web.Request) -> web.Response:
        self.seen.append(Seen("POST", request.path, dict(request.headers), None))
        if request.match_info["sid"] == "sess-404":
            return web.json_response({"status": 404, "message": "Session not found"}, status=404)
        return web.Response(status=204)


@pytest.fixture
def fish_api() -> Iterator[FakeFishApi]:
    """Run FakeFishApi on its own loop in a thread (the CLI runs asyncio.run itself)."""
    api = FakeFishApi()
    app = web.Application()
    app.router.add_post("/v1/agent/sessions", api.create)
    app.router.add_post("/v1/agent/sessions/{sid}/end", api.end)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    started = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        host, port = runner.addresses[0][:2]
        api.url = f"http://{host}:{port}"
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, name="fake-fish-api", daemon=True)
    thread.start()
    assert started.wait(10), "fake API did not start"
    try:
        yield api
    finally:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
