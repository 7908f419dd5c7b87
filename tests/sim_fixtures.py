"""Pytest fixtures for tests that join real ``livekit.rtc.Room`` clients to the sim server.

Loaded as a plugin by ``tests/conftest.py``; the helpers they use (and that benchmarks use
too) are in :mod:`support.sim_clients`. Tests using these need the network
namespace (mark them ``@pytest.mark.webrtc``).

* ``sim_server``: a started :class:`~fishtalk.sim.livekit.server.SimServer` (stopped
  afterwards).
* ``room_factory``: ``await room_factory(room, identity, kind=..., attributes=...)``
  connects a new ``rtc.Room`` with a minted token and returns a
  :class:`~support.sim_clients.Client`; every client is disconnected at teardown.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping

import pytest
from support.sim_clients import Client, RoomFactory, connect_client

from fishtalk.sim.livekit.server import ParticipantKindName, SimServer


@pytest.fixture
async def sim_server() -> AsyncIterator[SimServer]:
    """A started SimServer on 127.0.0.1 (random port), stopped after the test."""
    async with SimServer() as server:
        yield server


@pytest.fixture
async def room_factory(sim_server: SimServer) -> AsyncIterator[RoomFactory]:
    """Connect clients to ``sim_server``; all are disconnected after the test."""
    clients: list[Client] = []

    async def make(
        room: str,
        identity: str,
        *,
        kind: ParticipantKindName = "standard",
        name: str | None = None,
        attributes: Mapping[str, str] | None = None,
    ) -> Client:
        client = await connect_client(
            sim_server, room, identity, kind=kind, name=name, attributes=attributes
        )
        clients.append(client)
        return client

    try:
        yield make
    finally:
        for client in clients:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.room.disconnect(), 5.0)
