"""Every reply belongs to the turn that caused it (issue 24): which user turn each agent
line answers, and the latency waterfall bound to the first line that answers its turn."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reducer_feed import AGENT, ME, agent_state, feed, mark, ready

from fishtalk.core import conversation as c


def line_opens(seg: str, at: float) -> c.Input:
    return c.TranscriptStreamOpened(f"s-{seg}", seg, AGENT, False, at)


def chunk(seg: str, text: str, at: float) -> c.Input:
    return c.TranscriptStreamChunk(f"s-{seg}", seg, text, at)


def line_closes(seg: str, at: float) -> c.Input:
    return c.TranscriptStreamClosed(f"s-{seg}", seg, at)


def line(seg: str, at: float) -> list[c.Input]:
    """A whole agent line: opened at ``at``, one chunk at +0.1, closed at +0.2."""
    return [line_opens(seg, at), chunk(seg, "Sure.", at + 0.1), line_closes(seg, at + 0.2)]


def spoke(seg: str, end: float, final_at: float) -> list[c.Input]:
    """The user spoke: their end of speech at ``end``, their final transcript later."""
    stream = f"u-{seg}"
    return [
        mark("speech_ended", end),
        c.TranscriptStreamOpened(stream, seg, ME, True, final_at),
        c.TranscriptStreamChunk(stream, seg, "hello", final_at),
        c.TranscriptStreamClosed(stream, seg, final_at, final=True),
    ]


def answers(s: c.State, seg: str) -> int | None:
    line_ = s.segment(seg)
    assert line_ is not None
    return line_.answers_turn


def turn_of(s: c.State, seg: str) -> int | None:
    line_ = s.segment(seg)
    assert line_ is not None
    return line_.turn


def latencies(events: list[c.Change]) -> list[c.Waterfall]:
    return [e.waterfall for e in events if isinstance(e, c.TurnLatency)]


def test_a_the_user_types_while_the_greeting_still_streams() -> None:
    s, events = feed(
        [
            line_opens("greeting", 1.2),
            chunk("greeting", "Hello, ", 1.3),
            mark("audio_received", 1.35),
            c.SendText("hi", 1.5),  # the greeting is still speaking
            # The greeting's own audio goes on: not the reply to the user's turn.
            mark("audio_received", 1.6),
            mark("audio_heard", 1.62, 0.02),
            chunk("greeting", "how can I help?", 1.7),
            line_closes("greeting", 1.8),
            agent_state("thinking", 1.9),
            line_opens("a1", 2.0),
            chunk("a1", "Hi!", 2.1),
            mark("audio_received", 2.15),
            mark("audio_heard", 2.16, 0.02),
            line_closes("a1", 2.3),
        ],
        ready(),
    )
    assert answers(s, "greeting") is None
    assert answers(s, "a1") == 1
    assert turn_of(s, "typed-1") == 1
    greeting, w = latencies(events)
    assert (greeting.kind, greeting.segment_id, greeting.incomplete) == (
        "unprompted",
        "greeting",
        "no user turn",
    )
    assert (w.turn, w.kind, w.segment_id) == (1, "typed", "a1")
    assert w.first_text == pytest.approx(2.1 - 1.5)
    assert (w.audio_received_at, w.audio_handed_at) == (2.15, 2.16)
    assert w.heard == pytest.approx(2.16 + 0.02 - 1.5)
    opened = {
        e.segment.segment_id: e.answers_turn for e in events if isinstance(e, c.SegmentOpened)
    }
    assert opened == {"greeting": None, "typed-1": None, "a1": 1}


def test_b_a_reply_in_several_lines_answers_one_turn() -> None:
    s, events = feed(
        [
            c.SendText("tell me", 2.0),
            *line("a1", 2.5),
            *line("a2", 3.0),
            *line("a3", 3.5),
            c.SendText("thanks", 5.0),
            *line("a4", 5.5),
        ],
        ready(),
    )
    assert [answers(s, seg) for seg in ("a1", "a2", "a3", "a4")] == [1, 1, 1, 2]
    first, second = latencies(events)
    assert (first.turn, first.segment_id) == (1, "a1")
    assert (second.turn, second.segment_id) == (2, "a4")


def test_c_a_line_before_any_user_turn_answers_nothing() -> None:
    s, events = feed([*line("hello", 1.2), *line("anyone", 3.0)], ready())
    assert answers(s, "hello") is None
    assert answers(s, "anyone") is None
    [w] = latencies(events)
    assert (w.kind, w.turn, w.incomplete) == ("unprompted", 0, "no user turn")


def test_d_two_user_turns_before_the_agent_speaks_the_line_answers_the_last() -> None:
    s, events = feed(
        [*spoke("u1", 2.0, 2.2), c.SendText("and also", 3.0), *line("a1", 3.5)], ready()
    )
    assert turn_of(s, "u1") == 1
    assert turn_of(s, "typed-1") == 2
    assert answers(s, "a1") == 2
    [w] = latencies(events)
    assert (w.turn, w.kind, w.user_ended_at, w.segment_id) == (2, "typed", 3.0, "a1")


def test_a_late_end_of_speech_binds_the_line_that_already_started() -> None:
    s, _ = feed([*line("a1", 3.0), mark("speech_ended", 2.9)], ready())
    assert answers(s, "a1") == 1  # the end of speech was stamped before the line began


def test_a_line_that_began_before_the_end_of_speech_keeps_its_turn() -> None:
    s, _ = feed([*line("a1", 3.0), mark("speech_ended", 3.5)], ready())
    assert answers(s, "a1") is None


def test_pauses_in_speech_before_the_final_transcript_are_one_turn() -> None:
    s, _ = feed(
        [
            mark("speech_ended", 2.0),
            mark("speech_ended", 2.4),  # a pause, then more words
            *spoke("u1", 2.6, 2.8),
            *line("a1", 3.0),
        ],
        ready(),
    )
    assert turn_of(s, "u1") == 1
    assert answers(s, "a1") == 1


# --- the rule as a property ----------------------------------------------------------------

_Action = st.sampled_from(["type", "speak", "line", "type_during_line"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_Action, max_size=25))
def test_every_line_answers_the_last_user_turn_before_it(actions: list[str]) -> None:
    """Whatever the order of user turns and agent lines (a user turn may even end while a
    line is still speaking), each line answers the number of user turns that had ended
    when it started (None before the first), and each measured turn is bound to the
    first line that answers it."""
    inputs: list[c.Input] = []
    expected: dict[str, int | None] = {}
    ended = 0
    at = 2.0
    for i, action in enumerate(actions):
        seg = f"a{i}"
        if action == "type":
            inputs.append(c.SendText(f"m{i}", at))
            ended += 1
        elif action == "speak":
            inputs += spoke(f"u{i}", at, at + 0.1)
            ended += 1
        elif action == "line":
            inputs += line(seg, at)
            expected[seg] = ended or None
        else:
            inputs += [line_opens(seg, at), chunk(seg, "Well ", at + 0.1)]
            expected[seg] = ended or None
            inputs += [c.SendText(f"m{i}", at + 0.2), line_closes(seg, at + 0.3)]
            ended += 1
        at += 1.0
    s, events = feed(inputs, ready())
    assert {seg: answers(s, seg) for seg in expected} == expected
    assert s._internal.user_turn == ended
    first_answer: dict[int, str] = {}
    for seg, n in expected.items():
        if n is not None:
            first_answer.setdefault(n, seg)
    for w in latencies(events):
        if w.kind != "unprompted" and w.segment_id is not None:
            assert first_answer[w.turn] == w.segment_id
