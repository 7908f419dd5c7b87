"""``fishtalk load`` joins LiveKit rooms directly (issue 27, outcome 3), a real Locust run
against the sim's bare LiveKit server (no Fish session API) where a livekit-agents agent is
dispatched into every new room, as livekit-server does. Minting, each session joins a room
of its own (``--room`` and a suffix) as a participant of its own; a token is one
participant, so one user; the key, secret and token never reach the output."""

from __future__ import annotations

import csv
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from .conftest import HELLO_TEST, RoomHost

pytestmark = [
    pytest.mark.webrtc,
    pytest.mark.timeout(300),
    pytest.mark.xdist_group("locust-runs"),  # the Locust runs take turns (tests/load)
]

ROOT: Final = Path(__file__).parent.parent.parent
TEST_FILE: Final = f"""name = "lk"
text_only = true
{HELLO_TEST}"""


def _load(tmp_path: Path, *flags: str, env: dict[str, str]) -> tuple[int, str, dict[str, int]]:
    """``fishtalk load`` headless with ``flags``: its exit code, its output, and the CSV's
    request and failure counts by (type, name)."""
    path = tmp_path / "lk.toml"
    path.write_text(TEST_FILE, "utf-8")
    log = tmp_path / "run.log"
    env = dict(env)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    with log.open("w", encoding="utf-8") as out:
        run = subprocess.run(
            [sys.executable, "-m", "fishtalk", "load", str(path), "--yes",
             "--max-sessions", "1000", "--csv", str(tmp_path / "run"), "--stop-timeout", "30",
             *flags],
            env=env, stdout=out, stderr=subprocess.STDOUT, timeout=240,
        )  # fmt: skip
    text = log.read_text("utf-8", "replace")
    counts: dict[str, int] = {}
    stats = tmp_path / "run_stats.csv"
    if stats.exists():
        with stats.open(encoding="utf-8", newline="") as table:
            for row in csv.DictReader(table):
                counts[f"{row['Type']} {row['Name']}"] = int(row["Request Count"])
                counts[f"{row['Type']} {row['Name']} failures"] = int(row["Failure Count"])
    return run.returncode, text, counts


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("FISH", "LIVEKIT_"))}


@pytest.mark.parametrize("processes", [None, "2"])
def test_minting_each_session_joins_a_room_of_its_own(
    lk_host: RoomHost, tmp_path: Path, processes: str | None
) -> None:
    """In one process, and over two forked workers (the master hands them the URL and the
    room; they read the key and secret from the environment they inherit)."""
    prefix = "load-" + secrets.token_hex(3)
    rooms = lk_host.dispatch(prefix + "-")
    secret = lk_host.server.api_secret
    env = _env() | {"LIVEKIT_API_SECRET": secret}
    code, out, counts = _load(
        tmp_path, "--livekit-url", lk_host.url, "--api-key", lk_host.server.api_key,
        "--room", prefix, "-u", "2", "-r", "2", "-t", "3s", "--pace", "1",
        *(["--processes", processes] if processes else []),
        env=env,
    )  # fmt: skip
    assert code == 0, out[-4000:]
    starts = counts.get("session lk: start")
    assert starts is not None, (counts, out[-4000:])
    # Every session its own room, NAME- and 8 hex digits, where it was the one participant
    # when the agent was dispatched; two users: two sessions at least, all told apart.
    assert starts == len(rooms) >= 2, (counts, rooms)
    assert all(len(name) == len(prefix) + 9 for name in rooms), rooms
    firsts = [who for people in rooms.values() for who in people]
    assert len(firsts) == len(set(firsts)) == len(rooms), rooms
    assert all(who.startswith("fishtalk-") for who in firsts), rooms
    assert counts["session lk: start failures"] == 0, out[-4000:]
    assert counts["session lk: whole session failures"] == 0, out[-4000:]
    said = [
        name for name in counts if name.startswith("turn lk: turn 2") and "failures" not in name
    ]
    assert said, counts
    assert counts[said[0]] == starts, counts
    assert secret not in out
    assert "Traceback" not in out


def test_a_token_is_one_user_in_its_room(lk_host: RoomHost, tmp_path: Path) -> None:
    room = "load-token-" + secrets.token_hex(3)
    lk_host.agent(room)
    token = lk_host.server.mint_token(room, "load-tester")
    # Two users with one token: refused before Locust starts, one line, exit 2.
    code, out, _ = _load(
        tmp_path, "--livekit-url", lk_host.url, "--token", token, "-u", "2", "-t", "3s",
        env=_env(),
    )  # fmt: skip
    assert code == 2, out
    assert out.splitlines() == [
        "fishtalk: --token is one participant, so it joins one session at a time (not 2): "
        "mint a token per session with --api-key/--api-secret and --room"
    ]
    # One user: one session (the pace is longer than the run), in the token's room, as it.
    code, out, counts = _load(
        tmp_path, "--livekit-url", lk_host.url, "--token", token, "-u", "1", "-t", "2s",
        "--pace", "120", env=_env(),
    )  # fmt: skip
    assert code == 0, out[-4000:]
    assert counts.get("session lk: start") == 1, (counts, out[-4000:])
    assert counts["session lk: whole session failures"] == 0, out[-4000:]
    assert token not in out
