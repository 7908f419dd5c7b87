"""Assembling the client tools a session offers: declared commands, built-ins, plugins.

:func:`build_registry` is strict: a bad declaration (unknown built-in, duplicate name,
plugin that cannot load, secret in an env allowlist...) raises
:class:`~fishtalk.core.errors.ConfigError`. :func:`describe_tools` reports the same facts per
tool without raising, for ``fishtalk tools list``. A command whose program or working
directory is missing is registered anyway (it may appear later) and fails per call.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fishtalk.core.errors import ConfigError
from fishtalk.engine.tools import plugins
from fishtalk.engine.tools.approval import ApproveMode
from fishtalk.engine.tools.builtins import BUILTINS, BuiltinOptions, make_builtin
from fishtalk.engine.tools.command import CommandSpec, CommandTool
from fishtalk.engine.tools.declared import ToolDecl, ToolSettings
from fishtalk.engine.tools.registry import Approver, ToolHandler, ToolRegistry, check_tool_name
from fishtalk.engine.tools.runner import DEFAULT_TIMEOUT, ToolRunner


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """What ``fishtalk tools list`` shows for one tool."""

    name: str
    source: str
    """``command``, ``builtin`` or ``plugin:<distribution>``."""
    approve: ApproveMode
    timeout: float | None
    """Per-tool timeout in seconds; None = the session default."""
    description: str
    detail: str
    """The command line, or the plugin's ``module:attr``."""
    problem: str | None = None
    """Why the tool cannot run (None = ready)."""
    fatal: bool = False
    """The problem is a configuration error: :func:`build_registry` refuses it."""


@dataclass(frozen=True, slots=True)
class _Planned:
    info: ToolInfo
    make: Callable[[BuiltinOptions], ToolHandler] | None


def _plan(settings: ToolSettings, environ: Mapping[str, str]) -> list[_Planned]:
    found = plugins.discover()
    by_name: dict[str, list[plugins.PluginEntry]] = {}
    for entry in found:
        by_name.setdefault(entry.name, []).append(entry)

    planned: list[_Planned] = []
    for name, decl in settings.tools.items():
        if decl.command is not None:
            planned.append(_plan_command(name, decl, by_name, environ))
        elif decl.builtin:
            planned.append(_plan_builtin(name, decl, by_name))
        elif name not in by_name:
            planned.append(
                _Planned(
                    ToolInfo(
                        name, "config", decl.approve or "ask", decl.timeout,
                        decl.description or "", "",
                        problem=f"[tools.{name}] needs `command = [...]` or `builtin = true` "
                        "(or an installed plugin tool of that name)",
                        fatal=True,
                    ),
                    None,
                )
            )  # fmt: skip
    for name, entries in sorted(by_name.items()):
        tuning = settings.tools.get(name)
        if tuning is not None and (tuning.command is not None or tuning.builtin):
            continue  # reported as a duplicate on the declared tool
        planned.append(_plan_plugin(name, entries, tuning))
    offered = settings.offered_tools
    if offered is not None:
        planned = _only_offered(planned, offered, settings.profile_name or "")
    return sorted(planned, key=lambda p: p.info.name)


def _only_offered(planned: list[_Planned], offered: list[str], profile: str) -> list[_Planned]:
    """The tools an agent profile offers (``tools = [...]``); a name that matches no tool
    is a config error, with the closest name."""
    import difflib

    names = [p.info.name for p in planned]
    kept = [p for p in planned if p.info.name in offered]
    for name in offered:
        if name in names:
            continue
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else " (declare it as [tools.NAME])"
        problem = f"agent profile {profile!r} offers {name!r}, which is no enabled tool{hint}"
        kept.append(_Planned(ToolInfo(name, "config", "never", None, "", "", problem, True), None))
    return kept


def _plan_command(
    name: str,
    decl: ToolDecl,
    by_name: Mapping[str, list[plugins.PluginEntry]],
    environ: Mapping[str, str],
) -> _Planned:
    assert decl.command is not None  # checked by the caller
    argv = tuple(decl.command)
    approve: ApproveMode = decl.approve or "ask"
    detail = " ".join(argv)
    description = decl.description or ""

    def info(problem: str | None, fatal: bool) -> ToolInfo:
        return ToolInfo(name, "command", approve, decl.timeout, description, detail, problem, fatal)

    if name in by_name:
        dists = ", ".join(e.distribution for e in by_name[name])
        return _Planned(info(f"also provided by plugin {dists}: names must be unique", True), None)
    try:
        spec = CommandSpec(
            name=name,
            argv=argv,
            cwd=Path(decl.cwd).expanduser() if decl.cwd else None,
            env_allowlist=tuple(decl.env),
            approve=approve,
            description=description,
        )
    except ValueError as exc:
        return _Planned(info(str(exc), True), None)
    detail = spec.command_line
    return _Planned(info(spec.problem(environ), False), lambda _opts: CommandTool(spec))


