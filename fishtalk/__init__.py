"""fishtalk: a terminal voice client for Fish Audio realtime voice agents, and a Python API.

``from fishtalk import AgentSession`` scripts a conversation (see
:mod:`fishtalk.agent_session`). The names below are loaded on first use: this module must
stay light, because ``fishtalk --help`` and ``--version`` import it, and ``import
fishtalk`` alone must not pull in asyncio, textual, livekit, numpy or sounddevice.
"""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False  # not imported from typing: importing fishtalk costs nothing
if TYPE_CHECKING:
    from typing import Any

    from fishtalk.agent_session import (
        AgentSession,
        AudioDevices,
        ClientTool,
        ConnectionFailedError,
        SessionEndedError,
    )
    from fishtalk.errors import FishtalkError, SessionApiError
    from fishtalk.tools.registry import ToolContext, ToolError

_LAZY: dict[str, str] = {
    "AgentSession": "fishtalk.agent_session",
    "AudioDevices": "fishtalk.agent_session",
    "ClientTool": "fishtalk.agent_session",
    "ConnectionFailedError": "fishtalk.agent_session",
    "SessionEndedError": "fishtalk.agent_session",
    "FishtalkError": "fishtalk.errors",
    "SessionApiError": "fishtalk.errors",
    "ToolContext": "fishtalk.tools.registry",
    "ToolError": "fishtalk.tools.registry",
}


def __getattr__(name: str) -> Any:
    """Load the public names on first access (PEP 562)."""
    import importlib

    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "AgentSession",
    "AudioDevices",
    "ClientTool",
    "ConnectionFailedError",
    "FishtalkError",
    "SessionApiError",
    "SessionEndedError",
    "ToolContext",
    "ToolError",
    "__version__",
]
