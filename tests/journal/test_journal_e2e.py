"""A real ``fishtalk chat --plain`` session against the sim leaves a complete journal."""

from __future__ import annotations

import asyncio
import io
import json
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.child import finish, start_fishtalk

from fishtalk.core.events import SCHEMA_VERSION
from fishtalk.engine.journal import JOURNAL_VERSION
from fishtalk.engine.journal.reader import change_events, read_journal
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle, run_sim

pytestmark = pytest.mark.webrtc

EVERYTHING = parse_scenario(
    """
    name = "everything"
    then = "end"
    [agent]
    greeting = ""
    voice = "tones"
    [[steps]]
    do = "say"
    text = "Hello from the journal test."
    audio = false
    [[steps]]
    do = "state"
    value = "thinking"
    [[steps]]
    do = "tool"
    name = "lookup_weather"
    input = { city = "Lisbon" }
    output = { forecast = "sunny" }
    duration = 0.1
    [[steps]]
    do = "raw"
    payload = "{not json at all"
    [[steps]]
    do = "client_tool"
    name = "get_local_context"
    timeout = 10.0
    [[steps]]
    do = "wait_for"
    event = "user.message"
    timeout = 10.0
    [[steps]]
    do = "say"
    text = "Goodbye now."
    audio = false
    [[steps]]
    do = "end"
    """,
    name="everything",
)

CONFIG = """
[tools.get_local_context]
builtin = true
"""


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    async with run_sim(scenarios={"everything": EVERYTHING}) as handle:
        yield handle


async def chat(
    sim: SimHandle, tmp: Path, *extra: str, stdin: bytes = b"hello journal\n"
) -> tuple[int, str, str]:
    """Run ``fishtalk chat --plain`` with its state directory under ``tmp``."""
    config = tmp / "config.toml"
    config.write_text(CONFIG, encoding="utf-8")
    env = dict(os.environ)
    env["FISH_API_KEY"] = sim.dev_key
    env["FISHTALK_CONFIG"] = str(config)
    env["XDG_STATE_HOME"] = str(tmp / "state")
    env["XDG_DATA_HOME"] = str(tmp / "data")
    proc = await start_fishtalk(
        "chat",
        "--agent",
        "everything",
        "--api-url",
        sim.api_url,
        "--text-only",
        "--plain",
        *extra,
        env=env,
    )
    return await finish(proc, stdin, within=90)


def journal_dir(tmp: Path) -> Path:
    return tmp / "state" / "fishtalk" / "journal"


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_a_session_writes_a_complete_private_journal(sim: SimHandle, tmp_path: Path) -> None:
    code, out, err = await chat(sim, tmp_path)
    assert code == 0, err + out
    files = list(journal_dir(tmp_path).glob("*.jsonl"))
    assert len(files) == 1, files
    path = files[0]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    recs = records(path)

    head = recs[0]
    assert head["type"] == "header"
    assert head["format"] == "fishtalk-journal"
    assert head["version"] == JOURNAL_VERSION == 2
    assert head["schema_version"] == SCHEMA_VERSION
    assert head["agent_id"] == "everything"
    assert head["fishtalk_version"]
    assert head["protocol_version"]
    assert head["started_at"]
    for rec in recs:
        assert isinstance(rec["t"], float | int)
        assert isinstance(rec["wall"], float | int)
    times = [r["t"] for r in recs]
    assert times == sorted(times)

    types = {r["type"] for r in recs}
    assert {"packet_in", "packet_out", "input", "change", "tool_run", "grant", "end"} <= types
    assert recs[-1]["type"] == "closed"
    assert recs[-1]["dropped"] == 0
    (grant,) = [r for r in recs if r["type"] == "grant"]
    assert grant["session_id"] in sim.endpoint.sessions

    kinds = {r.get("kind") for r in recs if r["type"] == "input"}
    assert {
        "connected",
        "participant_joined",
        "attributes_changed",
        "stream_opened",
        "stream_chunk",
        "stream_closed",
        "malformed_packet",
        "send_text",
        "tool_finished",
    } <= kinds, kinds
    changes = {r.get("kind") for r in recs if r["type"] == "change"}
    events = change_events(read_journal(path))  # every change record is a typed event
    assert {e.type for e in events} == changes
    assert {"status_change", "segment_opened", "message_sent", "tool_card_added", "ended"} <= (
        changes
    )
    # Raw packets both ways, as JSON text exactly as on the wire.
    sent = [json.loads(r["raw"]) for r in recs if r["type"] == "packet_out"]
    assert any(e.get("type") == "user.message" and e.get("text") == "hello journal" for e in sent)
    assert any(e.get("type") == "client_tool.result" for e in sent)
    received = [r for r in recs if r["type"] == "packet_in"]
    assert any("tool.started" in r.get("raw", "") for r in received)
    (bad,) = [r for r in received if r.get("malformed")]
    assert bad["preview"] == "{not json at all"
    (run,) = [r for r in recs if r["type"] == "tool_run"]
    assert run["tool_name"] == "get_local_context"
    assert run["status"] == "ok"
    assert isinstance(run["result"], dict)
    assert run["duration"] >= 0
    stream = [r for r in recs if r["type"] == "stream_attributes"]
    assert stream
    assert all(isinstance(r["attributes"], dict) for r in stream)
    (end,) = [r for r in recs if r["type"] == "end"]
    assert end["reason"] in ("agent_hangup", "user_hangup")  # EOF hangs up once answered

    # Played back, the journal prints what line mode printed live.
    from fishtalk.plain.replay import play_plain

    replayed = io.StringIO()
    play_plain(read_journal(path), replayed, speed=0)
    assert replayed.getvalue() + f"* {end['message']}\n" == out

    # Secrets: neither the API key nor the LiveKit token is anywhere in the file.
    text = path.read_text(encoding="utf-8")
    session = sim.endpoint.sessions[grant["session_id"]]
    assert sim.dev_key not in text
    assert session.user_token not in text
    assert session.user_token.split(".")[1] not in text  # not even the JWT's claims


