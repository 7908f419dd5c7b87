"""Any LiveKit room (issue 27, outcome 3): fishtalk joins a room directly, with no Fish
session API, and talks to whichever agent is there in its own protocol. Against a
livekit-agents agent (typed turns on ``lk.chat``, detected from its ``agent-AJ_``
identity) from the Python API and from line mode, and against the sim's Fish agent with
a token (``client-event``)."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
from datetime import timedelta

import httpx
import pytest
from livekit.api import AccessToken, VideoGrants
from support.lk_agent import GREETING, TABLE

from fishtalk import AgentSession, events
from fishtalk.core.errors import ClientConfigError, ConnectionFailedError, SessionExpiredError
from fishtalk.sim.runner import SimInfo

from .conftest import WAIT, RoomHost

pytestmark = pytest.mark.webrtc


def _room() -> str:
    return "lk-" + secrets.token_hex(4)


async def test_the_python_api_mints_a_token_and_talks_lk_chat(lk_host: RoomHost) -> None:
    room = _room()
    lk_host.agent(room)
    notices: list[str] = []
    session = AgentSession(
        livekit_url=lk_host.url,
        livekit_api_key=lk_host.server.api_key,
        livekit_api_secret=lk_host.server.api_secret,
        room=room,
        text_only=True,
    )
    session.on(events.NoticeAdded, lambda ev: notices.append(ev.notice.text))
    async with session:
        assert (await session.wait_for_reply(WAIT)).text == GREETING
        await session.send_text("hello")  # an lk.chat text stream: RoomIO answers it
        assert (await session.wait_for_reply(WAIT)).text == TABLE["hello"]
        session.interrupt()  # livekit-agents offers none: fishtalk says so, at once
        assert any("no interrupt" in text for text in notices), notices


def test_bad_direct_options_are_one_clear_error() -> None:
    with pytest.raises(ClientConfigError, match="missing: --api-secret, --room"):
        AgentSession(livekit_url="ws://127.0.0.1:1", livekit_api_key="k")
    with pytest.raises(ClientConfigError, match="not a LiveKit access token"):
        AgentSession(livekit_url="ws://127.0.0.1:1", token="not-a-jwt")
    with pytest.raises(ClientConfigError, match="--protocol must be one of"):
        AgentSession(livekit_url="ws://127.0.0.1:1", token="a.b.c", protocol="sip")  # type: ignore[arg-type]
    with pytest.raises(ClientConfigError, match="not a URL with a host"):
        AgentSession(livekit_url="http://[::1", token="a.b.c")


async def test_a_token_the_server_refuses_or_expired_raises_its_error(lk_host: RoomHost) -> None:
    room = _room()
    expired = lk_host.server.mint_token(room, "tester", ttl=timedelta(minutes=-5))
    with pytest.raises(SessionExpiredError, match="expired"):
        async with AgentSession(livekit_url=lk_host.url, token=expired, text_only=True):
            pass
    forged = (
        AccessToken(lk_host.server.api_key, "not-the-secret-" + secrets.token_hex(16))
        .with_identity("tester")
        .with_grants(VideoGrants(room_join=True, room=room))
        .to_jwt()
    )
    with pytest.raises(ConnectionFailedError, match="Could not connect"):
        async with AgentSession(livekit_url=lk_host.url, token=forged, text_only=True):
            pass


async def test_line_mode_joins_with_the_secret_from_the_environment(lk_host: RoomHost) -> None:
    room = _room()
    # No greeting: line mode sends its typed turn as soon as the agent is there, and a
    # typed turn makes livekit-agents cut its own line short (a race this test leaves out).
    lk_host.agent(room, greet=False)
    env = dict(os.environ)
    env.pop("FISH_API_KEY", None)
    env["XDG_CONFIG_HOME"] = "/nonexistent-fishtalk-test"
    env["LIVEKIT_API_SECRET"] = lk_host.server.api_secret
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "fishtalk", "chat", "--plain", "--no-journal", "--text-only",
        "--livekit-url", lk_host.url, "--api-key", lk_host.server.api_key, "--room", room,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(b"hello\n"), 90)
    text, errors = out.decode(), err.decode()
    assert proc.returncode == 0, (text, errors)
    assert TABLE["hello"] in text, text
    assert lk_host.server.api_secret not in text + errors


async def test_a_token_joins_the_sims_fish_agent_in_its_protocol(lk_sim: SimInfo) -> None:
    async with httpx.AsyncClient() as client:
        made = await client.post(
            lk_sim.api_url + "/v1/agent/sessions",
            json={"agent_id": "converse"},
            headers={"Authorization": f"Bearer {lk_sim.dev_key}"},
        )
    grant = made.json()
    # The sim's endpoint puts a livekit-agents agent in this room, as identity "agent":
    # detected as Fish, so the typed turn goes as client-event, which our bridge answers.
    async with AgentSession(
        livekit_url=grant["livekit_url"], token=grant["token"], text_only=True
    ) as session:
        await session.wait_for_reply(WAIT)
        await session.send_text("hello")
        assert (await session.wait_for_reply(WAIT)).text == TABLE["hello"]
