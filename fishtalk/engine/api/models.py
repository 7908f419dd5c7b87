"""The session API's bodies: the session request (with its overrides) and the grant.

Requests are snake_case JSON (:meth:`SessionRequest.to_body`); :func:`parse_grant` validates
a creation response into a :data:`SessionGrant` that is still joinable.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SecretStr,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from fishtalk.core.errors import (
    SessionExpiredError,
    UnexpectedResponseError,
    UnsupportedTransportError,
)
from fishtalk.engine.api.errors import clean

# --- request ----------------------------------------------------------------------------


class SessionOverrides(BaseModel):
    """Per-session replacements for parts of the agent's published configuration.

    Each field must be allowed on the agent; keyless sessions may only set ``language``
    and ``voice_id``. ``first_message`` and ``first_message_prompt`` are exclusive.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    first_message: str | None = None
    """Opening line, spoken verbatim."""
    first_message_prompt: str | None = None
    """Instructions the opener is generated from."""
    system_prompt: str | None = None
    """Replaces the configured system prompt."""
    voice_id: str | None = None
    """Voice model id from the voice library."""
    language: str | None = None
    """Pins the conversation language (``en``, ``ja``, ``zh``, ``ko``, ``es``, ``fr``, ``de``)."""


DynamicValue: TypeAlias = str | int | float | bool


class SessionRequest(BaseModel):
    """Body of ``POST /v1/agent/sessions``; fields left as None are not sent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_id: str = Field(min_length=1)
    """The agent to talk to (it needs a published version)."""
    name: str | None = None
    """Console display name (API-key requests only; keyless requests get 400)."""
    tool_events: bool | None = None
    """Stream ``tool.*`` lifecycle events to the client (server default: true)."""
    language: str | None = None
    """Shorthand for ``overrides.language``."""
    timezone: str | None = None
    """IANA timezone for the agent's sense of local time (invalid -> 422)."""
    client_timezone: str | None = None
    """The end user's timezone, a hint used when nothing else sets one."""
    overrides: SessionOverrides | None = None
    dynamic_variables: dict[str, DynamicValue] | None = None
    """Values for ``{{placeholders}}`` (up to 50)."""
    end_user_id: str | None = None
    """Your identifier for the end user (up to 256 characters)."""
    metadata: dict[str, JsonValue] | None = None
    """Stored and returned verbatim; never interpreted by the platform."""
    record_audio: bool | None = None
    """Override the agent's recording setting for this session."""
    world_context: bool | None = None
    """Whether the agent knows the current date and time (server default: true)."""

    def to_body(self) -> dict[str, Any]:
        """The JSON body: snake_case, None fields (also inside ``overrides``) omitted."""
        return self.model_dump(mode="json", exclude_none=True)


# --- grant ------------------------------------------------------------------------------


class LiveKitGrant(BaseModel):
    """The ``livekit`` arm of a session grant: join ``livekit_url`` with ``token``."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    transport: Literal["livekit"] = "livekit"
    session_id: str = Field(min_length=1)
    expires_at: datetime
    """Join deadline (timezone-aware; a naive timestamp is read as UTC)."""
    max_duration_seconds: int
    """Hard cap on the session's length."""
    livekit_url: str = Field(min_length=1)
    token: SecretStr
    """Single-use participant token; a credential, hidden from repr."""

    @field_validator("expires_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)

    def is_expired(self, now: datetime | None = None) -> bool:
        """Whether the join deadline has passed (at ``now``, default: the current time)."""
        return self.expires_at <= (now or datetime.now(UTC))

    def ensure_fresh(self, now: datetime | None = None) -> None:
        """Raise :class:`SessionExpiredError` if the join deadline has passed."""
        if self.is_expired(now):
            raise SessionExpiredError(
                f"session {self.session_id} expired at {self.expires_at:%Y-%m-%d %H:%M:%S %Z} "
                "before it was joined; create a new session"
            )


SessionGrant: TypeAlias = Annotated[LiveKitGrant, Field(discriminator="transport")]
"""Discriminated union on ``transport``; new arms join here as they are supported."""
SUPPORTED_TRANSPORTS: Final = ("livekit",)
_GRANT_ADAPTER: Final[TypeAdapter[LiveKitGrant]] = TypeAdapter(SessionGrant)


def parse_grant(
    data: object, *, now: datetime | None = None, where: str = "the session grant"
) -> LiveKitGrant:
    """Validate a session-creation response body and check it is still joinable.

    Raises :class:`UnsupportedTransportError` for an unknown ``transport``,
    :class:`SessionExpiredError` when ``expires_at`` has passed (at ``now``), and
    :class:`UnexpectedResponseError` for anything else that is not a grant. ``where`` names
    the grant's source in messages.
    """
    if not isinstance(data, Mapping):
        raise UnexpectedResponseError(
            "the session API returned something other than a session grant", status=201
        )
    transport = data.get("transport")
    if not isinstance(transport, str) or not transport:
        raise UnexpectedResponseError(
            "the session API returned a grant without a transport", status=201
        )
    if transport not in SUPPORTED_TRANSPORTS:
        raise UnsupportedTransportError(clean(transport, limit=60), where=where)
    try:
        grant = _GRANT_ADAPTER.validate_python(data)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"][1:]) or "?" for e in exc.errors()})
        raise UnexpectedResponseError(
            f"the session API returned an incomplete grant (bad or missing: {', '.join(fields)})",
            status=201,
        ) from None
    grant.ensure_fresh(now)
    return grant
