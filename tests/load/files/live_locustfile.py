"""fishtalk's locustfile plus a record, for the liveness test: the heartbeats this worker
received from the master, when each session connected and when the users began to stop,
written as JSON at quit to the path in ``FISHTALK_LIVE_OUT``."""

import json
import os
import time
from pathlib import Path
from typing import Any

from locust import events

from fishtalk.workbench.load.locustfile import FishtalkUser

__all__ = ["FishtalkUser"]

beats: list[float] = []
connects: list[float] = []
stopped: list[float] = []


def _beat(**_kwargs: Any) -> None:
    beats.append(time.time())


def _request(request_type: str, name: str, response_time: float, **kwargs: Any) -> None:
    if request_type == "session" and name.endswith(": start") and kwargs["exception"] is None:
        connects.append(kwargs["start_time"] + response_time / 1000)


def _stopped(**_kwargs: Any) -> None:
    stopped.append(time.time())


def _quit(**_kwargs: Any) -> None:
    out = os.environ.get("FISHTALK_LIVE_OUT")
    if out:
        Path(out).write_text(
            json.dumps({"beats": beats, "connects": connects, "stopped": stopped}), "utf-8"
        )


events.heartbeat_received.add_listener(_beat)
events.request.add_listener(_request)
# Stopping, not stopped: a worker handling "stop" reads no messages until its users end.
events.test_stopping.add_listener(_stopped)
events.quit.add_listener(_quit)
