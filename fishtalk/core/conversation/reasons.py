"""End reasons and error codes, and the sentences a front end shows for them.

Both are open sets: any reason the agent announces, or code it reports, is kept as given
and described generically.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

# End reasons (an open set: any string the agent announces is kept as given).
END_USER_HANGUP: Final = "user_hangup"
END_INTERRUPTED: Final = "interrupted"
"""The user interrupted fishtalk (Ctrl-C, a signal): it hung up on the way out."""
END_AGENT_HANGUP: Final = "agent_hangup"
END_CONVERSATION_TIMEOUT: Final = "conversation_timeout"
END_ESCALATED: Final = "escalated"
END_CONNECTION_LOST: Final = "connection_lost"
END_CONNECTION_FAILED: Final = "connection_failed"
END_SESSION_EXPIRED: Final = "session_expired"

END_REASON_TEXT: Final[Mapping[str, str]] = {
    END_USER_HANGUP: "You hung up.",
    END_INTERRUPTED: "Interrupted (Ctrl-C): fishtalk hung up.",
    END_AGENT_HANGUP: "The agent ended the call.",
    END_CONVERSATION_TIMEOUT: "The conversation reached its maximum duration.",
    END_ESCALATED: "The conversation was escalated.",
    END_CONNECTION_LOST: "The connection to the agent was lost.",
    END_CONNECTION_FAILED: "Could not connect to the agent.",
    END_SESSION_EXPIRED: "The session grant expired before it was used.",
}

# Transport disconnect reasons (LiveKit DisconnectReason names) that mean the agent side
# ended the call rather than the network failing; the web SDK reads them the same way.
AGENT_SIDE_DISCONNECTS: Final = frozenset({"AGENT_LEFT", "ROOM_DELETED", "ROOM_CLOSED"})

ERROR_TEXT: Final[Mapping[str, str]] = {
    "provider_error": "An upstream model or voice provider failed during the session.",
    "internal_error": "The agent runtime hit an internal error.",
    "tool_failed": "A client tool failed.",
    "tool_timeout": "A client tool timed out.",
    "connection_failed": "Could not establish the realtime session.",
    "session_expired": "The session grant expired before it was used.",
    "session_request_failed": "The session request failed.",
    "agent_not_public": "This agent is not public; an API key is required.",
    "origin_forbidden": "The agent does not allow this Origin.",
    "unsupported_transport": "The server offered a transport fishtalk does not support.",
    "mic_permission_denied": "The microphone could not be opened.",
    "device_change_failed": "The audio device could not be used.",
}
"""A human sentence for every known error code (web SDK codes plus the agent's)."""


def describe_error(code: str) -> str:
    """A one-line human sentence for an error code (unknown codes are named as given)."""
    return ERROR_TEXT.get(code, f"The agent reported an error ({code}).")


def describe_end_reason(reason: str) -> str:
    """A one-line human sentence for an end reason (unknown reasons are named as given)."""
    return END_REASON_TEXT.get(reason, f"The session ended ({reason}).")