def _plan_builtin(
    name: str, decl: ToolDecl, by_name: Mapping[str, list[plugins.PluginEntry]]
) -> _Planned:
    known = BUILTINS.get(name)
    approve: ApproveMode = decl.approve or (known.default_approve if known else "ask")
    description = decl.description or (known.description if known else "")
    problem: str | None = None
    if known is None:
        problem = f"no built-in tool named {name!r} (built-ins: {', '.join(sorted(BUILTINS))})"
    elif name in by_name:
        dists = ", ".join(e.distribution for e in by_name[name])
        problem = f"also provided by plugin {dists}: names must be unique"
    info = ToolInfo(
        name, "builtin", approve, decl.timeout, description, "", problem, problem is not None
    )
    if problem is not None:
        return _Planned(info, None)
    return _Planned(info, lambda opts: make_builtin(name, opts, approve))


def _plan_plugin(name: str, entries: list[plugins.PluginEntry], decl: ToolDecl | None) -> _Planned:
    first = entries[0]
    approve: ApproveMode = (decl.approve if decl else None) or "always"
    timeout = decl.timeout if decl else None

    def info(description: str, problem: str | None) -> ToolInfo:
        return ToolInfo(
            name,
            f"plugin:{first.distribution}",
            approve,
            timeout,
            (decl.description if decl else None) or description,
            first.value,
            problem,
            problem is not None,
        )

    try:
        check_tool_name(name)
    except ValueError as exc:
        return _Planned(info("", f"plugin {first.distribution}: {exc}"), None)
    if len(entries) > 1:
        dists = ", ".join(f"{e.distribution} ({e.value})" for e in entries)
        return _Planned(info("", f"provided by several plugins: {dists}"), None)
    try:
        handler = plugins.load(first)
    except plugins.PluginLoadError as exc:
        return _Planned(info("", str(exc)), None)
    description = plugins.describe(handler)
    if approve == "always":
        return _Planned(info(description, None), lambda _opts: handler)
    gated = plugins.GatedPlugin(handler, approve, f"python {first.value}")
    return _Planned(info(description, None), lambda _opts: gated)


def describe_tools(
    settings: ToolSettings, *, environ: Mapping[str, str] | None = None
) -> list[ToolInfo]:
    """Every declared, built-in and plugin tool with its source and validity (never raises
    for a bad tool; the config itself must have loaded)."""
    return [p.info for p in _plan(settings, os.environ if environ is None else environ)]


def build_registry(
    settings: ToolSettings,
    *,
    options: BuiltinOptions | None = None,
    environ: Mapping[str, str] | None = None,
) -> ToolRegistry:
    """The registry of every enabled tool; ConfigError on the first bad declaration."""
    planned = _plan(settings, os.environ if environ is None else environ)
    fatal = [p.info for p in planned if p.info.fatal]
    if fatal:
        first = fatal[0]
        more = f" (and {len(fatal) - 1} more)" if len(fatal) > 1 else ""
        raise ConfigError(f"client tool {first.name!r}: {first.problem}{more}")
    registry = ToolRegistry()
    opts = options or BuiltinOptions()
    for item in planned:
        assert item.make is not None  # only fatal entries lack a handler
        info = item.info
        registry.register(
            info.name,
            item.make(opts),
            timeout=info.timeout,
            source=info.source,
            description=info.description,
        )
    return registry


def build_runner(
    settings: ToolSettings,
    *,
    default_timeout: float = DEFAULT_TIMEOUT,
    approver: Approver | None = None,
    options: BuiltinOptions | None = None,
) -> ToolRunner:
    """A ToolRunner over :func:`build_registry` (``default_timeout``: for tools that set
    none)."""
    return ToolRunner(
        build_registry(settings, options=options),
        default_timeout=default_timeout,
        approver=approver,
    )
