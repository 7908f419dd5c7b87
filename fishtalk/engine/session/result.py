"""How a session ended: the one :class:`EndResult` (engine, scripted and replayed sessions).

The session never picks an exit code: an :class:`EndResult` says why the call ended (the end
reason and, when one caused it, the error); the CLI edge maps that to a code
(:mod:`fishtalk.cli.exits`).
"""

from __future__ import annotations

from dataclasses import dataclass

from fishtalk.core import conversation as conv
from fishtalk.core import errors


@dataclass(frozen=True, slots=True)
class EndResult:
    """How a session ended: the reason, one sentence for the user, and the error (if any).

    No exit code: the CLI edge derives one (:mod:`fishtalk.cli.exits`).
    """

    reason: str
    message: str
    error: errors.FishtalkError | None = None
    """The error that prevented the session (API, config, grant), if that is why it ended."""


def end_result_of(
    state: conv.State,
    api_error: errors.FishtalkError | None = None,
    refusal: errors.FishtalkError | None = None,
) -> EndResult | None:
    """How the session in ``state`` ended, once it has (None before). ``api_error``: the
    API's error that ended it (its wording is the message); ``refusal``: an error whose
    wording is the end reason's own."""
    if not state.ended or state.end_reason is None:
        return None
    reason = state.end_reason
    if api_error is not None:
        return EndResult(reason, str(api_error), api_error)
    message = conv.describe_end_reason(reason)
    if reason in (conv.END_CONNECTION_FAILED, conv.END_SESSION_EXPIRED):
        details = [e.detail for e in state.errors if e.code == reason and e.detail]
        if details:
            message = details[-1]
    return EndResult(reason, message, refusal)


__all__ = ["EndResult", "end_result_of"]
