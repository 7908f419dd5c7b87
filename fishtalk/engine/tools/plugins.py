"""Python client tools from installed packages (entry-point group ``fishtalk.engine.tools``).

A package offers a tool by naming a handler in its metadata::

    [project.entry-points."fishtalk.tools"]
    lookup_order = "mypkg.tools:lookup_order"

The entry-point name is the tool name; the object is a handler with the usual contract
``handler(params: dict, ctx: ToolContext) -> JSON value | None`` (sync or async). Its
docstring's first line is its description. Plugin tools run without asking unless the
config says otherwise (``[tools.NAME] approve = "ask"``): installing a package is already
a decision to trust its code.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Final

from pydantic import JsonValue

from fishtalk.engine.aio import in_daemon_thread
from fishtalk.engine.tools.approval import ApproveMode, require_approval
from fishtalk.engine.tools.registry import ToolContext, ToolHandler

ENTRY_POINT_GROUP: Final = "fishtalk.tools"


@dataclass(frozen=True, slots=True)
class PluginEntry:
    """One advertised plugin tool (not yet loaded)."""

    name: str
    value: str
    """``module:attr`` as advertised."""
    distribution: str
    entry_point: EntryPoint


def discover() -> list[PluginEntry]:
    """Every entry point in the group, in a stable order (duplicates included)."""
    found: list[PluginEntry] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else "?"
        found.append(PluginEntry(name=ep.name, value=ep.value, distribution=dist, entry_point=ep))
    return sorted(found, key=lambda p: (p.name, p.distribution, p.value))


class PluginLoadError(Exception):
    """An entry point could not be imported, or is not a handler."""


def load(entry: PluginEntry) -> ToolHandler:
    """Import the handler; raise PluginLoadError with a one-line reason."""
    try:
        obj = entry.entry_point.load()
    except Exception as exc:
        raise PluginLoadError(
            f"cannot load {entry.value} from {entry.distribution}: {type(exc).__name__}: {exc}"
        ) from None
    if not callable(obj):
        raise PluginLoadError(f"{entry.value} from {entry.distribution} is not callable")
    handler: ToolHandler = obj
    return handler


def describe(handler: object) -> str:
    """First line of the handler's docstring (or of its class's), else ''."""
    doc = inspect.getdoc(handler) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


class GatedPlugin:
    """A plugin handler behind an approval prompt (used unless approve = "always")."""

    def __init__(self, handler: ToolHandler, approve: ApproveMode, summary: str) -> None:
        self.handler = handler
        self.approve = approve
        self.summary = summary

    async def __call__(self, params: dict[str, JsonValue], ctx: ToolContext) -> object:
        await require_approval(self.approve, ctx, params, self.summary)
        handler = self.handler
        result: object
        if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
            getattr(handler, "__call__", None)  # noqa: B004 - looking for an async __call__
        ):
            result = await handler(params, ctx)  # type: ignore[misc]  # checked async above
        else:
            # Sync code runs off the loop, in a thread that is abandoned if it hangs.
            result = await in_daemon_thread(lambda: handler(params, ctx))
        if inspect.isawaitable(result):
            result = await result
        return result
