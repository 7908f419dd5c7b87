"""The one exit-code table (fishtalk.core.errors) against the README's "Exit codes" table.

Every end reason and every error class is walked: its code must be a row of the README's
table, and that row must describe it (a phrase the row has to contain).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import fishtalk
from fishtalk.cli import exits
from fishtalk.cli.exits import EXIT_BY_END_REASON, exit_code_for
from fishtalk.core import conversation as conv
from fishtalk.core import errors
from fishtalk.core.errors import FishtalkError

README = Path(__file__).resolve().parents[2] / "README.md"

# What the README row for each end reason must say.
REASON_PHRASES: dict[str, str] = {
    conv.END_USER_HANGUP: "you or the agent hung up",
    conv.END_AGENT_HANGUP: "you or the agent hung up",
    conv.END_CONVERSATION_TIMEOUT: "timed out",
    conv.END_ESCALATED: "escalated",
    conv.END_CONNECTION_LOST: "connection was lost",
    conv.END_CONNECTION_FAILED: "could not be established",
    conv.END_SESSION_EXPIRED: "session expired",
    errors.END_UNSUPPORTED_TRANSPORT: "unsupported transport",
    "agent_not_public": "403",
    "origin_forbidden": "403",
    "session_request_failed": "API unavailable",
    conv.END_INTERRUPTED: "interrupted (Ctrl-C)",
    "a_reason_the_agent_made_up": "the call ended normally",
}

# What the README row for each error class (by name: modules may move) must say.
ERROR_PHRASES: dict[str, str] = {
    "FishtalkError": "unexpected error",
    "ClientConfigError": "bad flags",
    "ConfigError": "bad config file",
    "AudioDeviceError": "bad flags",
    "ScenarioError": "bad scenario file",
    "TestFileError": "bad flags",
    "RunLimitError": "bad flags",
    "SimServeError": "bad flags",
    "SessionApiError": "API unavailable",
    "ApiError": "API unavailable",
    "BadRequestError": "400",
    "AuthenticationError": "401",
    "PaymentRequiredError": "402",
    "ForbiddenError": "403",
    "OriginForbiddenError": "403",
    "AgentNotPublicError": "403",
    "AgentUnavailableError": "403",
    "NotFoundError": "404",
    "ConflictError": "409",
    "UnsupportedMediaTypeError": "415",
    "RequestValidationError": "422",
    "RateLimitedError": "429",
    "ServerError": "5xx",
    "BadGatewayError": "5xx",
    "ServiceUnavailableError": "5xx",
    "UnexpectedResponseError": "API unavailable",
    "ApiTransportError": "unreachable",
    "ApiTimeoutError": "timeout",
    "ApiConnectionError": "connection refused",
    "UnsupportedTransportError": "unsupported transport",
    "SessionExpiredError": "session expired",
    "SpeechUnavailableError": "missing speech part",
    "SimStartError": "could not be established",
    "SessionEndedError": "unexpected error",
    "ConnectionFailedError": "could not be established",
    "JournalError": "damaged journal",
    "OpenLiveProtocolError": "broke its protocol",
}


def readme_exit_codes() -> dict[int, str]:
    """The README's exit-code table: code -> meaning."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### Exit codes", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| (\d+) \| (.+?) \|$", section, flags=re.M)
    assert rows, "no exit-code table under '### Exit codes' in the README"
    return {int(code): meaning for code, meaning in rows}


