"""The raw TCP stub shuts down without asyncio noise (no "Exception in callback" after
the test summary when a connection is still open at the end of a test)."""

from __future__ import annotations

import asyncio
from typing import Any

from api_stub import RawServer


async def test_closing_with_a_connection_still_open_reports_nothing() -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    handling = asyncio.Event()

    async def linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handling.set()
        await asyncio.Event().wait()  # still busy when the test ends

    try:
        async with RawServer(linger) as server:
            port = int(server.url.rsplit(":", 1)[1])
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\nHost: stub\r\n\r\n")
            await writer.drain()
            await asyncio.wait_for(handling.wait(), 10)
        # __aexit__ awaited the connection's task; asyncio's own done callback on it was
        # registered first, so it has already run (and reported, had the task failed).
        assert reported == []
        assert server.connections == 1
        writer.close()
    finally:
        loop.set_exception_handler(previous)
