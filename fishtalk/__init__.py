"""fishtalk: a terminal voice client for Fish Audio realtime voice agents, and a Python API.

``from fishtalk import AgentSession`` scripts a conversation (see
:mod:`fishtalk.agent_session`). The names below are loaded on first use: this module must
stay light, because ``fishtalk --help`` and ``--version`` import it, and ``import
fishtalk`` alone must not pull in asyncio, textual, livekit, numpy or sounddevice.
"""

from __future__ import annotations

from fishtalk._version import __version__

TYPE_CHECKING = False  # not imported from typing: importing fishtalk costs nothing
if TYPE_CHECKING:
    from typing import Any

    from fishtalk.agent_session import AgentSession, AudioDevices, ClientTool
    from fishtalk.core import events
    from fishtalk.core.errors import (
        ConnectionFailedError,
        FishtalkError,
        SessionApiError,
        SessionEndedError,
    )
    from fishtalk.engine.tools.registry import ToolContext, ToolError

_LAZY: dict[str, str] = {
    "events": "",
    "AgentSession": "fishtalk.agent_session",
    "AudioDevices": "fishtalk.agent_session",
    "ClientTool": "fishtalk.agent_session",
    "ConnectionFailedError": "fishtalk.core.errors",
    "SessionEndedError": "fishtalk.core.errors",
    "FishtalkError": "fishtalk.core.errors",
    "SessionApiError": "fishtalk.core.errors",
    "ToolContext": "fishtalk.engine.tools.registry",
    "ToolError": "fishtalk.engine.tools.registry",
}


def __getattr__(name: str) -> Any:
    """Load the public names on first access (PEP 562)."""
    import importlib

    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # ``fishtalk.events`` is the public name of the one event vocabulary (a module).
    value = (
        importlib.import_module("fishtalk.core.events")
        if not module
        else getattr(importlib.import_module(module), name)
    )
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
    "events",
]
