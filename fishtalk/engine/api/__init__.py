"""The Fish Audio session API: create a session grant, end a session.

``client`` is the HTTP client (:class:`SessionClient`), ``models`` the request and grant
bodies, ``errors`` the mapping of error answers to errors; this package re-exports the
client's and the models' public names (the error classes are :mod:`fishtalk.core.errors`'s).

``POST {api}/v1/agent/sessions`` exchanges an agent id (and an API key, or for a public
agent an ``Origin``) for a :data:`SessionGrant`: where and how to join the realtime
session. ``POST {api}/v1/agent/sessions/{id}/end`` force-ends one. REST bodies are
snake_case. No livekit, no textual here.

Every failure is a :class:`fishtalk.core.errors.FishtalkError` with a one-line message for the
user (the API key never appears in any message, repr or log line). The tree, with
:class:`~fishtalk.core.errors.SessionApiError` over every status and transport failure, is
drawn once, in :mod:`fishtalk.core.errors`.

"""

from __future__ import annotations

from fishtalk.engine.api.client import DEFAULT_API_URL, SDK_HEADER, SDK_ID, SessionClient
from fishtalk.engine.api.models import (
    SUPPORTED_TRANSPORTS,
    LiveKitGrant,
    SessionGrant,
    SessionOverrides,
    SessionRequest,
    parse_grant,
)

__all__ = [
    "DEFAULT_API_URL",
    "SDK_HEADER",
    "SDK_ID",
    "SUPPORTED_TRANSPORTS",
    "LiveKitGrant",
    "SessionClient",
    "SessionGrant",
    "SessionOverrides",
    "SessionRequest",
    "parse_grant",
]
