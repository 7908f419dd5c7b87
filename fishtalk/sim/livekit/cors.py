"""CORS for the sim's HTTP routes: every origin is allowed, as livekit-server does it.

The access token (or the API key) is the authentication, not the origin; browsers still
need the preflight answered and the headers on every answer.
"""

from __future__ import annotations

from typing import Final

from aiohttp import web
from aiohttp.typedefs import Handler

CORS_ALLOW_METHODS: Final = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
CORS_MAX_AGE: Final = "600"


def _cors_headers(request: web.BaseRequest) -> dict[str, str]:
    # Like livekit-server: every origin is allowed on every HTTP route, because the
    # access token (or the API key) is the authentication, not the origin.
    origin = request.headers.get("Origin")
    headers = {
        "Access-Control-Allow-Origin": origin or "*",
        "Access-Control-Expose-Headers": "*",
    }
    if origin:
        headers["Vary"] = "Origin"
    return headers


@web.middleware
async def cors_preflight(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Answer a CORS preflight (``OPTIONS`` with ``Access-Control-Request-Method``) on any path."""
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        headers = {
            "Access-Control-Allow-Methods": CORS_ALLOW_METHODS,
            "Access-Control-Max-Age": CORS_MAX_AGE,
        }
        asked = request.headers.get("Access-Control-Request-Headers")
        if asked:
            headers["Access-Control-Allow-Headers"] = asked
        return web.Response(status=204, headers=headers)
    return await handler(request)


async def add_cors_headers(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """``on_response_prepare``: the CORS headers on every answer (errors and upgrades too)."""
    for name, value in _cors_headers(request).items():
        response.headers.setdefault(name, value)
