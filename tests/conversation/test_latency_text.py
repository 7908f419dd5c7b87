"""The latency wording (badge, note, summary, interrupt note) and its JSON."""

from __future__ import annotations

import json

from fishtalk.core import conversation as c


def heard_turn(turn: int = 1, heard: float = 0.82) -> c.Waterfall:
    """A typed turn ended at 10.0 and heard ``heard`` seconds later (20 ms device latency)."""
    return c.Waterfall(
        turn=turn,
        kind="typed",
        user_ended_at=10.0,
        segment_id=f"a-{turn}",
        thinking_at=10.05,
        first_text_at=10.31,
        audio_received_at=10.0 + heard - 0.032,
        audio_handed_at=10.0 + heard - 0.02,
        output_latency=0.02,
        rtt=0.04,
    )


def text_only_turn(turn: int = 1) -> c.Waterfall:
    return c.Waterfall(
        turn=turn, kind="typed", user_ended_at=5.0, first_text_at=5.25, incomplete="text-only"
    )


def test_badge_is_the_heard_figure_or_the_reason() -> None:
    assert c.badge(heard_turn(heard=0.82)) == "0.82 s"
    assert c.badge(heard_turn(heard=1.5)) == "1.50 s"
    assert c.badge(text_only_turn()) == "text-only"
    for reason in ("no audio", "interrupted", "ended", "not heard", "no user turn"):
        w = c.Waterfall(turn=1, kind="spoken", user_ended_at=1.0, incomplete=reason)  # type: ignore[arg-type]
        assert c.badge(w) == reason
    still_open = c.Waterfall(turn=1, kind="typed", user_ended_at=1.0)
    assert c.badge(still_open) == c.MEASURING


def test_note_for_a_heard_turn_names_every_figure() -> None:
    line = c.note(heard_turn(heard=0.82))
    assert line == "latency: heard 0.82 s (first text 0.31 s, client 12 ms, rtt 40 ms)"
    assert "\n" not in line


def test_note_leaves_out_what_was_not_measured() -> None:
    w = c.Waterfall(
        turn=1,
        kind="spoken",
        user_ended_at=2.0,
        audio_handed_at=2.5,
        output_latency=0.1,
    )
    assert c.note(w) == "latency: heard 0.60 s"


def test_note_for_an_incomplete_turn_says_so_instead_of_a_number() -> None:
    assert c.note(text_only_turn()) == "latency: not measured — text-only (first text 0.25 s)"
    bare = c.Waterfall(turn=1, kind="typed", user_ended_at=1.0, incomplete="text-only")
    assert c.note(bare) == "latency: not measured — text-only"


def test_an_incomplete_turn_has_no_heard_figure_even_with_marks() -> None:
    w = c.Waterfall(
        turn=1,
        kind="unprompted",
        user_ended_at=1.0,
        audio_handed_at=1.5,
        output_latency=0.01,
        incomplete="no user turn",
    )
    assert w.heard is None
    assert w.heard_at == 1.51
    assert w.to_dict()["heard_ms"] is None
    assert c.badge(w) == "no user turn"
    assert c.summarize([w]).measured == 0


def test_summary_text_gives_p50_p95_and_the_worst_turn() -> None:
    turns = [heard_turn(n, h) for n, h in enumerate((0.5, 0.7, 0.9, 1.3), start=1)]
    turns.append(text_only_turn(5))
    text = c.summary_text(c.summarize(turns))
    assert text == (
        "latency: p50 0.70 s, p95 1.30 s, worst 1.30 s (your turn 4); 4 of 5 replies measured"
    )
    one = c.summary_text(c.summarize([heard_turn(1, 0.4)]))
    assert one == "latency: p50 0.40 s, p95 0.40 s, worst 0.40 s (your turn 1); 1 reply"


def test_summary_leaves_out_unprompted_turns() -> None:
    greeting = c.Waterfall(
        turn=1, kind="unprompted", user_ended_at=1.0, first_text_at=1.0, incomplete="no user turn"
    )
    summary = c.summarize([greeting, heard_turn(2, 0.6)])
    assert (summary.turns, summary.measured) == (1, 1)
    assert c.summary_text(summary).endswith("; 1 reply")


def test_summary_text_with_no_measured_turns() -> None:
    assert c.summary_text(c.summarize([])) == "latency: no measured turns"
    assert c.summary_text(c.summarize([text_only_turn()])) == "latency: no measured turns"


def test_interrupt_note() -> None:
    both = c.InterruptTiming(pressed_at=3.0, flushed_at=3.045, wire_stopped_at=3.12)
    assert (
        c.interrupt_note(both) == "interrupt: speaker silent after 45 ms, wire stopped after 120 ms"
    )
    flushed = c.InterruptTiming(pressed_at=3.0, flushed_at=3.045)
    assert c.interrupt_note(flushed) == "interrupt: speaker silent after 45 ms, wire not measured"
    assert c.interrupt_note(c.InterruptTiming(pressed_at=3.0)) == "interrupt: not measured"


def test_metrics_is_json_with_turns_interrupts_and_summary() -> None:
    latency = c.Latency(
        turns=(heard_turn(1, 0.8), text_only_turn(2)),
        interrupts=(c.InterruptTiming(pressed_at=3.0, flushed_at=3.05),),
        rtt=0.04,
    )
    data = json.loads(json.dumps(c.metrics(latency)))
    assert [t["turn"] for t in data["turns"]] == [1, 2]
    assert data["turns"][0]["heard_ms"] == 800.0
    assert data["turns"][1]["incomplete"] == "text-only"
    assert data["interrupts"] == [{"pressed_at": 3.0, "local_flush_ms": 50.0, "wire_stop_ms": None}]
    assert data["summary"] == {
        "turns": 2,
        "measured": 1,
        "p50_ms": 800.0,
        "p95_ms": 800.0,
        "worst_ms": 800.0,
        "worst_turn": 1,
    }
    assert data["rtt_ms"] == 40.0


def test_latency_finds_a_segments_turn_and_rolls_a_summary() -> None:
    turns = tuple(heard_turn(n, 0.1 * n) for n in range(1, 11))
    open_turn = c.Waterfall(turn=11, kind="typed", user_ended_at=20.0, segment_id="a-11")
    latency = c.Latency(open=open_turn, turns=turns)
    assert latency.for_segment("a-3") is turns[2]
    assert latency.for_segment("a-11") is open_turn
    assert latency.for_segment("nope") is None
    assert latency.summary().measured == 10
    rolling = latency.summary(last=3)
    assert rolling.turns == 3
    assert rolling.worst is turns[-1]
    assert rolling.p50 is not None
    assert abs(rolling.p50 - 0.9) < 1e-9
    assert latency.summary(last=0).turns == 0


def test_summary_parts_are_the_line_in_pieces() -> None:
    """The ended screen shows the parts as rows, the exit line joins them: same words."""
    turns = [heard_turn(1, 0.4), heard_turn(2, 1.3), text_only_turn(3)]
    summary = c.summarize(turns)
    assert c.summary_parts(summary) == (
        ("latency", "p50 0.40 s, p95 1.30 s"),
        ("worst", "1.30 s (your turn 2)"),
        ("measured", "2 of 3 replies"),
    )
    assert c.summary_text(summary) == (
        "latency: p50 0.40 s, p95 1.30 s, worst 1.30 s (your turn 2); 2 of 3 replies measured"
    )
    assert c.summary_parts(c.summarize([text_only_turn(1)])) == (("latency", "no measured turns"),)
