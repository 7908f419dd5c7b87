"""The one exception tree of fishtalk, and the process exit codes it maps to.

Every failure a user can cause or meet is a :class:`FishtalkError`: ``str(exc)`` is one
plain sentence meant for the terminal (no traceback, no markup, never a secret) and the
class carries the exit code the CLI returns. Programming errors stay ordinary exceptions.

::

    FishtalkError                         exit_code
    ├── ClientConfigError                 2  bad base URL, origin or API key shape
    ├── ConfigError (fishtalk.cli.config)     2  bad config file / flags
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
    └── SpeechUnavailableError            2  the ``speech`` extra or espeak-ng is missing

The CLI catches :class:`FishtalkError` at its edge, prints ``str(exc)`` on one line and
exits with ``exc.exit_code``.

Exit codes are picked only at the CLI edge (``cli.py`` and ``launch.py``), from one table:
:func:`exit_code_for` maps how a session ended (its end reason, and the error class that
ended it, if any) to the process exit code. The error column of that table is the
``exit_code`` each class above carries; the end-reason column is
:data:`EXIT_BY_END_REASON`. The README's exit-code table is the reference (a test checks
both against it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Final

EXIT_OK: Final = 0
"""Success."""
EXIT_ERROR: Final = 1
"""Unexpected failure (a bug, or something no other code describes)."""
EXIT_USAGE: Final = 2
"""Bad flags or bad configuration."""
EXIT_AUTH: Final = 3
"""Refused: 401, 402 or 403."""
EXIT_NOT_FOUND: Final = 4
"""The agent or session does not exist, or is not usable yet (404, 409)."""
EXIT_UNAVAILABLE: Final = 5
"""Service or network trouble: 429, 5xx, timeouts, refused connections."""
EXIT_REJECTED: Final = 6
"""The request or grant was rejected: 400, 415, 422, unsupported transport, expired grant."""
EXIT_CONNECTION: Final = 7
"""The realtime session ended because the connection was lost or never established."""
EXIT_INTERRUPTED: Final = 130
"""Interrupted by the user (Ctrl-C)."""


class FishtalkError(Exception):
    """Root of every user-facing fishtalk failure; ``str(exc)`` is one line for the user."""

    exit_code: ClassVar[int] = EXIT_ERROR


class ClientConfigError(FishtalkError):
    """The API client was given an unusable setting (URL, origin, API key shape)."""

    exit_code: ClassVar[int] = EXIT_USAGE


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

    exit_code: ClassVar[int] = EXIT_UNAVAILABLE


class ApiError(SessionApiError):
    """The session API answered with an error status.

    ``status`` is the HTTP status; ``reason`` the machine-readable ``reason`` (or ``code``)
    from the error body when present; ``detail`` the body's human ``message``.
    """

    exit_code: ClassVar[int] = EXIT_UNAVAILABLE

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

    exit_code: ClassVar[int] = EXIT_REJECTED


class AuthenticationError(ApiError):
    """401: the API key is missing, malformed, invalid or expired."""

    exit_code: ClassVar[int] = EXIT_AUTH


class PaymentRequiredError(ApiError):
    """402: the account is out of API credit."""

    exit_code: ClassVar[int] = EXIT_AUTH


class ForbiddenError(ApiError):
    """403: the caller may not do this."""

    exit_code: ClassVar[int] = EXIT_AUTH


class OriginForbiddenError(ForbiddenError):
    """403 on a keyless request: ``Origin`` missing or not on the agent's allow-list."""


class AgentNotPublicError(ForbiddenError):
    """403 on a keyless request: the agent's public switch is off."""


class AgentUnavailableError(ForbiddenError):
    """403: the agent cannot serve sessions now, or the account lacks agent access."""


class NotFoundError(ApiError):
    """404: no such agent or session (or it belongs to another team)."""

    exit_code: ClassVar[int] = EXIT_NOT_FOUND


class ConflictError(ApiError):
    """409: a state conflict, most often an agent without a published version."""

    exit_code: ClassVar[int] = EXIT_NOT_FOUND


class UnsupportedMediaTypeError(ApiError):
    """415: missing body or wrong content type (a client bug)."""

    exit_code: ClassVar[int] = EXIT_REJECTED


class RequestValidationError(ApiError):
    """422: field-level validation failed; ``field_errors`` lists each problem."""

    exit_code: ClassVar[int] = EXIT_REJECTED

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

    exit_code: ClassVar[int] = EXIT_UNAVAILABLE

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

    exit_code: ClassVar[int] = EXIT_UNAVAILABLE


