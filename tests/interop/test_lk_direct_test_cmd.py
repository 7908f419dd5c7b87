"""``fishtalk test`` joins any LiveKit room directly (issue 27, outcome 3): the real CLI,
in a process of its own, against the sim's bare LiveKit server (no Fish session API) with
a livekit-agents agent in the room, joining with ``--token`` or minting one with
``--api-key`` / ``--api-secret`` and ``--room``; and what bad direct-join input does (one
line, the documented exit code, never the secret)."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import HELLO_TEST, RoomHost

pytestmark = pytest.mark.webrtc

TEST_FILE = f"""{HELLO_TEST}
[expect]
no_errors = true
end_reason = "user_hangup"
"""


def _room() -> str:
    return "lk-test-" + secrets.token_hex(4)


def _env(**more: str) -> dict[str, str]:
    """No Fish key, no config file, no LiveKit credentials but those given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH", "LIVEKIT_"))}
    env["XDG_CONFIG_HOME"] = "/nonexistent-fishtalk-test"
    env.update(more)
    return env


def _fishtalk_test(
    tmp_path: Path, *flags: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "direct.toml"
    path.write_text(TEST_FILE, "utf-8")
    return subprocess.run(
        [sys.executable, "-m", "fishtalk", "test", str(path), "--no-journal",
         "--json", str(tmp_path / "report.json"), *flags],
        env=env if env is not None else _env(), capture_output=True, text=True, timeout=180,
    )  # fmt: skip


def _passed(tmp_path: Path, run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode == 0, (run.stdout, run.stderr)
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    assert report["summary"]["passed"] == 1, report


def test_a_token_joins_the_room_and_the_file_passes(lk_host: RoomHost, tmp_path: Path) -> None:
    room = _room()
    lk_host.agent(room)
    token = lk_host.server.mint_token(room, "tester-" + secrets.token_hex(3))
    run = _fishtalk_test(tmp_path, "--livekit-url", lk_host.url, "--token", token)
    _passed(tmp_path, run)
    assert token not in run.stdout + run.stderr


def test_a_key_and_secret_mint_a_token_for_the_room(lk_host: RoomHost, tmp_path: Path) -> None:
    room = _room()
    lk_host.agent(room)
    secret = lk_host.server.api_secret
    run = _fishtalk_test(
        tmp_path, "--livekit-url", lk_host.url, "--api-key", lk_host.server.api_key,
        "--api-secret", secret, "--room", room,
    )  # fmt: skip
    _passed(tmp_path, run)
    assert secret not in run.stdout + run.stderr


def _refused_url() -> str:
    """A ws:// URL on 127.0.0.1 where nothing listens (bound, never listening)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"ws://127.0.0.1:{probe.getsockname()[1]}"


SECRET = "s3cr3t-" + secrets.token_hex(16)


MINT = ["--api-key", "k", "--room", "r"]
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJ2aWRlbyI6eyJyb29tIjoiciJ9fQ.c2ln"  # a room's token, in shape


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (
            ["--livekit-url", "ftp://lk.example", "--token", "a.b.c"],
            "--livekit-url must be a ws://",
        ),
        (["--livekit-url", "http://[::1", *MINT], "not a URL with a host"),
        (["--livekit-url", "wss://", *MINT], "not a URL with a host"),
        (["--livekit-url", "ws://lk:port", *MINT], "not a URL with a host"),
        # LIVEKIT_API_SECRET is set: the token given still wins over it, and is checked.
        (["--livekit-url", "ws://127.0.0.1:9", "--token", "not-a-jwt"], "--token is not a LiveKit"),
        (["--livekit-url", "ws://127.0.0.1:9", "--api-key", "k"], "(missing: --room)"),
        (["--token", "a.b.c"], "they need --livekit-url"),
        (
            ["--livekit-url", "ws://127.0.0.1:9", "--token", JWT, "--concurrency", "2"],
            "--token is one participant",
        ),
        (
            ["--livekit-url", "ws://127.0.0.1:9", "--token", "a.b.c", "--protocol", "sip"],
            "must be one of 'fish' or 'livekit-agents'",
        ),
    ],
)
def test_bad_direct_options_are_one_line_and_exit_2(
    tmp_path: Path, flags: list[str], line: str
) -> None:
    run = _fishtalk_test(tmp_path, *flags, env=_env(LIVEKIT_API_SECRET=SECRET))
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert run.stdout == ""
    assert len(run.stderr.splitlines()) == 1, run.stderr
    assert line in run.stderr
    assert SECRET not in run.stderr


def test_a_refused_connection_is_one_line_and_exit_7(tmp_path: Path) -> None:
    short = "sh0rt-" + secrets.token_hex(2)  # PyJWT would warn of it on stderr
    run = _fishtalk_test(
        tmp_path, "--livekit-url", _refused_url(), "--api-key", "k", "--api-secret", short,
        "--room", "r",
    )  # fmt: skip
    assert run.returncode == 7, (run.stdout, run.stderr)
    assert run.stderr == ""
    errors = [line for line in run.stdout.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1, run.stdout
    assert "Could not connect to 127.0.0.1" in errors[0]
    assert short not in run.stdout


@pytest.mark.parametrize(("fault", "code", "line"), [
    ("wrong secret", 7, "Could not connect to 127.0.0.1"),
    ("expired", 6, "expired"),
])  # fmt: skip
def test_a_token_the_server_refuses_is_one_line_and_a_documented_code(
    lk_host: RoomHost, tmp_path: Path, fault: str, code: int, line: str
) -> None:
    from datetime import timedelta

    from livekit.api import AccessToken, VideoGrants

    room = _room()
    if fault == "wrong secret":
        token = (
            AccessToken(lk_host.server.api_key, SECRET)
            .with_identity("tester")
            .with_grants(VideoGrants(room_join=True, room=room))
            .to_jwt()
        )
    else:
        token = lk_host.server.mint_token(room, "tester", ttl=timedelta(minutes=-5))
    # The secret of the server is in the environment: the token still wins over it.
    env = _env(LIVEKIT_API_KEY=lk_host.server.api_key, LIVEKIT_API_SECRET=SECRET)
    run = _fishtalk_test(tmp_path, "--livekit-url", lk_host.url, "--token", token, env=env)
    assert run.returncode == code, (run.stdout, run.stderr)
    assert run.stderr == ""
    errors = [text for text in run.stdout.splitlines() if text.startswith("ERROR")]
    assert len(errors) == 1, run.stdout
    assert line in errors[0]
    assert token not in run.stdout
    assert SECRET not in run.stdout
