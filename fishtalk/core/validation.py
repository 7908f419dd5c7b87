"""Plain words for a pydantic validation error: what a config, flag or file error says.

Pydantic's own messages ("Input should be a valid integer, unable to parse string as an
integer", "Value error, ...", "String should have at least 1 character") read like a stack
trace to someone editing a TOML file. Every place that turns a ``ValidationError`` into one
line for a person goes through :func:`plain_message`, so none of that phrasing reaches them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

_KINDS: Final = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "string": "text (a quoted string)",
    "dict": "a table",
    "list": "a list",
    "model": "a table",
    "model_attributes": "a table",
    "tuple": "a list",
    "set": "a list",
    "json": "valid JSON",
}
"""What a value of each pydantic kind must be, for ``<kind>_type`` / ``<kind>_parsing``."""


def _number(value: object) -> str:
    """``5.0`` as ``5``; other numbers as written."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _plural(count: object, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def plain_message(error: Mapping[str, Any]) -> str:
    """One lower-case phrase for one entry of ``ValidationError.errors()``: "must be ..."
    or the validator's own message, never pydantic's wording."""
    kind = str(error.get("type", ""))
    ctx: Mapping[str, Any] = error.get("ctx") or {}
    msg = str(error.get("msg", ""))
    if kind in {"value_error", "assertion_error"}:
        return re.sub(r"^(Value error|Assertion failed), ", "", msg)
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '')}"
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a known setting"
    if kind in {"string_too_short", "too_short"}:
        least = ctx.get("min_length", 1)
        noun = "character" if kind.startswith("string") else "item"
        return "must not be empty" if least == 1 else f"must have at least {_plural(least, noun)}"
    if kind in {"string_too_long", "too_long"}:
        noun = "character" if kind.startswith("string") else "item"
        return f"must have at most {_plural(ctx.get('max_length'), noun)}"
    bounds = {
        "greater_than": ("gt", "must be more than"),
        "greater_than_equal": ("ge", "must be at least"),
        "less_than": ("lt", "must be less than"),
        "less_than_equal": ("le", "must be at most"),
    }
    if kind in bounds:
        key, words = bounds[kind]
        return f"{words} {_number(ctx.get(key))}"
    if kind == "multiple_of":
        return f"must be a multiple of {_number(ctx.get('multiple_of'))}"
    if kind in {"int_from_float", "int_parsing_size"}:
        return "must be a whole number"
    if kind == "string_pattern_mismatch":
        return f"must match {ctx.get('pattern')}"
    if kind in {"union_tag_invalid", "union_tag_not_found"}:
        return f"must name one of {ctx.get('expected_tags', 'the known kinds')}"
    for suffix in ("_type", "_parsing"):
        if kind.endswith(suffix) and kind.removesuffix(suffix) in _KINDS:
            return f"must be {_KINDS[kind.removesuffix(suffix)]}"
    # A kind not listed above: pydantic's sentence, reworded to the same voice.
    text = re.sub(r"^(Input|Value|String|List|Dictionary|Tuple|Set) should ", "must ", msg)
    return text.split(", ", 1)[0] if text.startswith("must ") else f"is not valid ({text})"


PYDANTIC_PHRASES: Final = (
    "Input should",
    "should be",
    "should have",
    "Value error",
    "Assertion failed",
    "Field required",
    "validation error",
    "For further information",
    "type=",
    "pydantic",
)
"""Phrases that mark pydantic's wording; tests assert no message to a person holds one."""


__all__ = ["PYDANTIC_PHRASES", "plain_message"]
