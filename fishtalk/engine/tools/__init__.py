"""Client tools: the registry of handlers and the runner that executes ``client_tool.call``.

The agent asks the client to run a tool by name; the :class:`ToolRunner` looks the handler
up in the :class:`ToolRegistry`, runs it with a timeout and produces a
:class:`ToolOutcome` carrying the ``client_tool.result`` to publish. This package may use
asyncio but never imports livekit or textual.
"""

from __future__ import annotations

from fishtalk.engine.tools.registry import (
    MAX_TOOL_TIMEOUT,
    ApprovalRequest,
    Approver,
    RegisteredTool,
    ToolContext,
    ToolDeclined,
    ToolError,
    ToolHandler,
    ToolRegistry,
    check_timeout,
    check_tool_name,
)
from fishtalk.engine.tools.runner import (
    DEFAULT_TIMEOUT,
    MAX_RESULT_BYTES,
    OutcomeStatus,
    ToolOutcome,
    ToolRunner,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_RESULT_BYTES",
    "MAX_TOOL_TIMEOUT",
    "ApprovalRequest",
    "Approver",
    "OutcomeStatus",
    "RegisteredTool",
    "ToolContext",
    "ToolDeclined",
    "ToolError",
    "ToolHandler",
    "ToolOutcome",
    "ToolRegistry",
    "ToolRunner",
    "check_timeout",
    "check_tool_name",
]
