"""Access-token checks of the loopback server (the reasons /rtc/validate shows)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from livekit.api import AccessToken, VideoGrants
from livekit.protocol import models

from fishtalk.sim.livekit.server import SimServer
from fishtalk.sim.livekit.signalling import JoinDenied, TokenChecker

SECRET = "s" * 32


@pytest.fixture
def checker() -> TokenChecker:
    return TokenChecker("devkey", SECRET)


def _reason(checker: TokenChecker, token: str | None, closed: frozenset[str] = frozenset()) -> str:
    with pytest.raises(JoinDenied) as info:
        checker.check(token, closed)
    return str(info.value)


def test_a_good_token_yields_its_grant(checker: TokenChecker) -> None:
    server = SimServer(api_secret=SECRET)
    token = server.mint_token(
        "room-1", "agent", kind="agent", name="Fish", metadata="m", attributes={"a": "1"}
    )
    grant = checker.check(token)
    assert (grant.room, grant.identity, grant.name, grant.metadata) == (
        "room-1",
        "agent",
        "Fish",
        "m",
    )
    assert grant.kind == models.ParticipantInfo.Kind.AGENT
    assert dict(grant.attributes) == {"a": "1"}
    assert checker.check(server.mint_token("r", "u")).kind == models.ParticipantInfo.Kind.STANDARD


def test_refusals_say_why(checker: TokenChecker) -> None:
    mine = SimServer(api_secret=SECRET)
    assert "missing access token" in _reason(checker, None)
    assert "malformed" in _reason(checker, "not-a-jwt")
    forged = SimServer(api_secret="x" * 32).mint_token("r", "u")
    assert "bad signature" in _reason(checker, forged)
    other_key = SimServer(api_key="other", api_secret=SECRET).mint_token("r", "u")
    assert "another API key" in _reason(checker, other_key)
    expired = mine.mint_token("r", "u", ttl=timedelta(minutes=-1))
    assert "expired" in _reason(checker, expired)
    assert checker.check(expired, allow_expired=True).identity == "u"  # resumes only
    assert "closed" in _reason(checker, mine.mint_token("gone", "u"), frozenset({"gone"}))
    no_join = (
        AccessToken("devkey", SECRET)
        .with_identity("u")
        .with_grants(VideoGrants(room_list=True))
        .to_jwt()
    )
    assert "roomJoin" in _reason(checker, no_join)
