"""The session API's answers as the sim gives them: JSON and bare errors shaped like Fish's,
pydantic's 422 list, and the responses injected by reserved agent ids (see
:mod:`fishtalk.sim.fish.endpoint` for the table).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

from aiohttp import web
from pydantic import JsonValue, ValidationError


def json_error(status: int, message: str, *, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON error body ``{status, message}``, as the real API sends them."""
    return web.json_response({"status": status, "message": message}, status=status, headers=headers)


def bare(status: int, *, headers: dict[str, str] | None = None) -> web.Response:
    """A status with no body."""
    return web.Response(status=status, headers=headers)


def bare_401() -> web.Response:
    """The bare 401 for a malformed ``Authorization`` header."""
    return bare(401, headers={"WWW-Authenticate": "Bearer"})


def _jsonable(value: object) -> JsonValue:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value  # type: ignore[return-value]  # just checked that it serialises


def validation_error(exc: ValidationError) -> web.Response:
    """422 with pydantic's error list (``loc`` under ``body``, input values left out)."""
    items: list[dict[str, JsonValue]] = []
    for err in exc.errors(include_url=False, include_input=False):
        item: dict[str, JsonValue] = {
            "type": err["type"],
            "loc": ["body", *err["loc"]],
            "msg": err["msg"],
        }
        if "ctx" in err:
            item["ctx"] = {k: _jsonable(v) for k, v in err["ctx"].items()}
        items.append(item)
    return web.json_response(items, status=422)


# Responses by reserved agent id (the table in the endpoint's docstring).
INJECTED: Final[dict[str, Callable[[], web.Response]]] = {
    "err-400": lambda: json_error(400, "Override 'system_prompt' is not allowed for this agent"),
    "err-401": lambda: json_error(401, "Invalid token"),
    "err-401-bare": bare_401,
    "err-401-expired": lambda: json_error(401, "Token expired"),
    "err-402": lambda: json_error(402, "Out of API credit"),
    "err-403-origin": lambda: json_error(403, "Origin not allowed"),
    "err-403-private": lambda: json_error(403, "Agent is not public"),
    "err-403-beta": lambda: json_error(403, "Agent platform is not enabled for this account"),
    "err-403-unavailable": lambda: json_error(403, "Agent is unavailable"),
    "err-404": lambda: json_error(404, "Agent not found"),
    "err-409": lambda: json_error(409, "Agent has no published version"),
    "err-415": lambda: bare(415),
    "err-422": lambda: web.json_response(
        [{"type": "missing", "loc": ["body", "agent_id"], "msg": "Field required"}], status=422
    ),
    "err-429": lambda: json_error(429, "Too many requests", headers={"Retry-After": "1"}),
    "err-500": lambda: json_error(500, "Internal server error"),
    "err-502": lambda: json_error(502, "Agent gateway is unreachable"),
    "err-503": lambda: json_error(
        503, "Service temporarily unavailable", headers={"Retry-After": "1"}
    ),
}

RESERVED_AGENT_IDS: Final = frozenset(
    {
        *INJECTED,
        "err-503-once",
        "err-badjson",
        "err-badgrant",
        "err-slow",
        "transport-webrtc",
        "expired",
    }
)
"""Agent ids that inject a response instead of creating a plain session."""
