"""A real, scripted HTTP server on 127.0.0.1 standing in for the Fish session API.

Each test scripts the replies (status, body, headers, an optional stall) in order and
then inspects the requests the server actually received.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it (header names lower-cased)."""

    method: str
    raw_path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    """A scripted answer. ``body``: bytes/str sent as is, anything else as JSON."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    stall: float = 0.0
    """Seconds to wait before answering (released early at teardown)."""


class ScriptedServer:
    """aiohttp server answering every request with the next scripted :class:`Reply`."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._replies: deque[Reply] = deque()
        self._release = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""

    def script(self, *replies: Reply) -> None:
        self._replies.extend(replies)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server  # aiohttp exposes the bound port only here
        assert server is not None
        port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]  # asyncio.Server
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        self._release.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            Recorded(
                method=request.method,
                raw_path=request.raw_path,
                headers={k.lower(): v for k, v in request.headers.items()},
                body=body,
            )
        )
        if not self._replies:
            return web.Response(status=599, text="test server: no reply scripted")
        reply = self._replies.popleft()
        if reply.stall:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._release.wait(), reply.stall)
        if reply.body is None:
            payload = b""
        elif isinstance(reply.body, bytes):
            payload = reply.body
        elif isinstance(reply.body, str):
            payload = reply.body.encode()
        else:
            payload = json.dumps(reply.body).encode()
        headers = dict(reply.headers)
        if reply.body is not None and not isinstance(reply.body, bytes | str):
            headers.setdefault("Content-Type", "application/json")
        return web.Response(status=reply.status, body=payload, headers=headers)


def grant_body(**changes: Any) -> dict[str, Any]:
    """A valid 201 body expiring in ten minutes; keyword arguments replace fields."""
    body: dict[str, Any] = {
        "session_id": "sess_123",
        "expires_at": (datetime.now(UTC) + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "max_duration_seconds": 1800,
        "transport": "livekit",
        "livekit_url": "wss://rtc.example.test",
        "token": "participant-jwt-abc",
    }
    body.update(changes)
    return body


class RawServer:
    """A bare TCP server on 127.0.0.1 for misbehaviour aiohttp would not produce.

    ``behaviour`` gets each connection's reader and writer; ``connections`` counts them.
    """

    def __init__(
        self,
        behaviour: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    ) -> None:
        self._behaviour = behaviour
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.connections = 0
        self.url = ""

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._on_connect, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await reader.readuntil(b"\r\n\r\n")  # the request head; bodies are tiny
            await self._behaviour(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # Only the stub's own shutdown (__aexit__) cancels a connection. End the task
            # normally: Python 3.11's start_server calls task.exception() on it when done,
            # which raises for a cancelled task and logs an "Exception in callback".
            task.uncancel()
        finally:
            self._tasks.discard(task)
            writer.close()