def all_error_classes() -> set[type[FishtalkError]]:
    """Every FishtalkError subclass fishtalk defines (every module imported first)."""
    for info in pkgutil.walk_packages(fishtalk.__path__, "fishtalk."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    found: set[type[FishtalkError]] = set()
    todo: list[type[FishtalkError]] = [FishtalkError]
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.add(cls)
            todo.extend(cls.__subclasses__())
    return {c for c in found if c.__module__.split(".")[0] == "fishtalk"}


def test_every_end_reason_matches_the_readme() -> None:
    table = readme_exit_codes()
    known = set(conv.END_REASON_TEXT) | set(EXIT_BY_END_REASON)
    assert known <= set(REASON_PHRASES), known - set(REASON_PHRASES)
    for reason, phrase in REASON_PHRASES.items():
        code = exit_code_for(reason)
        assert code in table, (reason, code)
        assert phrase in table[code], (reason, code, table[code])


def test_every_error_class_matches_the_readme() -> None:
    table = readme_exit_codes()
    classes = all_error_classes()
    in_errors = {
        obj
        for _, obj in inspect.getmembers(errors, inspect.isclass)
        if issubclass(obj, FishtalkError)
    }
    assert in_errors <= classes
    missing = {c.__name__ for c in classes} - set(ERROR_PHRASES)
    assert not missing, f"add these to ERROR_PHRASES: {missing}"
    for cls in classes:
        phrase = ERROR_PHRASES[cls.__name__]
        # The error decides, whatever the end reason says.
        for reason in (None, conv.END_USER_HANGUP, conv.END_CONNECTION_LOST):
            code = exit_code_for(reason, cls)
            assert not hasattr(cls, "exit_code"), "exceptions carry no exit code"
            assert code in table, (cls, code)
            assert phrase in table[code], (cls.__name__, code, table[code])


def test_other_exceptions_and_no_reason_are_unexpected() -> None:
    table = readme_exit_codes()
    assert exit_code_for(None) == 1
    assert exit_code_for(conv.END_USER_HANGUP, RuntimeError("bug")) == 1
    assert "unexpected error" in table[1]
    assert "interrupted" in table[exits.EXIT_INTERRUPTED]


def test_the_scripted_session_and_the_real_one_share_the_table() -> None:
    """The TUI's scripted session once said 0 for unsupported_transport (README: 6)."""
    import asyncio

    from support.scripted import ScriptedSession

    session = ScriptedSession()
    session.feed(conv.ConnectFailed(at=0.0, code=errors.END_UNSUPPORTED_TRANSPORT, detail="x"))
    result = asyncio.run(session.run())
    assert result.reason == errors.END_UNSUPPORTED_TRANSPORT
    assert exit_code_for(result.reason, result.error) == exits.EXIT_REJECTED == 6


@pytest.mark.parametrize(
    "cls",
    [
        errors.ApiError,
        errors.NotFoundError,
        errors.ServiceUnavailableError,
        errors.ApiTimeoutError,
        errors.ApiConnectionError,
    ],
)
def test_catching_session_api_error_catches_status_and_transport_errors(
    cls: type[FishtalkError],
) -> None:
    if issubclass(cls, errors.ApiError):
        exc: FishtalkError = cls("refused", status=503)
    else:
        exc = cls("no answer")
    with pytest.raises(errors.SessionApiError):
        raise exc
    transport = issubclass(cls, errors.ApiTransportError)
    assert isinstance(exc, errors.ApiTransportError) is transport
    assert isinstance(exc, errors.ApiError) is not transport


def test_grant_refusals_are_not_api_failures() -> None:
    assert not issubclass(errors.UnsupportedTransportError, errors.SessionApiError)
    assert not issubclass(errors.SessionExpiredError, errors.SessionApiError)


def test_every_error_class_lives_in_core_errors() -> None:
    """One exception tree in one module: every FishtalkError subclass is defined there."""
    elsewhere = {
        f"{c.__module__}.{c.__qualname__}"
        for c in all_error_classes()
        if c.__module__ != "fishtalk.core.errors"
    }
    assert not elsewhere


def test_the_tree_is_drawn_once() -> None:
    import fishtalk.engine.api

    assert "SessionApiError" in (errors.__doc__ or "")
    assert "ApiTransportError" in (errors.__doc__ or "")
    assert "├──" not in (fishtalk.engine.api.__doc__ or "")


def test_only_the_cli_edge_names_an_exit_code() -> None:
    """One table at the CLI edge: no module outside fishtalk/cli names its constants or
    its mapping (front ends return how a call ended; the CLI picks the code)."""
    names = [n for n in exits.__all__ if n.startswith("EXIT_") or n.startswith("exit_code")]
    pattern = re.compile(r"\b(" + "|".join(names) + r")\b")
    root = Path(fishtalk.__file__).parent
    offenders = [
        f"{path.relative_to(root.parent)}:{number}"
        for path in sorted(root.rglob("*.py"))
        if root / "cli" not in path.parents
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert not offenders, offenders


def test_failed_end_reasons_are_the_ones_with_a_failing_code() -> None:
    """Front ends tell a good ending from a failed one without a code; the table agrees."""
    failing = {r for r, code in EXIT_BY_END_REASON.items() if code != exits.EXIT_OK}
    assert failing == errors.FAILED_END_REASONS
    for reason in (*EXIT_BY_END_REASON, "agent_made_this_up", None):
        assert errors.ended_well(reason) == (exit_code_for(reason) == exits.EXIT_OK), reason
    assert not errors.ended_well(conv.END_USER_HANGUP, errors.ConfigError("x"))


def test_ctrl_c_is_130() -> None:
    assert exits.exit_code_of(KeyboardInterrupt()) == exits.EXIT_INTERRUPTED == 130
    assert exits.exit_code_of(None) == exits.EXIT_ERROR
