"""Fixtures for the session-API client tests (the server itself lives in api_stub.py)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest
from api_stub import ScriptedServer


@pytest.fixture
async def api_server() -> AsyncIterator[ScriptedServer]:
    server = ScriptedServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