async def test_no_journal_and_explicit_path(sim: SimHandle, tmp_path: Path) -> None:
    code, _out, err = await chat(sim, tmp_path, "--no-journal")
    assert code == 0, err
    assert not list(journal_dir(tmp_path).glob("*.jsonl"))
    target = tmp_path / "mine.jsonl"
    code, _out, err = await chat(sim, tmp_path, "--journal", str(target))
    assert code == 0, err
    assert not list(journal_dir(tmp_path).glob("*.jsonl"))
    recs = records(target)
    assert recs[0]["type"] == "header"
    assert recs[-1]["type"] == "closed"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


async def test_events_prints_every_record_on_stdout(sim: SimHandle, tmp_path: Path) -> None:
    code, out, err = await chat(sim, tmp_path, "--events")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["type"] == "header"
    assert lines[-1]["type"] == "closed"
    assert "you> hello journal" in err  # the conversation went to stderr
    (path,) = journal_dir(tmp_path).glob("*.jsonl")
    assert records(path) == lines  # the same records as the file


async def test_the_demo_writes_a_journal_too(tmp_path: Path) -> None:
    env = dict(os.environ)
    env.pop("FISH_API_KEY", None)
    env["FISHTALK_CONFIG"] = str(tmp_path / "absent.toml")
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    proc = await start_fishtalk("demo", "--scenario", "converse", "--no-audio", env=env)
    code, out, err = await finish(proc, b"hello demo\n", within=90)
    assert code == 0, err + out
    (path,) = journal_dir(tmp_path).glob("*.jsonl")
    recs = records(path)
    assert recs[0]["agent_id"] == "demo"  # the demo agent plays the chosen scenario
    assert recs[0]["front_end"] == "plain"
    assert any(r.get("kind") == "send_text" and r.get("text") == "hello demo" for r in recs)
    assert any(r["type"] == "end" for r in recs)


CHANGED = parse_scenario(
    """
    name = "changed"
    then = "end"
    [agent]
    greeting = ""
    voice = "tones"
    [[steps]]
    do = "say"
    text = "Hello from the journal test."
    audio = false
    [[steps]]
    do = "tool"
    name = "lookup_weather"
    input = { city = "Porto" }
    output = { forecast = "rain" }
    duration = 0.1
    [[steps]]
    do = "wait_for"
    event = "user.message"
    timeout = 10.0
    [[steps]]
    do = "end"
    """,
    name="changed",
)


async def test_two_runs_export_in_every_format_and_diff(tmp_path: Path) -> None:
    from fishtalk.engine.journal.reader import read_journal, summarize_journal
    from fishtalk.workbench.journal.compare import diff
    from fishtalk.workbench.journal.export import FORMATS, render

    journals = []
    async with run_sim(scenarios={"everything": EVERYTHING, "changed": CHANGED}) as sim:
        for agent in ("everything", "changed"):
            config = tmp_path / "config.toml"
            config.write_text(CONFIG, encoding="utf-8")
            target = tmp_path / f"{agent}.jsonl"
            env = dict(os.environ)
            env["FISH_API_KEY"] = sim.dev_key
            env["FISHTALK_CONFIG"] = str(config)
            proc = await start_fishtalk(
                "chat",
                "--agent",
                agent,
                "--api-url",
                sim.api_url,
                "--text-only",
                "--plain",
                "--journal",
                str(target),
                env=env,
            )
            _out, err = await asyncio.wait_for(proc.communicate(b"hello journal\n"), 90)
            assert proc.returncode == 0, err.decode()
            journals.append(summarize_journal(read_journal(target)))
    first, second = journals
    for fmt in FORMATS:
        text = render(first, fmt)  # type: ignore[arg-type]
        assert "hello journal" in text, fmt
        assert "Hello from the journal test." in text, fmt
    data = json.loads(render(first, "json"))
    assert {t["name"] for t in data["tools"]} == {"lookup_weather", "get_local_context"}
    result = diff(first, second)
    assert result["same"] is False
    changed_tools = [row for row in result["turns"] if "tools" in row["differences"]]
    assert changed_tools, result
    params = [t["params"] for t in changed_tools[0]["b"]["tools"]]
    assert {"city": "Porto"} in params