class BadGatewayError(ServerError):
    """502: the agent gateway (or another upstream) was unreachable; safe to retry."""


class ServiceUnavailableError(ServerError):
    """503: a platform dependency is briefly unavailable; retry with backoff."""


class UnexpectedResponseError(ApiError):
    """A status or body the contract does not describe (not JSON, missing fields...)."""

    exit_code: ClassVar[int] = EXIT_UNAVAILABLE


class UnsupportedTransportError(FishtalkError):
    """The grant names a transport this version cannot speak; ``transport`` holds it."""

    exit_code: ClassVar[int] = EXIT_REJECTED

    def __init__(self, transport: str) -> None:
        super().__init__(
            f"unsupported transport: {transport} (this fishtalk only speaks livekit; "
            "a newer fishtalk may support it)"
        )
        self.transport = transport


class SessionExpiredError(FishtalkError):
    """The grant's join deadline (``expires_at``) has passed; create a new session."""

    exit_code: ClassVar[int] = EXIT_REJECTED


class SpeechUnavailableError(FishtalkError):
    """Offline speech needs a part that is not installed; ``str(exc)`` says which, in a line.

    ``part`` is ``"pocketsphinx"`` (install the ``speech`` extra) or ``"espeak-ng"`` (a
    system package).
    """

    exit_code: ClassVar[int] = EXIT_USAGE

    def __init__(self, part: str, how: str) -> None:
        super().__init__(f"offline speech needs {part}: {how}")
        self.part = part


class ApiTransportError(SessionApiError):
    """No answer from the session API: it timed out or could not be reached."""

    exit_code: ClassVar[int] = EXIT_UNAVAILABLE


class ApiTimeoutError(ApiTransportError):
    """The session API did not answer within the configured timeout."""

    exit_code: ClassVar[int] = EXIT_UNAVAILABLE


class ApiConnectionError(ApiTransportError):
    """The session API could not be reached (refused, DNS, TLS, network down)."""

    exit_code: ClassVar[int] = EXIT_UNAVAILABLE


END_UNSUPPORTED_TRANSPORT: Final = "unsupported_transport"
"""The end reason of a session whose grant named a transport fishtalk cannot speak."""

EXIT_BY_END_REASON: Final[Mapping[str, int]] = {
    "user_hangup": EXIT_OK,
    "agent_hangup": EXIT_OK,
    "conversation_timeout": EXIT_OK,
    "escalated": EXIT_OK,
    "connection_lost": EXIT_CONNECTION,
    "connection_failed": EXIT_CONNECTION,
    "session_expired": EXIT_REJECTED,
    END_UNSUPPORTED_TRANSPORT: EXIT_REJECTED,
    "agent_not_public": EXIT_AUTH,
    "origin_forbidden": EXIT_AUTH,
    "session_request_failed": EXIT_UNAVAILABLE,
}
"""Exit code per end reason. A reason not listed is one the agent announced on purpose (an
open set): a deliberate ending, so it exits 0 like the known ones."""


def exit_code_for(
    reason: str | None, error: FishtalkError | type[BaseException] | BaseException | None = None
) -> int:
    """The process exit code for a session that ended with ``reason`` (and ``error``).

    An error decides when there is one (a :class:`FishtalkError` by its class's
    ``exit_code``, anything else is unexpected: 1); otherwise the end reason does.
    """
    if error is not None:
        cls = error if isinstance(error, type) else type(error)
        return cls.exit_code if issubclass(cls, FishtalkError) else EXIT_ERROR
    if reason is None:
        return EXIT_ERROR
    return EXIT_BY_END_REASON.get(reason, EXIT_OK)


__all__ = [
    "END_UNSUPPORTED_TRANSPORT",
    "EXIT_AUTH",
    "EXIT_BY_END_REASON",
    "EXIT_CONNECTION",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_REJECTED",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "AgentNotPublicError",
    "AgentUnavailableError",
    "ApiConnectionError",
    "ApiError",
    "ApiTimeoutError",
    "ApiTransportError",
    "AuthenticationError",
    "BadGatewayError",
    "BadRequestError",
    "ClientConfigError",
    "ConflictError",
    "FieldError",
    "FishtalkError",
    "ForbiddenError",
    "NotFoundError",
    "OriginForbiddenError",
    "PaymentRequiredError",
    "RateLimitedError",
    "RequestValidationError",
    "ServerError",
    "ServiceUnavailableError",
    "SessionApiError",
    "SessionExpiredError",
    "SpeechUnavailableError",
    "UnexpectedResponseError",
    "UnsupportedMediaTypeError",
    "UnsupportedTransportError",
    "exit_code_for",
]
