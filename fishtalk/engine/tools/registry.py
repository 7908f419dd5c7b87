"""The client-tool registry: names -> handlers, checked against the protocol's name rule.

A handler receives the call's params (a private copy: params are untrusted model output)
and a :class:`ToolContext`. It may be a plain function (run in a worker thread so it can
never block the event loop) or a coroutine function; either may return any JSON value,
or None (sent as ``{}``). Raising :class:`ToolDeclined` reports that the user refused to
run it; any other exception becomes an error result for the agent.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from pydantic import JsonValue

from fishtalk.core.protocol import TOOL_NAME_PATTERN

_NAME_RE: Final = re.compile(TOOL_NAME_PATTERN)

MAX_TOOL_TIMEOUT: Final = 120.0
"""The agent stops waiting after the tool's server-side deadline, at most 120 s."""


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What a handler asks the user to approve before acting (shown by the front end)."""

    call_id: str
    tool_name: str
    params: Mapping[str, JsonValue]
    summary: str = ""
    """One line describing what will happen (e.g. the command line to run)."""


Approver: TypeAlias = Callable[[ApprovalRequest], Awaitable[bool]]
"""Asks the user; resolves True to go ahead. Provided by the front end."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a handler knows about the call besides its params."""

    call_id: str
    tool_name: str
    approver: Approver | None = None
    """None when no front end can ask the user (handlers should then refuse risky work)."""


ToolHandler: TypeAlias = Callable[[dict[str, JsonValue], ToolContext], object | Awaitable[object]]
"""A client-tool handler: sync or async, returning a JSON value or None."""


class ToolDeclined(Exception):
    """Raised by a handler when the user declined the call (outcome ``declined``)."""


class ToolError(Exception):
    """A tool failure whose message is written for the agent: the error result carries
    the message alone (other exceptions are prefixed with their class name)."""


@dataclass(frozen=True, slots=True)
class RegisteredTool:
    """One registry entry."""

    name: str
    handler: ToolHandler
    timeout: float | None = None
    """Per-tool handler timeout in seconds; None uses the runner's default."""
    source: str = "python"
    """Where the handler comes from (``python``, ``command``, ``builtin``, ``plugin``...)."""
    description: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)


def check_tool_name(name: object) -> str:
    """Return ``name`` if it is a valid client-tool name, else raise ValueError."""
    if not isinstance(name, str) or _NAME_RE.fullmatch(name) is None:
        raise ValueError(
            f"invalid client-tool name {name!r}: it must start with a letter, then letters, "
            "digits, '_' or '-', at most 64 characters"
        )
    return name


def check_timeout(timeout: float | None) -> float | None:
    """Validate a handler timeout: None, or a finite number in (0, 120] seconds."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ValueError(f"invalid tool timeout {timeout!r}: expected seconds as a number")
    if not math.isfinite(timeout) or timeout <= 0 or timeout > MAX_TOOL_TIMEOUT:
        raise ValueError(
            f"invalid tool timeout {timeout!r}: expected more than 0 and at most "
            f"{MAX_TOOL_TIMEOUT:g} seconds"
        )
    return float(timeout)


class ToolRegistry:
    """Client tools by name. Registration validates names; lookups are exact."""

    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}

    def register(
        self,
        name: str,
        handler: ToolHandler,
        *,
        timeout: float | None = None,
        source: str = "python",
        description: str = "",
        replace: bool = False,
    ) -> RegisteredTool:
        """Register ``handler`` under ``name``.

        Raises ValueError for an invalid name or timeout, a non-callable handler, or a name
        already registered (unless ``replace=True``).
        """
        check_tool_name(name)
        if not callable(handler):
            raise ValueError(f"handler for client tool {name!r} is not callable")
        checked = check_timeout(timeout)
        if name in self._tools and not replace:
            raise ValueError(f"client tool {name!r} is already registered")
        entry = RegisteredTool(
            name=name, handler=handler, timeout=checked, source=source, description=description
        )
        self._tools[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove a tool (no error if it is not registered)."""
        self._tools.pop(name, None)

    def get(self, name: str) -> RegisteredTool | None:
        """The entry for ``name``, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[RegisteredTool]:
        return iter([self._tools[n] for n in self.names()])


def unknown_tool_message(name: str, known: list[str]) -> str:
    """One line for a tool name nothing is registered under, with a hint: the closest
    known name, or the known names, and where to see them."""
    if not known:
        return (
            f"no client tool named {name!r}: none is enabled "
            "(declare them as [tools.NAME] in the config)"
        )
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean {close[0]!r}?" if close else "known: " + ", ".join(sorted(known))
    return f"no client tool named {name!r}; {hint} (`fishtalk tools list` shows them)"
