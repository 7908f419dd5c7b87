"""The base of every OpenLive message model, and the two catch-alls for what is not modelled.

Wire fields are camelCase (``reqId``, ``costUsd``); Python attributes are snake_case.
Models are strict (no ``"1"`` for a number, no ``1`` for a flag; a JSON array becomes a
tuple) and frozen, and keep the
fields this version does not know in ``extra_fields`` (reported, never an error).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from fishtalk.core.jsonwire import WireModel


class OpenLiveModel(WireModel):
    """Base for every OpenLive wire object: strict types, camelCase names, extras kept."""


class Unmodelled(BaseModel):
    """A message fishtalk does not model: its tag and its whole JSON object, as received."""

    model_config = ConfigDict(frozen=True)

    tag: str
    """The discriminator's value (``t`` of a message, ``type`` of an SSE event)."""
    raw: dict[str, Any] = Field(default_factory=dict)
    """The whole JSON object, as received."""


__all__ = ["OpenLiveModel", "Unmodelled"]
