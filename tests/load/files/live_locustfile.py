"""fishtalk's locustfile plus a record, for the liveness test: the heartbeats this worker
received from the master and the span of each session, written as JSON at quit to the path
in ``FISHTALK_LIVE_OUT``."""

import json
import os
import time
from pathlib import Path
from typing import Any

from locust import events

from fishtalk.workbench.load.locustfile import FishtalkUser

__all__ = ["FishtalkUser"]

beats: list[float] = []
sessions: list[tuple[float, float]] = []


def _beat(**_kwargs: Any) -> None:
    beats.append(time.time())


def _request(request_type: str, name: str, response_time: float, **kwargs: Any) -> None:
    if request_type == "session" and name.endswith("whole session"):
        start = kwargs["start_time"]
        sessions.append((start, start + response_time / 1000))


def _quit(**_kwargs: Any) -> None:
    out = os.environ.get("FISHTALK_LIVE_OUT")
    if out:
        Path(out).write_text(json.dumps({"beats": beats, "sessions": sessions}), "utf-8")


events.heartbeat_received.add_listener(_beat)
events.request.add_listener(_request)
events.quit.add_listener(_quit)
