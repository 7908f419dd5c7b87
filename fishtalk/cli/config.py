"""fishtalk settings: defaults < TOML file < environment < command-line flags.

* File: ``--config PATH``, else ``$FISHTALK_CONFIG``, else the platform config file
  (``fishtalk config path`` prints it). A missing default file is fine; a missing explicit
  one is an error. Every key is documented in ``config.example.toml``.
* Environment: ``FISH_API_KEY`` (api.api_key), ``FISHTALK_API_URL`` (api.url),
  ``FISHTALK_AGENT`` (session.agent_id), ``FISHTALK_ORIGIN`` (api.origin), and the generic
  ``FISHTALK_<SECTION>__<KEY>`` for any other key, e.g.
  ``FISHTALK_AUDIO__ECHO_CANCELLATION=false``. Values are parsed like TOML scalars would be
  (``true``/``false``, numbers); tables and arrays are given as JSON. Tools can only be
  declared in the file.
* Flags: the CLI passes an ``overrides`` mapping of dotted keys (``{"session.agent_id": ..}``);
  ``None`` values mean "flag not given".

The API key is a :class:`~pydantic.SecretStr`: it never appears in a repr, an error
message or ``fishtalk config show``. Any problem (broken TOML, unknown key, bad value)
raises :class:`ConfigError` (exit code 2) with one line naming the file and line, the
environment variable or the key.

This module never imports textual or livekit.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import (
    BaseModel,
    ValidationError,
)

from fishtalk.cli.settings import (
    AgentProfile,
    SessionSettings,
    Settings,
)
from fishtalk.core.errors import ConfigError
from fishtalk.core.validation import plain_message
from fishtalk.engine import paths
from fishtalk.engine.tools.declared import ToolDecl
from fishtalk.engine.tools.secret_env import (
    ENV_ALIASES,
    SECRET_KEYS,
    env_setting,
)
from fishtalk.tui.actions import key_problems

Sources = dict[tuple[str, ...], str]
"""Which layer set each dotted key last, for error messages."""


def load_settings(
    config_path: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    profile: str | None = None,
) -> Settings:
    """Build the effective settings from every layer; raise :class:`ConfigError` on problems.

    ``config_path`` None means the default file (which may be absent). ``env`` defaults to
    ``os.environ``. ``overrides`` holds dotted keys from flags; ``None`` values are skipped.
    ``profile`` names an ``[agents.NAME]`` table whose values apply over the file's and the
    environment's (flags still win); an unknown name is a ConfigError suggesting the
    closest one.
    """
    environ = os.environ if env is None else env
    merged: dict[str, Any] = {}
    sources: Sources = {}
    file_text: str | None = None

    path = config_path.expanduser() if config_path is not None else _default_path(environ)
    if config_path is not None and not path.exists():
        raise ConfigError(f"config file not found: {path}")
    if path.exists():
        file_text, data = _read_toml(path)
        _merge(merged, data, sources, (), f"in {path}")
    _merge_env(merged, environ, sources)
    if profile is not None:
        try:
            base = Settings.model_validate(merged)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, sources, path, file_text)) from None
        chosen = base.agents.get(profile)
        if chosen is None:
            raise ConfigError(unknown_profile_message(profile, list(base.agents), path))
        _merge(merged, chosen.layer(), sources, (), f"from agent profile {profile!r}")
    if overrides:
        for key, value in overrides.items():
            if value is None:
                continue
            parts = tuple(key.split("."))
            _merge(merged, _nest(parts, value), sources, (), "from the command line")

    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, sources, path, file_text)) from None
    _check_keys(settings.ui.keys, sources, path, file_text)
    settings._profile = profile
    return settings


def close_profile(name: str, names: list[str]) -> str | None:
    """The profile name ``name`` most likely misspells, or None."""
    close = difflib.get_close_matches(name, names, n=1)
    return close[0] if close else None


def unknown_profile_message(name: str, names: list[str], path: Path | None = None) -> str:
    """One line for a profile name that is not in the config, with the closest one."""
    where = f" in {path}" if path is not None else ""
    message = f"no agent profile {name!r}{where}"
    close = close_profile(name, names)
    if close is not None:
        return f"{message} (did you mean {close!r}?)"
    if names:
        return f"{message} (profiles: {', '.join(sorted(names))})"
    return f"{message}: declare it as [agents.{name}] with an agent_id"


def _check_keys(
    keys: Mapping[str, str], sources: Sources, path: Path, file_text: str | None
) -> None:
    """Refuse an unknown action or a conflicting key in ``[ui] keys`` now, not when the TUI
    starts (and not silently, as a key taken from another action would be)."""
    problems = key_problems(keys)
    if not problems:
        return
    first = problems[0]
    loc = ("ui", "keys", first.action)
    origin = _located(loc, sources, path, file_text)
    message = f"invalid setting ui.keys.{first.action} {origin}: {first.message}"
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    raise ConfigError(message)


def _default_path(environ: Mapping[str, str]) -> Path:
    explicit = environ.get(paths.CONFIG_PATH_ENV)
    if explicit:
        return Path(explicit).expanduser()
    return paths.default_config_file()


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # str(exc) carries "(at line L, column C)".
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _nest(parts: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: Any = value
    for part in reversed(parts):
        out = {part: out}
    result: dict[str, Any] = out
    return result


def _merge(
    target: dict[str, Any],
    layer: Mapping[str, Any],
    sources: Sources,
    prefix: tuple[str, ...],
    origin: str,
) -> None:
    """Deep-merge ``layer`` into ``target``; tables merge, anything else replaces."""
    for key, value in layer.items():
        where = (*prefix, key)
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value, sources, where, origin)
            continue
        if isinstance(value, Mapping):
            target[key] = {}
            _merge(target[key], value, sources, where, origin)
            sources[where] = origin
            continue
        target[key] = value
        sources[where] = origin


_FILE_ONLY: Final = ("tools", "agents")
"""Tables of named entries: declared in the config file only."""


def _merge_env(merged: dict[str, Any], environ: Mapping[str, str], sources: Sources) -> None:
    sections = Settings.model_fields
    for name in sorted(environ):
        raw = environ[name]
        setting = env_setting(name)
        if setting is None:
            continue
        if name in ENV_ALIASES:
            where = setting
        else:
            section, key = setting
            if section in _FILE_ONLY:
                raise ConfigError(f"{name}: {section} can only be declared in the config file")
            if section not in sections:
                raise ConfigError(
                    f"environment variable {name}: unknown section {section!r}"
                    + _suggest(section, [s for s in sections if s not in _FILE_ONLY])
                )
            fields = _section_fields(section)
            if key not in fields:
                raise ConfigError(
                    f"environment variable {name}: unknown setting {section}.{key}"
                    + _suggest(key, fields)
                )
            where = (section, key)
        if raw == "":
            continue
        _merge(merged, _nest(where, _env_value(raw)), sources, (), f"from ${name}")


def _env_value(raw: str) -> Any:
    stripped = raw.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            return raw
    return raw


def _section_fields(section: str) -> list[str]:
    annotation = Settings.model_fields[section].annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _describe(exc: ValidationError, sources: Sources, path: Path, file_text: str | None) -> str:
    """One line for the first validation error, naming the key and where it came from."""
    errors = exc.errors(include_input=False, include_url=False)
    first = errors[0]
    loc = tuple(str(p) for p in first["loc"])
    dotted = ".".join(loc) or "settings"
    msg = plain_message(first)
    # A table-level check (two settings that conflict) blames the settings its message
    # names, wherever they came from, not whoever first opened the table.
    named = [
        key for key in sources if key[:-1] == loc and loc and key[-1] in re.findall(r"\w+", msg)
    ]
    origin = ", ".join(sorted({_located(key, sources, path, file_text) for key in named or [loc]}))
    if first["type"] == "extra_forbidden":
        parent_fields = _fields_at(loc[:-1])
        message = f"unknown setting {dotted} {origin}" + _suggest(loc[-1], parent_fields)
    else:
        message = f"invalid setting {dotted} {origin}: {msg}"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return message


def _located(loc: tuple[str, ...], sources: Sources, path: Path, file_text: str | None) -> str:
    """Where the setting at ``loc`` came from, with its line when from the file."""
    origin = _origin_of(loc, sources)
    line = _find_line(file_text, loc) if origin == f"in {path}" else None
    return f"in {path}, line {line}" if line is not None else origin


def _origin_of(loc: tuple[str, ...], sources: Sources) -> str:
    for end in range(len(loc), 0, -1):
        origin = sources.get(loc[:end])
        if origin is not None:
            return origin
    return "(default)"


def _fields_at(loc: tuple[str, ...]) -> list[str]:
    """Valid key names of the table at ``loc`` (for "did you mean" hints)."""
    if loc[:1] == ("tools",):
        return list(ToolDecl.model_fields) if len(loc) == 2 else []
    if loc[:1] == ("agents",):
        if len(loc) == 2:
            return list(AgentProfile.model_fields)
        return list(SessionSettings.model_fields) if loc[2:] == ("session",) else []
    model: type[BaseModel] = Settings
    for part in loc:
        field = model.model_fields.get(part)
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)


def _find_line(text: str | None, loc: tuple[str, ...]) -> int | None:
    """Best-effort line number of ``loc`` in a TOML file (tomllib gives no positions)."""
    if text is None or not loc:
        return None
    table: tuple[str, ...] = ()
    header = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
    for number, line in enumerate(text.splitlines(), start=1):
        match = header.match(line)
        if match:
            table = tuple(p.strip().strip("\"'") for p in match.group(1).split("."))
            if table == loc:
                return number
            continue
        key_match = re.match(r"^\s*([A-Za-z0-9_.\-\"' ]+?)\s*=", line)
        if key_match is None:
            continue
        key = tuple(p.strip().strip("\"'") for p in key_match.group(1).split("."))
        full = table + key
        if full == loc[: len(full)] and len(full) >= min(len(loc), 2):
            return number
    return None


def redacted_dict(settings: Settings) -> dict[str, Any]:
    """Settings as plain data for display: secrets replaced, unset values dropped."""
    data = settings.model_dump(mode="json", exclude_none=True)
    data["agents"] = {
        name: profile.model_dump(mode="json", exclude_none=True, exclude_unset=True)
        for name, profile in settings.agents.items()
    }
    for section, key in SECRET_KEYS:
        if getattr(getattr(settings, section), key) is not None:
            data[section][key] = "<hidden>"
    # Empty tables (no tools, no key bindings...) only add noise to `config show`.
    for name, section in list(data.items()):
        for key, value in list(section.items()):
            if value == {}:
                del section[key]
        if not section and name in _FILE_ONLY:
            del data[name]
    return data
