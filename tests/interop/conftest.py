"""The interop suite's harness: the sim's server and session endpoint, with a real
livekit-agents agent (:mod:`support.lk_agent`) in every session's room instead of the
simulated one. It runs on the sim's thread, one per module; tests need the network
namespace (marker ``webrtc``) and the ``interop`` extra.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import pytest
from support.lk_agent import run_agent, vad

from fishtalk.sim.runner import SimInfo, SimThread

WAIT: Final = 30.0
"""Bound for every wait in these tests (seconds)."""


@pytest.fixture(scope="module")
def lk_sim() -> Iterator[SimInfo]:
    """The sim's LiveKit server and session API, a livekit-agents agent per session."""
    vad()  # the model loads once, here, not in the first call's time
    thread = SimThread(agent=run_agent)
    info = thread.start()
    try:
        yield info
    finally:
        thread.stop()


def options(sim: SimInfo, **more: Any) -> dict[str, Any]:
    """AgentSession options pointed at ``sim`` (text only: no audio devices)."""
    base: dict[str, Any] = {
        "agent_id": "lk-agents",
        "api_url": sim.api_url,
        "api_key": sim.dev_key,
        "text_only": True,
    }
    base.update(more)
    return base
