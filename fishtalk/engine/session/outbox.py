"""The outbox: the ONE ordered publisher of client events (the session's only way out).

Every client event leaves the same way: the reducer returns
:class:`~fishtalk.core.conversation.SendClientEvent`, the session puts that event here, and
the outbox's one task publishes it with ``publish_data``, one at a time, in the order put.
While the link is down (the SDK reconnecting) events wait for it (at most
:data:`LINK_WAIT`), so order holds across an outage. Nothing else in the session calls
``publish_data``; a test reads the source to keep it so.

To a livekit-agents agent (``protocol()`` says which, :mod:`fishtalk.core.protocol.livekit_agents`)
a typed turn goes as an ``lk.chat`` text stream instead, from here too, in the same order;
the events that agent has no way to receive are dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from fishtalk.core import conversation as conv
from fishtalk.core.protocol import TOPIC_CLIENT_EVENT, encode_client_event
from fishtalk.core.protocol.livekit_agents import TOPIC_CHAT, AgentProtocol, chat_text

if TYPE_CHECKING:
    from livekit import rtc

LINK_WAIT: Final = 30.0
"""How long a client event waits for the transport to come back before being reported."""

SentFn = Callable[[conv.ClientEventOut, bytes, float], None]
"""Told of each completed publish: the event, its bytes, when its publish was started."""
FailedFn = Callable[[conv.ClientEventOut, Exception], None]
"""Told of each event that could not be published, and why."""


class Outbox:
    """Publishes client events one at a time, in the order :meth:`put` received them.

    Make it on the session's loop; :meth:`run` is the publishing task (one per room).
    ``clock``: monotonic seconds; ``sent`` and ``failed`` are called on the loop;
    ``protocol``: the protocol the agent speaks, asked at each publish.
    """

    def __init__(
        self,
        clock: Callable[[], float],
        sent: SentFn,
        failed: FailedFn,
        protocol: Callable[[], AgentProtocol] = lambda: "fish",
    ) -> None:
        self._clock = clock
        self._sent = sent
        self._failed = failed
        self._protocol = protocol
        self._queue: asyncio.Queue[conv.ClientEventOut] = asyncio.Queue()
        self.link_up = asyncio.Event()
        """Set while the transport is up (publishing would fail otherwise)."""

    def put(self, event: conv.ClientEventOut) -> None:
        """Publish ``event`` after everything put before it."""
        self._queue.put_nowait(event)

    async def run(self, room: rtc.Room) -> None:
        """Publish what is put, in order, until cancelled."""
        queue, link_up = self._queue, self.link_up
        while True:
            event = await queue.get()
            try:
                if not link_up.is_set():
                    # While the SDK reconnects, publishing fails; the event waits instead.
                    try:
                        async with asyncio.timeout(LINK_WAIT):
                            await link_up.wait()
                    except TimeoutError as exc:
                        self._failed(event, exc)
                        continue
                try:
                    if self._protocol() == "livekit-agents":
                        text = chat_text(event)
                        if text is None:
                            continue  # that agent has no way to receive it
                        data = text.encode("utf-8")
                        started = self._clock()
                        await room.local_participant.send_text(text, topic=TOPIC_CHAT)
                    else:
                        data = encode_client_event(event)
                        started = self._clock()
                        await room.local_participant.publish_data(
                            data, reliable=True, topic=TOPIC_CLIENT_EVENT
                        )
                except Exception as exc:
                    self._failed(event, exc)
                    continue
                self._sent(event, data, started)
            finally:
                queue.task_done()

    async def drain(self, within: float) -> None:
        """Wait (at most ``within`` seconds) until everything put has been handled; only
        while the link is up (a link that is down is not waited on)."""
        if not self.link_up.is_set():
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await self._queue.join()


__all__ = ["LINK_WAIT", "Outbox"]
