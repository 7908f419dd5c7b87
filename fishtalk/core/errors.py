"""The one exception tree of fishtalk (every :class:`FishtalkError` subclass lives here).

Every failure a user can cause or meet is a :class:`FishtalkError`: ``str(exc)`` is one
plain sentence meant for the terminal (no traceback, no markup, never a secret). The
exceptions carry no exit code: the one exit-code table, at the CLI edge
(:mod:`fishtalk.cli.exits`), maps classes to codes (the column on the right). Programming
errors stay ordinary exceptions.

::

    FishtalkError                         exit code
    ├── ClientConfigError                 2  bad base URL, origin or API key shape
    ├── ConfigError                       2  bad config file / flags
    ├── JournalError                      2  a journal that cannot be used
    ├── AudioDeviceError                  2  a device spec that matches nothing
    ├── TestFileError, RunLimitError      2  agent tests: bad file, too many sessions
    ├── ScenarioError, SimServeError      2  the sim: bad scenario, cannot serve
    ├── SimStartError                     7  the demo's sim could not start
    ├── SessionEndedError                 1  (AgentSession) the session ended meanwhile
    │   └── ConnectionFailedError         7  it could not be joined
    ├── SessionApiError                      the session API failed (catch this for any of it)
    │   ├── ApiError (status, reason)        the API answered with an error status
    │   │   ├── BadRequestError           6  400 (override not allowed, malformed JSON)
    │   │   ├── AuthenticationError       3  401 (missing, invalid or expired API key)
    │   │   ├── PaymentRequiredError      3  402 (out of API credit)
    │   │   ├── ForbiddenError            3  403, any other cause
    │   │   │   ├── OriginForbiddenError  3  403, Origin missing or not allowed
    │   │   │   ├── AgentNotPublicError   3  403, keyless request to a private agent
    │   │   │   └── AgentUnavailableError 3  403, agent unavailable / platform not enabled
    │   │   ├── NotFoundError             4  404
    │   │   ├── ConflictError             4  409 (agent has no published version)
    │   │   ├── UnsupportedMediaTypeError 6  415
    │   │   ├── RequestValidationError    6  422 (``field_errors`` lists each problem)
    │   │   ├── RateLimitedError          5  429 (public creation rate limit)
    │   │   ├── ServerError               5  5xx
    │   │   │   ├── BadGatewayError       5  502 (retried)
    │   │   │   └── ServiceUnavailableError 5  503 (retried)
    │   │   └── UnexpectedResponseError   5  a status or body the contract does not describe
    │   └── ApiTransportError                no answer from the API at all
    │       ├── ApiTimeoutError           5  no answer within the timeout
    │       └── ApiConnectionError        5  refused, DNS, TLS or other network failure
    ├── UnsupportedTransportError         6  grant names a transport we cannot speak
    ├── SessionExpiredError               6  grant's join deadline already passed
    ├── OpenLiveProtocolError             7  an OpenLive server broke its protocol
    └── SpeechUnavailableError            2  the ``speech`` extra or espeak-ng is missing

The CLI catches :class:`FishtalkError` at its edge, prints ``str(exc)`` on one line and
exits with the code the one table in :mod:`fishtalk.cli.exits` gives. Front ends only need to
know whether a call went well (:func:`ended_well`, by :data:`FAILED_END_REASONS`), never a code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final


class FishtalkError(Exception):
    """Root of every user-facing fishtalk failure; ``str(exc)`` is one line for the user."""


class ClientConfigError(FishtalkError):
    """The API client was given an unusable setting (URL, origin, API key shape)."""


@dataclass(frozen=True)
class FieldError:
    """One entry of a 422 validation error list."""

    location: str
    """Dotted path of the offending field, without the leading ``body``."""
    message: str
    """The server's description of the problem."""
    kind: str | None = None
    """Machine-readable error type (``string_too_long``, ``extra_forbidden``...)."""

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


class SessionApiError(FishtalkError):
    """The session API failed: it answered with an error status (:class:`ApiError`) or not
    at all (:class:`ApiTransportError`). Catch this for "creating or ending a session did
    not work", whatever the cause."""


