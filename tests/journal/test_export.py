"""Reading journals back: exports (golden files), damage, sessions and diff commands.

``data/everything.jsonl`` is the journal of a real ``fishtalk chat --plain`` session
against the sim (the ``everything`` scenario of test_journal_e2e.py), kept as a fixture so
the exports are deterministic. To regenerate the goldens after a deliberate format change:
``for f in md txt json srt vtt; do fishtalk export tests/journal/data/everything.jsonl
--format $f > tests/journal/golden/everything.$f; done`` (and review the diff).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fishtalk.cli.app import main
from fishtalk.core import conversation as conv
from fishtalk.core.errors import JournalError
from fishtalk.engine.journal import JOURNAL_VERSION
from fishtalk.engine.journal.reader import change_events, read_journal, summarize_journal
from fishtalk.workbench.journal.export import FORMATS, render

HERE = Path(__file__).parent
FIXTURE = HERE / "data" / "everything.jsonl"
GOLDEN = HERE / "golden"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 1), out, err


@pytest.mark.parametrize("fmt", FORMATS)
def test_exports_match_the_golden_files(fmt: str) -> None:
    summary = summarize_journal(read_journal(FIXTURE))
    expected = (GOLDEN / f"everything.{fmt}").read_text(encoding="utf-8")
    assert render(summary, fmt) == expected  # type: ignore[arg-type]


def test_json_export_has_tools_and_per_turn_timings() -> None:
    data = json.loads(render(summarize_journal(read_journal(FIXTURE)), "json"))
    speakers = [t["speaker"] for t in data["turns"]]
    assert speakers[:2] == ["user", "agent"]
    assert data["turns"][0]["text"] == "hello journal"
    # A version-1 journal holds no waterfall: its replies have no measures (no guess).
    assert data["turns"][1]["timings"] == {
        "duration": 0.211,
        "first_text_ms": None,
        "heard_ms": None,
    }
    names = {t["name"]: t for t in data["tools"]}
    assert names["lookup_weather"]["params"] == {"city": "Lisbon"}
    assert names["lookup_weather"]["result"] == '{"forecast":"sunny"}' or names["lookup_weather"][
        "result"
    ] == {"forecast": "sunny"}
    assert names["get_local_context"]["client"] is True
    assert names["get_local_context"]["status"] == "ok"
    assert data["end"]["reason"] == "user_hangup"


def test_srt_and_vtt_cue_both_speakers_in_order() -> None:
    summary = summarize_journal(read_journal(FIXTURE))
    srt = render(summary, "srt")
    assert "User: hello journal" in srt
    assert "Agent: Hello from the journal test." in srt
    vtt = render(summary, "vtt")
    assert vtt.startswith("WEBVTT\n")
    assert "<v User>hello journal" in vtt


def test_export_command_by_file_and_by_id(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, "export", str(FIXTURE), "--format", "txt")
    assert code == 0, err
    assert out == (GOLDEN / "everything.txt").read_text(encoding="utf-8")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    directory = tmp_path / "fishtalk" / "journal"
    directory.mkdir(parents=True)
    shutil.copy(FIXTURE, directory / "20261130-233702-abcdef.jsonl")
    for ref in ("20261130-233702-abcdef", "20261130-2337", "sess_988ef7e715d57035", "latest"):
        code, out, err = run(capsys, "export", ref, "-f", "srt")
        assert code == 0, (ref, err)
        assert out == (GOLDEN / "everything.srt").read_text(encoding="utf-8")
    code, out, err = run(capsys, "export", "nope")
    assert code == 2
    assert err.count("\n") == 1
    assert "Traceback" not in err


def _damaged(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_truncated_journal_exports_what_it_has_then_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = FIXTURE.read_text(encoding="utf-8")
    cut = _damaged(tmp_path, "cut.jsonl", text[: len(text) - 40])  # mid-way through a line
    code, out, err = run(capsys, "export", str(cut), "--format", "txt")
    assert code == 2
    assert "User: hello journal" in out  # the records before the damage are used
    assert err.count("\n") == 1
    assert "cut short at line" in err
    assert "Traceback" not in err


def test_corrupted_line_is_reported_with_its_number(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[20] = '{"type": "change", "kind": \x00 broken\n'
    bad = _damaged(tmp_path, "bad.jsonl", "".join(lines))
    journal = read_journal(bad)
    assert journal.damage is not None
    assert "corrupted at line 21" in journal.damage
    assert len(journal.records) == 19
    code, _out, err = run(capsys, "export", str(bad), "--format", "json")
    assert code == 2
    assert err.count("\n") == 1


def test_future_version_and_non_journals_are_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True)
    head = json.loads(lines[0])
    head["version"] = 99
    future = _damaged(tmp_path, "future.jsonl", json.dumps(head) + "\n" + "".join(lines[1:]))
    with pytest.raises(JournalError, match="newer fishtalk"):
        read_journal(future)
    for path in (
        future,
        _damaged(tmp_path, "empty.jsonl", ""),
        _damaged(tmp_path, "other.jsonl", '{"hello": 1}\n'),
        _damaged(tmp_path, "binary.jsonl", "\x00\x01garbage"),
    ):
        for command in (["export", str(path)], ["diff", str(path), str(FIXTURE)]):
            code, out, err = run(capsys, *command)
            assert code == 2, (command, err)
            assert err.count("\n") == 1, err
            assert err.startswith("fishtalk: ")
            assert "Traceback" not in err + out


def test_sessions_lists_past_sessions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    code, out, _err = run(capsys, "sessions")
    assert code == 0
    assert out.startswith("no sessions yet")
    directory = tmp_path / "fishtalk" / "journal"
    directory.mkdir(parents=True)
    shutil.copy(FIXTURE, directory / "20261130-233702-abcdef.jsonl")
    (directory / "20261201-000000-000000.jsonl").write_text("garbage\n", encoding="utf-8")
    code, out, err = run(capsys, "sessions")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == [
        "ID",
        "STARTED",
        "AGENT",
        "DURATION",
        "TURNS",
        "TOOLS",
        "ERRORS",
        "ENDED",
    ]
    assert lines[1].startswith("20261201-000000-000000")  # newest first
    assert "unreadable" in lines[1]
    row = lines[2].split()
    assert row[0] == "20261130-233702-abcdef"
    assert "everything" in row
    assert row[-1] == "user_hangup"
    code, out, _err = run(capsys, "sessions", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[1]["agent_id"] == "everything"
    assert rows[1]["turns"] == 3
    assert rows[1]["tools"] == 2
    assert rows[1]["end_reason"] == "user_hangup"


def test_diff_same_and_changed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "diff", str(FIXTURE), str(FIXTURE))
    assert code == 0, err
    assert out.splitlines()[-1] == "same"
    changed = _damaged(
        tmp_path,
        "changed.jsonl",
        FIXTURE.read_text(encoding="utf-8")
        .replace("Lisbon", "Porto")
        .replace("Hello from the journal test.", "Hi from the journal test."),
    )
    code, out, err = run(capsys, "diff", str(FIXTURE), str(changed))
    assert code == 1, err
    assert out.splitlines()[-1] == "different"
    assert "~   2/2   differs in: text, tools" in out
    assert "Porto" in out
    code, out, err = run(capsys, "diff", str(FIXTURE), str(changed), "--json")
    assert code == 1
    data = json.loads(out)
    assert data["same"] is False
    assert data["turns"][1]["differences"] == ["text", "tools"]
    assert (data["turns"][1]["a_turn"], data["turns"][1]["b_turn"]) == (2, 2)
    assert data["turns"][1]["b"]["tools"][0]["params"] == {"city": "Porto"}
    assert data["turns"][0]["same"] is True


def test_exports_never_carry_terminal_escapes(tmp_path: Path) -> None:
    text = FIXTURE.read_text(encoding="utf-8").replace(
        "Hello from the journal test.", "Hello \\u001b[31mred\\u001b[0m \\u202e"
    )
    path = _damaged(tmp_path, "esc.jsonl", text)
    summary = summarize_journal(read_journal(path))
    for fmt in FORMATS:
        out = render(summary, fmt)  # type: ignore[arg-type]
        assert "\x1b" not in out, fmt
        assert "\u202e" not in out, fmt


def test_replay_prints_the_session_as_line_mode_did(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "replay", str(FIXTURE), "--speed", "0")
    assert code == 0, err
    assert out == (GOLDEN / "everything.replay.txt").read_text(encoding="utf-8")
    assert "you> hello journal" in out
    assert "[tool] lookup_weather (webhook) completed in 0.1 s" in out
    assert out.splitlines()[-1] == "* You hung up."


def test_a_version_1_journal_still_reads_exports_and_replays(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The fixture was written before events had ``type``/``at`` (journal version 1,
    schema 1): it reads, its change records read back as typed events, and it exports and
    replays exactly as its goldens say."""
    journal = read_journal(FIXTURE)
    assert journal.header["version"] == 1 < JOURNAL_VERSION
    assert journal.header["schema_version"] == 1 < conv.SCHEMA_VERSION
    assert journal.damage is None
    records = [r for r in journal.records if r["type"] == "change"]
    events = change_events(journal)
    assert len(events) == len(records) > 0
    assert [e.type for e in events] == [r["kind"] for r in records]
    assert [e.at for e in events] == [r["t"] for r in records]
    assert isinstance(events[-1], conv.Ended)
    summary = summarize_journal(journal)
    for fmt in FORMATS:
        assert render(summary, fmt) == (GOLDEN / f"everything.{fmt}").read_text(encoding="utf-8")
    code, out, _ = run(capsys, "replay", str(FIXTURE), "--speed", "0")
    assert code == 0
    assert out == (GOLDEN / "everything.replay.txt").read_text(encoding="utf-8")


def test_replay_keeps_the_original_timing_scaled_by_speed() -> None:
    import io

    from fishtalk.plain.replay import play_plain
    from fishtalk.workbench.journal.replay import states

    journal = read_journal(FIXTURE)
    times = [t for t, _, _ in states(journal)]
    waits: list[float] = []
    play_plain(journal, io.StringIO(), speed=2.0, sleep=waits.append)
    assert sum(waits) == pytest.approx((times[-1] - times[0]) / 2)
    waits.clear()
    play_plain(journal, io.StringIO(), speed=0, sleep=waits.append)
    assert waits == []


def test_replay_of_a_damaged_journal_plays_up_to_the_damage(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = FIXTURE.read_text(encoding="utf-8")
    cut = _damaged(tmp_path, "cut.jsonl", text[: len(text) // 2])
    code, out, err = run(capsys, "replay", str(cut), "--speed", "0")
    assert code == 2
    assert "you> hello journal" in out
    assert "the session did not finish" in out
    assert err.count("\n") == 1
    assert "Traceback" not in err
