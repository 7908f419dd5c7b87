"""The OpenLive stand-in: a loopback WebSocket server speaking OpenLive's live protocol.

:mod:`.server` is the server (``fishtalk sim serve --openlive``); :mod:`.script` what it
says. It shares only :mod:`fishtalk.core.openlive` (the wire protocol) with the client.
"""

from __future__ import annotations

from fishtalk.sim.openlive.server import (
    DEFAULT_PACE_SECONDS,
    LIVE_PATH,
    OpenLiveSim,
    TurnRecord,
    run_openlive_sim,
)

__all__ = ["DEFAULT_PACE_SECONDS", "LIVE_PATH", "OpenLiveSim", "TurnRecord", "run_openlive_sim"]