class ApiError(SessionApiError):
    """The session API answered with an error status.

    ``status`` is the HTTP status; ``reason`` the machine-readable ``reason`` (or ``code``)
    from the error body when present; ``detail`` the body's human ``message``.
    """

    def __init__(
        self, message: str, *, status: int, reason: str | None = None, detail: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.detail = detail

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r}, status={self.status})"


class BadRequestError(ApiError):
    """400: well-formed but semantically wrong (e.g. an override the agent does not allow)."""


class AuthenticationError(ApiError):
    """401: the API key is missing, malformed, invalid or expired."""


class PaymentRequiredError(ApiError):
    """402: the account is out of API credit."""


class ForbiddenError(ApiError):
    """403: the caller may not do this."""


class OriginForbiddenError(ForbiddenError):
    """403 on a keyless request: ``Origin`` missing or not on the agent's allow-list."""


class AgentNotPublicError(ForbiddenError):
    """403 on a keyless request: the agent's public switch is off."""


class AgentUnavailableError(ForbiddenError):
    """403: the agent cannot serve sessions now, or the account lacks agent access."""


class NotFoundError(ApiError):
    """404: no such agent or session (or it belongs to another team)."""


class ConflictError(ApiError):
    """409: a state conflict, most often an agent without a published version."""


class UnsupportedMediaTypeError(ApiError):
    """415: missing body or wrong content type (a client bug)."""


class RequestValidationError(ApiError):
    """422: field-level validation failed; ``field_errors`` lists each problem."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        field_errors: tuple[FieldError, ...] = (),
        reason: str | None = None,
        detail: str | None = None,
    ) -> None:
        super().__init__(message, status=status, reason=reason, detail=detail)
        self.field_errors = field_errors


class RateLimitedError(ApiError):
    """429: public session creation is rate limited; ``retry_after`` in seconds if given."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        retry_after: float | None = None,
        reason: str | None = None,
        detail: str | None = None,
    ) -> None:
        super().__init__(message, status=status, reason=reason, detail=detail)
        self.retry_after = retry_after


class ServerError(ApiError):
    """5xx: the service failed."""


class BadGatewayError(ServerError):
    """502: the agent gateway (or another upstream) was unreachable; safe to retry."""


class ServiceUnavailableError(ServerError):
    """503: a platform dependency is briefly unavailable; retry with backoff."""


class UnexpectedResponseError(ApiError):
    """A status or body the contract does not describe (not JSON, missing fields...)."""


class UnsupportedTransportError(FishtalkError):
    """The grant names a transport this version cannot speak; ``transport`` holds it ("" when
    the API offered none). The message has the shape of every config error: what, where,
    and what is allowed."""

    def __init__(
        self,
        transport: str,
        *,
        where: str = "the session grant",
        detail: str | None = None,
        speaks: tuple[str, ...] = ("livekit",),
    ) -> None:
        what = f"unsupported transport: {transport!r}" if transport else "no supported transport"
        said = f" ({detail})" if detail else ""
        super().__init__(
            f"{what} in {where}{said}: this fishtalk speaks {' or '.join(speaks)} only "
            "(a newer fishtalk may speak more)"
        )
        self.transport = transport


class SessionExpiredError(FishtalkError):
    """The grant's join deadline (``expires_at``) has passed; create a new session."""


class OpenLiveProtocolError(FishtalkError):
    """An OpenLive peer sent a frame that is not its protocol: too large, not JSON, not
    an object, or a known message with the wrong shape (unknown types and fields are not
    errors). ``kind`` says which: ``too_large``, ``not_json``, ``not_object``, ``no_tag``
    or ``bad_shape``."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class SpeechUnavailableError(FishtalkError):
    """Offline speech needs a part that is not installed; ``str(exc)`` says which, in a line.

    ``part`` is ``"pocketsphinx"`` (install the ``speech`` extra) or ``"espeak-ng"`` (a
    system package).
    """

    def __init__(self, part: str, how: str) -> None:
        super().__init__(f"offline speech needs {part}: {how}")
        self.part = part
        self.how = how

    def __reduce__(self) -> tuple[type[SpeechUnavailableError], tuple[str, str]]:
        # Raised in the speech process too (fishtalk.speech.process), and pickled back.
        return (type(self), (self.part, self.how))


class ApiTransportError(SessionApiError):
    """No answer from the session API: it timed out or could not be reached."""


class ApiTimeoutError(ApiTransportError):
    """The session API did not answer within the configured timeout."""


class ApiConnectionError(ApiTransportError):
    """The session API could not be reached (refused, DNS, TLS, network down)."""


class ConfigError(FishtalkError):
    """Bad configuration: broken TOML, an unknown key, an invalid value, conflicting flags."""


class JournalError(FishtalkError):
    """A journal that cannot be used: missing, not a journal, from a newer fishtalk, or
    damaged (when the command cannot go on with what was readable)."""


class AudioDeviceError(FishtalkError):
    """A device spec matched nothing usable (the message lists the choices)."""


class TestFileError(FishtalkError):
    """A test file that cannot be read or does not follow the format."""

    __test__ = False  # not a pytest class


class RunLimitError(FishtalkError):
    """The run would open more sessions than ``--max-sessions`` allows."""


class ScenarioError(FishtalkError):
    """A scenario file that cannot be read or does not follow the format."""


class SimServeError(FishtalkError):
    """The simulator could not start (port taken, address not available)."""


class SimStartError(FishtalkError):
    """The demo's simulator could not start (like a connection never established)."""


