"""The session takes parts, not settings: grant sources, audio factories, timeouts, and an
end result that names the reason and the error (the exit code is the CLI's to pick)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from pydantic import SecretStr

from fishtalk.cli.exits import exit_code_for
from fishtalk.cli.launch import audio_factory, build_session, grant_source, session_request
from fishtalk.cli.settings import Settings
from fishtalk.core import conversation as conv
from fishtalk.core.errors import ConfigError, NotFoundError
from fishtalk.engine.api import LiveKitGrant, SessionRequest
from fishtalk.engine.audio.base import AudioBackend, NullAudio
from fishtalk.engine.session import (
    DEFAULT_TIMEOUTS,
    CreateSession,
    ReadyGrant,
    Refused,
    Session,
    Timeouts,
)


def _grant(expires_in: float) -> LiveKitGrant:
    return LiveKitGrant(
        session_id="sess_x",
        expires_at=datetime.now(UTC) + timedelta(seconds=expires_in),
        max_duration_seconds=60,
        livekit_url="ws://127.0.0.1:9",
        token=SecretStr("t"),
    )


def test_default_timeouts_are_the_web_sdks() -> None:
    assert (DEFAULT_TIMEOUTS.connect, DEFAULT_TIMEOUTS.agent_join) == (15.0, 15.0)
    assert DEFAULT_TIMEOUTS.ended_grace == 10.0
    assert DEFAULT_TIMEOUTS.reconnect == 20.0
    assert Session(_grant(60)).timeouts == DEFAULT_TIMEOUTS
    short = Timeouts(connect=1.0, agent_join=0.5, ended_grace=0.2, reconnect=1.0)
    assert Session(_grant(60), timeouts=short).timeouts is short


async def test_a_refused_grant_ends_with_its_error_and_no_code() -> None:
    session = Session(Refused(ConfigError("no agent: pass --agent ID")), spoken=False)
    result = await asyncio.wait_for(session.run(), 5)
    assert result.reason == "session_request_failed"
    assert isinstance(result.error, ConfigError)
    assert not hasattr(result, "exit_code")
    assert exit_code_for(result.reason, result.error) == 2


async def test_an_api_error_ends_the_session_with_it() -> None:
    class NotThere:
        async def obtain(self) -> LiveKitGrant:
            raise NotFoundError("agent not found (404)", status=404)

    result = await asyncio.wait_for(Session(NotThere()).run(), 5)
    assert isinstance(result.error, NotFoundError)
    assert result.message == "agent not found (404)"
    assert exit_code_for(result.reason, result.error) == 4


async def test_an_expired_ready_grant_is_refused_before_any_device() -> None:
    opened: list[str] = []

    def factory(notice: object) -> AudioBackend:
        opened.append("audio")
        return NullAudio("test")

    session = Session(_grant(-1), audio=factory)
    result = await asyncio.wait_for(session.run(), 5)
    assert (result.reason, result.error) == (conv.END_SESSION_EXPIRED, None)
    assert exit_code_for(result.reason, result.error) == 6
    assert opened == []


def test_spoken_or_text_only() -> None:
    assert Session(_grant(60)).state.spoken is True
    assert Session(_grant(60), spoken=False).state.spoken is False


def test_launch_turns_settings_into_parts() -> None:
    settings = Settings.model_validate(
        {
            "api": {"url": "http://127.0.0.1:9", "api_key": "k"},
            "session": {"agent_id": "a", "text_only": True, "language": "de"},
        }
    )
    request = session_request(settings)
    assert request == SessionRequest(agent_id="a", tool_events=True, language="de")
    source = grant_source(settings)
    assert isinstance(source, CreateSession)
    assert source.request == request
    assert audio_factory(settings) is None  # text-only opens no devices
    session = build_session(settings)
    assert session.state.spoken is False
    without_agent = grant_source(Settings.model_validate({"api": {"api_key": "k"}}))
    assert isinstance(without_agent, Refused)
    assert "no agent" in str(without_agent.error)
    assert isinstance(ReadyGrant(_grant(60)), ReadyGrant)
