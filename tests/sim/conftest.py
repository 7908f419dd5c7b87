"""The scripted user of the sim agent tests: each test module brings its own ``sim``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from fishtalk.sim.runner import SimHandle

from .sim_user import UserClient


@pytest.fixture
async def user(sim: SimHandle) -> AsyncIterator[UserClient]:
    client = UserClient(sim)
    yield client
    await client.close()
