"""The one exit-code table: how a run ended (an error, an end reason, Ctrl-C) -> the code.

Only the CLI edge picks exit codes. Exceptions carry none and front ends return how a call
ended (an :class:`~fishtalk.engine.session.EndResult`, the exception, or None); the CLI maps
that here with :func:`exit_code_for` / :func:`exit_code_of`: :data:`EXIT_BY_ERROR` for
errors, :data:`EXIT_BY_END_REASON` for end reasons. The README's exit-code table is the
reference (tests/cli/test_exit_codes.py checks both against it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Protocol

from fishtalk.core.errors import (
    END_UNSUPPORTED_TRANSPORT,
    AudioDeviceError,
    AuthenticationError,
    BadRequestError,
    ClientConfigError,
    ConfigError,
    ConflictError,
    ConnectionFailedError,
    FishtalkError,
    ForbiddenError,
    JournalError,
    NotFoundError,
    OpenLiveProtocolError,
    PaymentRequiredError,
    RequestValidationError,
    RunLimitError,
    ScenarioError,
    SessionApiError,
    SessionEndedError,
    SessionExpiredError,
    SimServeError,
    SimStartError,
    SpeechUnavailableError,
    TestFileError,
    UnsupportedMediaTypeError,
    UnsupportedTransportError,
)

if TYPE_CHECKING:
    from fishtalk.workbench.agenttest.command import RunOutcome

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


EXIT_BY_END_REASON: Final[Mapping[str, int]] = {
    "user_hangup": EXIT_OK,
    "interrupted": EXIT_INTERRUPTED,
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


EXIT_BY_ERROR: Final[tuple[tuple[type[FishtalkError], int], ...]] = (
    (ClientConfigError, EXIT_USAGE),
    (ConfigError, EXIT_USAGE),
    (JournalError, EXIT_USAGE),
    (AudioDeviceError, EXIT_USAGE),
    (TestFileError, EXIT_USAGE),
    (RunLimitError, EXIT_USAGE),
    (ScenarioError, EXIT_USAGE),
    (SimServeError, EXIT_USAGE),
    (SpeechUnavailableError, EXIT_USAGE),
    (SimStartError, EXIT_CONNECTION),
    (ConnectionFailedError, EXIT_CONNECTION),
    (OpenLiveProtocolError, EXIT_CONNECTION),
    (SessionEndedError, EXIT_ERROR),
    (BadRequestError, EXIT_REJECTED),
    (AuthenticationError, EXIT_AUTH),
    (PaymentRequiredError, EXIT_AUTH),
    (ForbiddenError, EXIT_AUTH),
    (NotFoundError, EXIT_NOT_FOUND),
    (ConflictError, EXIT_NOT_FOUND),
    (UnsupportedMediaTypeError, EXIT_REJECTED),
    (RequestValidationError, EXIT_REJECTED),
    (UnsupportedTransportError, EXIT_REJECTED),
    (SessionExpiredError, EXIT_REJECTED),
    (SessionApiError, EXIT_UNAVAILABLE),
)
"""Exit code per error class, the most specific first (a subclass of a listed class takes
its code); a :class:`FishtalkError` not listed exits 1."""


def exit_code_for(
    reason: str | None, error: FishtalkError | type[BaseException] | BaseException | None = None
) -> int:
    """The process exit code for a session that ended with ``reason`` (and ``error``).

    An error decides when there is one (a :class:`FishtalkError` by
    :data:`EXIT_BY_ERROR`, Ctrl-C (:class:`KeyboardInterrupt`) 130, anything else is
    unexpected: 1); otherwise the end reason does.
    """
    if error is not None:
        cls = error if isinstance(error, type) else type(error)
        if issubclass(cls, KeyboardInterrupt):
            return EXIT_INTERRUPTED
        return next((code for kind, code in EXIT_BY_ERROR if issubclass(cls, kind)), EXIT_ERROR)
    if reason is None:
        return EXIT_ERROR
    return EXIT_BY_END_REASON.get(reason, EXIT_OK)


class Ended(Protocol):
    """How a call ended, as front ends return it (an ``EndResult`` or the like)."""

    @property
    def reason(self) -> str:
        """The end reason."""
        ...

    @property
    def error(self) -> FishtalkError | None:
        """The error that ended the call, if any."""
        ...


def exit_code_of(outcome: Ended | BaseException | None) -> int:
    """The process exit code for a front end's outcome: how the call ended, the exception
    that ended it (:class:`KeyboardInterrupt`: Ctrl-C), or None (it never ended: 1)."""
    if outcome is None:
        return exit_code_for(None)
    if isinstance(outcome, BaseException):
        return exit_code_for(None, outcome)
    return exit_code_for(outcome.reason, outcome.error)


def exit_code_of_run(run: RunOutcome) -> int:
    """The exit code of ``fishtalk test``: 130 interrupted; the code of the error that kept a
    session from running; 1 any test failed (a heard budget across runs included); else 0."""
    if run.interrupted:
        return EXIT_INTERRUPTED
    if run.error is not None:
        return exit_code_for(None, run.error)
    return EXIT_ERROR if run.failed else EXIT_OK


__all__ = [
    "EXIT_AUTH",
    "EXIT_BY_END_REASON",
    "EXIT_BY_ERROR",
    "EXIT_CONNECTION",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_REJECTED",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "Ended",
    "exit_code_for",
    "exit_code_of",
    "exit_code_of_run",
]
