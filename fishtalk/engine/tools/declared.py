"""Declared client tools: the ``[tools.NAME]`` table's model, and reading it from a file.

The engine owns what a tool declaration is (:class:`ToolDecl`) and what it reads to build
the tools of a call (:class:`ToolSettings`): the CLI's settings compose these, and
:func:`read_config_tools` reads the ``[tools]`` table of the user's config file for callers
that do not load the CLI's settings (``AgentSession(config_tools=True)``, scenario files).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from fishtalk.core.errors import ConfigError
from fishtalk.core.protocol import TOOL_NAME_PATTERN
from fishtalk.core.validation import plain_message
from fishtalk.engine import paths
from fishtalk.engine.tools.registry import MAX_TOOL_TIMEOUT

_TOOL_NAME_RE: Final = re.compile(TOOL_NAME_PATTERN)


class ToolDecl(BaseModel):
    """``[tools.NAME]``: one client tool the agent may call on this machine."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    command: list[str] | None = None
    """argv list run for each call (never a shell string); params arrive as JSON on stdin."""
    builtin: bool = False
    """Enable the built-in tool of this name (open_url, copy_to_clipboard, notify, ...)."""
    approve: Literal["ask", "always", "never"] | None = None
    """ask = confirm each call, always = run without asking, never = refuse every call."""
    timeout: float | None = Field(default=None, gt=0, le=MAX_TOOL_TIMEOUT)
    """Seconds before the call is abandoned (and its processes killed); at most 120."""
    cwd: str | None = None
    """Working directory for command tools."""
    env: list[str] = Field(default_factory=list)
    """Names of environment variables passed through to the command (allowlist)."""
    description: str | None = None
    """Shown in ``fishtalk tools list`` and in the approval prompt."""

    @field_validator("command", mode="before")
    @classmethod
    def _argv_list(cls, value: object) -> object:
        if isinstance(value, str):
            raise ValueError(
                'must be an argv list such as ["notify-send", "done"], not a string '
                "(fishtalk never runs a shell)"
            )
        return value

    @field_validator("command")
    @classmethod
    def _non_empty_argv(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or not value[0]):
            raise ValueError("must name a program as its first element")
        return value

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value

    @model_validator(mode="after")
    def _command_xor_builtin(self) -> ToolDecl:
        if self.builtin and self.command is not None:
            raise ValueError("set either `command` or `builtin = true`, not both")
        return self


def check_tool_names(value: Mapping[str, ToolDecl]) -> None:
    """Raise ValueError naming the first declared tool whose name the API would refuse."""
    for name in value:
        if not _TOOL_NAME_RE.match(name):
            raise ValueError(f"invalid tool name {name!r}: names must match {TOOL_NAME_PATTERN}")


class ToolSettings(Protocol):
    """What building the tools of a call reads (the CLI's settings are one)."""

    @property
    def tools(self) -> Mapping[str, ToolDecl]:
        """The declared tools, by name."""
        ...

    @property
    def offered_tools(self) -> list[str] | None:
        """The tools an agent profile offers (None: every enabled tool)."""
        ...

    @property
    def profile_name(self) -> str | None:
        """The agent profile that chose :attr:`offered_tools`, for messages."""
        ...


@dataclass(frozen=True, slots=True)
class DeclaredTools:
    """A plain :class:`ToolSettings`: declared tools with no agent profile."""

    tools: Mapping[str, ToolDecl] = field(default_factory=dict)
    offered_tools: list[str] | None = None
    profile_name: str | None = None


_TOOLS: Final = TypeAdapter(dict[str, ToolDecl])


def read_config_tools(
    config_path: Path | None = None, *, env: Mapping[str, str] | None = None
) -> DeclaredTools:
    """The ``[tools]`` table of a fishtalk config file; :class:`ConfigError` on problems.

    ``config_path`` None means ``$FISHTALK_CONFIG``, else the platform config file (which
    may be absent: then no tools). Tools are declared in the file only, so no environment
    variable changes them; the file's other tables are the CLI's business and not checked.
    """
    environ = os.environ if env is None else env
    if config_path is not None:
        path = config_path.expanduser()
        if not path.exists():
            raise ConfigError(f"config file not found: {path}")
    else:
        explicit = environ.get(paths.CONFIG_PATH_ENV)
        path = Path(explicit).expanduser() if explicit else paths.default_config_file()
        if not path.exists():
            return DeclaredTools()
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    try:
        tools = _TOOLS.validate_python(data.get("tools", {}))
        check_tool_names(tools)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        dotted = ".".join(["tools", *(str(p) for p in first["loc"])])
        msg = plain_message(first)
        raise ConfigError(f"invalid setting {dotted} in {path}: {msg}") from None
    except ValueError as exc:
        raise ConfigError(f"invalid setting tools in {path}: {exc}") from None
    return DeclaredTools(tools)


__all__ = [
    "DeclaredTools",
    "ToolDecl",
    "ToolSettings",
    "check_tool_names",
    "read_config_tools",
]
