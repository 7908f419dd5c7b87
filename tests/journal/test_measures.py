"""One measure, one name, one value, one clock in every output; the diff aligns turns; the
call's end and its reason; what `sessions` lists; marks of truncation (issue 24)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fishtalk.core import conversation as conv
from fishtalk.engine.journal.reader import read_journal, summarize_journal
from fishtalk.engine.metrics import MetricsFile
from fishtalk.workbench.journal.compare import diff, format_diff, list_sessions
from fishtalk.workbench.journal.export import render, to_data
from fishtalk.workbench.reports.session import transcript
from journal.test_latency_journal import T0, write_journal


def _summary(tmp_path: Path, name: str = "lat.jsonl") -> object:
    path = tmp_path / name
    final = write_journal(path)
    return summarize_journal(read_journal(path)), final


def test_one_reply_shows_the_same_figures_in_every_output(tmp_path: Path) -> None:
    summary, final = _summary(tmp_path)
    [w] = [w for w in final.latency.turns if w.segment_id == "seg-a1"]
    first_ms, heard_ms = w.to_dict()["first_text_ms"], w.to_dict()["heard_ms"]
    assert (first_ms, heard_ms) == (590.0, 540.0)
    words = "first text 0.59 s, heard 0.54 s"
    assert words in render(summary, "md")
    assert words in render(summary, "txt")
    page = transcript(summary)
    assert "first text 0.59 s" in page
    assert "heard 0.54 s" in page
    assert "answered after" not in render(summary, "txt") + page
    data = json.loads(render(summary, "json"))
    [agent] = [t for t in data["turns"] if t["speaker"] == "agent"]
    assert agent["timings"]["first_text_ms"] == first_ms
    assert agent["timings"]["heard_ms"] == heard_ms
    assert data["latency"]["turns"][0]["first_text_ms"] == first_ms
    # --metrics-json writes the same figures (the reducer's waterfall).
    assert conv.metrics(final.latency)["turns"][0]["first_text_ms"] == first_ms  # type: ignore[index]
    text = format_diff(diff(summary, summary))
    assert words in text
    rows = diff(summary, summary)["turns"]
    [row] = [r for r in rows if r["a"]["speaker"] == "agent"]
    assert (row["a"]["first_text_ms"], row["a"]["heard_ms"]) == (first_ms, heard_ms)


def test_the_waterfall_marks_are_on_the_session_clock(tmp_path: Path) -> None:
    summary, _ = _summary(tmp_path)
    data = to_data(summary)
    [user] = [t for t in data["turns"] if t["speaker"] == "user"]
    w = data["latency"]["turns"][0]
    # The turn was typed at T0 + 1.0 and published at T0 + 1.01: both since the header.
    assert user["start"] == 1.0
    assert w["user_ended_at"] == 1.01
    assert w["first_text_at"] == 1.6


def test_metrics_json_marks_are_on_the_journals_clock(tmp_path: Path) -> None:
    """``--metrics-json`` writes a turn's marks as export does: seconds since the journal's
    header; without a journal, seconds since the file was opened (the call's start)."""
    summary, final = _summary(tmp_path)
    exported = to_data(summary)["latency"]["turns"][0]
    metrics = MetricsFile.open(tmp_path / "m.json")
    metrics.write(final, journal_origin=T0)
    data = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert data["clock_origin"] == "journal"
    [w] = data["turns"][:1]
    assert (w["user_ended_at"], w["first_text_at"]) == (1.01, 1.6)
    assert (w["user_ended_at"], w["first_text_at"]) == (
        exported["user_ended_at"],
        exported["first_text_at"],
    )
    assert w["first_text_ms"] == exported["first_text_ms"]  # figures stay as they are
    alone = MetricsFile.open(tmp_path / "alone.json")
    alone.opened_at = T0 + 1.0  # opened a second after the journal would have begun
    alone.write(final)
    data = json.loads((tmp_path / "alone.json").read_text(encoding="utf-8"))
    assert data["clock_origin"] == "opened"
    assert data["turns"][0]["user_ended_at"] == pytest.approx(0.01)


def test_a_journal_without_its_clock_origin_is_dated_by_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    write_journal(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["mono"] == T0
    del header["mono"]
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    data = to_data(summarize_journal(read_journal(path)))
    assert abs(data["latency"]["turns"][0]["user_ended_at"] - 1.01) < 1e-6


def _journal(tmp_path: Path, name: str, said: list[str]) -> Path:
    """A journal of typed turns, each answered by the agent (``Sure: <text>``)."""
    from fishtalk.core.protocol import ATTR_AGENT_STATE
    from fishtalk.engine import observe
    from fishtalk.engine.journal.writer import JournalWriter

    now = [T0]
    writer = JournalWriter(tmp_path / name, agent_id="a", clock=lambda: now[0], wall=lambda: 1e9)
    state = conv.initial_state(spoken=False)
    items: list[conv.Input] = [
        conv.Connected("me", T0 + 0.1),
        conv.AttributesChanged("agent", {ATTR_AGENT_STATE: "listening"}, T0 + 0.2),
    ]
    t = T0 + 1.0
    for n, text in enumerate(said):
        seg = f"s{n}"
        items += [
            conv.SendText(text, t),
            conv.TranscriptStreamOpened(seg, seg, "agent", False, t + 0.3),
            conv.TranscriptStreamChunk(seg, seg, f"Sure: {text}", t + 0.4),
            conv.TranscriptStreamClosed(seg, seg, t + 0.5),
        ]
        t += 2.0
    items.append(conv.Hangup(t))
    for inp in items:
        now[0] = inp.at
        previous = state
        state, _ = conv.reduce(state, inp)
        writer.observe(inp)
        writer.observe(observe.Reduced(state, inp.at, conv.changes(previous, state)))
    now[0] = t + 5.0  # the ended screen: the end is written later than the call ended
    writer.note({"type": "end", "reason": state.end_reason, "message": "You hung up."})
    writer.close()
    return tmp_path / name


def test_diff_aligns_turns_and_numbers_them_from_1(tmp_path: Path) -> None:
    a = summarize_journal(read_journal(_journal(tmp_path, "a.jsonl", ["one", "two", "three"])))
    b = summarize_journal(
        read_journal(_journal(tmp_path, "b.jsonl", ["one", "extra", "two", "three"]))
    )
    result = diff(a, b)
    changes = [(r["change"], r["a_turn"], r["b_turn"]) for r in result["turns"]]
    assert changes == [
        ("same", 1, 1),
        ("same", 2, 2),
        ("inserted", None, 3),
        ("inserted", None, 4),
        ("same", 3, 5),
        ("same", 4, 6),
        ("same", 5, 7),
        ("same", 6, 8),
    ]
    text = format_diff(result)
    assert "+   -/3   only in b: user" in text
    assert "=   5/7" in text
    assert "~" not in text
    assert text.splitlines()[-1] == "different"


def test_a_call_lasts_until_it_ended_and_says_how(tmp_path: Path) -> None:
    summary = summarize_journal(read_journal(_journal(tmp_path, "c.jsonl", ["hi"])))
    assert summary.end_reason == "user_hangup"
    assert abs(summary.duration - 3.0) < 1e-6  # the hang-up, not the journal's close (8.0)
    state = conv.initial_state(spoken=False)
    state, _ = conv.reduce(state, conv.Connected("me", 1.0))
    state, _ = conv.reduce(state, conv.Hangup(2.0, conv.END_INTERRUPTED))
    assert state.end_reason == "interrupted"


def test_sessions_leave_out_requests_that_opened_none(tmp_path: Path) -> None:
    _journal(tmp_path, "20260101-000000-aaaaaa.jsonl", ["hi"])  # no grant: a request that failed
    assert list_sessions(tmp_path) == []
    [row] = list_sessions(tmp_path, requests=True)
    assert row.opened is False
    assert row.to_dict()["opened"] is False


def test_a_long_or_truncated_tool_input_is_marked_in_text_exports(tmp_path: Path) -> None:
    from fishtalk.engine.journal.reader import ToolCall

    summary = summarize_journal(read_journal(_journal(tmp_path, "t.jsonl", ["hi"])))
    summary.tools.append(
        ToolCall(
            "c1", "search", "webhook", 1.2, 1.3, "completed", {"q": "x" * 4000}, truncated=True
        )
    )
    for fmt in ("md", "txt"):
        out = render(summary, fmt)  # type: ignore[arg-type]
        [line] = [line for line in out.splitlines() if "search(" in line]
        assert len(line) < 500
        assert "more characters]" in line
        assert "[truncated by the agent]" in line
    assert json.loads(render(summary, "json"))["tools"][0]["params"] == {"q": "x" * 4000}


def test_the_cli_lists_failed_requests_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fishtalk.engine import paths

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    folder = paths.journal_dir()
    folder.mkdir(parents=True)
    _journal(folder, "20260101-000000-bbbbbb.jsonl", ["hi"])  # no grant: no session opened
    assert _cli(capsys, "sessions")[1].startswith("no sessions yet")
    code, out = _cli(capsys, "sessions", "--all")
    assert code == 0
    assert "20260101-000000-bbbbbb" in out


def test_test_takes_the_sims_agent_settings_only_with_sim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    starter = tmp_path / "t.toml"
    starter.write_text("[[turns]]\nsay = 'x'\n", "utf-8")
    code, out = _cli(capsys, "test", str(starter), "--agent-setting", "think_seconds=0.1")
    assert (code, out) == (2, "fishtalk: --agent-setting needs --sim")
    code, out = _cli(capsys, "test", str(starter), "--sim", "--agent-setting", "nope=1")
    assert code == 2
    assert "agent override" in out


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Exit code and what the command wrote (stdout, else stderr)."""
    from fishtalk.cli.app import main

    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 1), (out or err).strip()