class SessionEndedError(FishtalkError):
    """The session ended while (or before) you were waiting on it.

    ``reason`` is the end reason (``user_hangup``, ``agent_hangup``, ``connection_lost``,
    ...); ``result`` says how it ended. Raised by :meth:`AgentSession.send_text`,
    :meth:`AgentSession.wait_for_reply` and :meth:`AgentSession.wait_for` when what they
    wait for can no longer happen. (The CLI never raises it: were it to reach the CLI's
    edge, it would be an unexpected error, exit code 1.)
    """

    def __init__(self, message: str, *, reason: str, result: Any = None) -> None:
        super().__init__(message)
        self.reason = reason
        """The end reason."""
        self.result = result
        """How the session ended: a :class:`fishtalk.engine.session.EndResult` (None if
        unknown; typed loosely because core sits below the engine)."""


class ConnectionFailedError(SessionEndedError):
    """The session could not be joined (``connection_failed``): WebRTC could not connect,
    or the agent never came. Session-API failures raise their own classes
    (:class:`SessionApiError` and below) instead."""


END_UNSUPPORTED_TRANSPORT: Final = "unsupported_transport"
"""The end reason of a session whose grant named a transport fishtalk cannot speak."""

FAILED_END_REASONS: Final[frozenset[str]] = frozenset(
    {
        "connection_lost",
        "connection_failed",
        "session_expired",
        END_UNSUPPORTED_TRANSPORT,
        "agent_not_public",
        "origin_forbidden",
        "session_request_failed",
        "interrupted",
    }
)
"""The end reasons that mean the call failed (``interrupted``: a signal, Ctrl-C, cut it).
Any other reason is a deliberate ending (the agent's set is open); the CLI's exit-code
table gives each of these its own code."""


def ended_well(reason: str | None, error: BaseException | None = None) -> bool:
    """Whether a call that ended with ``reason`` (and ``error``) went as it should: no error,
    and a reason that is not a failure (None: it never ended, so it did not)."""
    return error is None and reason is not None and reason not in FAILED_END_REASONS


__all__ = [
    "END_UNSUPPORTED_TRANSPORT",
    "FAILED_END_REASONS",
    "AgentNotPublicError",
    "AgentUnavailableError",
    "ApiConnectionError",
    "ApiError",
    "ApiTimeoutError",
    "ApiTransportError",
    "AudioDeviceError",
    "AuthenticationError",
    "BadGatewayError",
    "BadRequestError",
    "ClientConfigError",
    "ConfigError",
    "ConflictError",
    "ConnectionFailedError",
    "FieldError",
    "FishtalkError",
    "ForbiddenError",
    "JournalError",
    "NotFoundError",
    "OpenLiveProtocolError",
    "OriginForbiddenError",
    "PaymentRequiredError",
    "RateLimitedError",
    "RequestValidationError",
    "RunLimitError",
    "ScenarioError",
    "ServerError",
    "ServiceUnavailableError",
    "SessionApiError",
    "SessionEndedError",
    "SessionExpiredError",
    "SimServeError",
    "SimStartError",
    "SpeechUnavailableError",
    "TestFileError",
    "UnexpectedResponseError",
    "UnsupportedMediaTypeError",
    "UnsupportedTransportError",
    "ended_well",
]
