"""The reducer builds each turn's latency waterfall (issue 14): unit tests and a property."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from reducer_feed import AGENT, ME, agent_state, feed, mark, ready

from fishtalk.core import conversation as c


def reply(seg: str, at: float, words: tuple[str, ...] = ("Sure, ", "here.")) -> list[c.Input]:
    """An agent segment: opened at ``at``, one chunk per 0.1 s, closed after the last."""
    stream = f"s-{seg}"
    out: list[c.Input] = [c.TranscriptStreamOpened(stream, seg, AGENT, False, at)]
    for i, word in enumerate(words, start=1):
        out.append(c.TranscriptStreamChunk(stream, seg, word, at + 0.1 * i))
    out.append(c.TranscriptStreamClosed(stream, seg, at + 0.1 * (len(words) + 1)))
    return out


def user_said(seg: str, text: str, at: float) -> list[c.Input]:
    stream = f"u-{seg}"
    return [
        c.TranscriptStreamOpened(stream, seg, ME, True, at),
        c.TranscriptStreamChunk(stream, seg, text, at),
        c.TranscriptStreamClosed(stream, seg, at, final=True),
    ]


def latencies(events: list[c.Change]) -> list[c.Waterfall]:
    return [e.waterfall for e in events if isinstance(e, c.TurnLatency)]


# --- typed turns ------------------------------------------------------------------------------


def test_a_typed_turn_heard() -> None:
    s, events = feed(
        [
            c.SendText("hello", 2.0),
            mark("typed_sent", 2.01),
            agent_state("thinking", 2.2),
            mark("rtt", 2.3, 0.04),
            agent_state("speaking", 2.5),
            mark("audio_received", 2.55),
            *reply("a1", 2.56),
            mark("audio_heard", 2.57, 0.03),
        ],
        ready(),
    )
    assert s.latency.open is None
    [w] = latencies(events)
    assert w == s.latency.turns[0]
    assert (w.turn, w.kind, w.segment_id, w.incomplete) == (1, "typed", "a1", None)
    assert w.user_ended_at == 2.01  # the publish completed
    assert (w.thinking_at, w.first_text_at) == (2.2, 2.66)
    assert w.heard is not None
    assert abs(w.heard - 0.59) < 1e-9
    assert w.client_share is not None
    assert abs(w.client_share - 0.02) < 1e-9
    assert w.first_text is not None
    assert abs(w.first_text - 0.65) < 1e-9
    assert w.rtt == 0.04
    assert c.badge(w) == "0.59 s"


def test_the_audio_path_knows_when_a_mark_is_wanted() -> None:
    s = ready()
    assert not s.latency.awaiting_audio
    assert not s.latency.awaiting_heard
    s, _ = feed([c.SendText("hello", 2.0)], s)
    assert s.latency.awaiting_audio
    assert s.latency.awaiting_heard
    s, _ = feed([mark("audio_received", 2.5)], s)
    assert not s.latency.awaiting_audio
    assert s.latency.awaiting_heard
    s, _ = feed([mark("audio_heard", 2.52, 0.02)], s)
    assert not s.latency.awaiting_heard


def test_the_turn_closes_when_the_reply_is_over_and_heard() -> None:
    s, _ = feed([c.SendText("hello", 2.0), mark("audio_received", 2.5), *reply("a1", 2.5)], ready())
    # The reply's segment closed, but the first frame is still on its way to the speaker.
    assert s.latency.open is not None
    assert s.latency.turns == ()
    s, events = feed([mark("audio_heard", 3.2, 0.05)], s)
    [w] = latencies(events)
    assert w.heard is not None
    assert abs(w.heard - 1.25) < 1e-9


def test_a_text_only_turn_says_so() -> None:
    s, events = feed(
        [c.SendText("hi", 2.0), agent_state("thinking", 2.1), *reply("a1", 2.3)], ready(False)
    )
    [w] = latencies(events)
    assert (w.incomplete, w.heard, w.first_text_at) == ("text-only", None, 2.4)
    assert c.note(w) == "latency: not measured — text-only (first text 0.40 s)"
    assert s.latency.open is None


def test_a_typed_message_that_asks_for_text_only_in_a_spoken_session() -> None:
    _s, events = feed([c.SendText("hi", 2.0, audio=False), *reply("a1", 2.3)], ready(True))
    assert [w.incomplete for w in latencies(events)] == ["text-only"]


def test_a_spoken_reply_without_audio() -> None:
    _s, events = feed([c.SendText("hi", 2.0), *reply("a1", 2.3)], ready(True))
    assert [w.incomplete for w in latencies(events)] == ["no audio"]


def test_audio_received_but_never_heard() -> None:
    _s, events = feed(
        [c.SendText("hi", 2.0), mark("audio_received", 2.2), *reply("a1", 2.3), c.Hangup(4.0)],
        ready(True),
    )
    assert [w.incomplete for w in latencies(events)] == ["not heard"]


def test_a_queued_message_opens_its_turn_when_it_leaves() -> None:
    s, events = feed(
        [c.SendText("early", 0.5), c.Connected(ME, 1.0), agent_state("listening", 1.4)],
        c.initial_state(spoken=True),
    )
    assert s.latency.open is not None
    assert (s.latency.open.kind, s.latency.open.user_ended_at) == ("typed", 1.4)
    assert latencies(events) == []


def test_two_messages_before_the_reply_are_one_turn_ending_at_the_second() -> None:
    s, events = feed(
        [
            c.SendText("one", 2.0),
            agent_state("thinking", 2.1),
            c.SendText("two", 2.5),
            *reply("a1", 3.0),
        ],
        ready(False),
    )
    [w] = latencies(events)
    # The reply answers the last of the two (issue 24): the user's second turn.
    assert (w.turn, w.user_ended_at, w.thinking_at) == (2, 2.5, None)
    a1 = s.segment("a1")
    assert a1 is not None
    assert a1.answers_turn == 2
    assert s.latency.turns == (w,)


def test_typed_sent_never_moves_the_end_past_what_the_agent_already_did() -> None:
    s, _ = feed(
        [c.SendText("hi", 2.0), agent_state("thinking", 2.05), mark("typed_sent", 2.08)], ready()
    )
    assert s.latency.open is not None
    assert s.latency.open.user_ended_at == 2.05
    ignored = s.debug.ignored_inputs
    s, _ = feed([*reply("a1", 2.3)[:2], mark("typed_sent", 2.5)], s)
    assert s.latency.open is not None
    assert s.latency.open.user_ended_at == 2.05
    assert s.debug.ignored_inputs == ignored + 1


# --- spoken turns -----------------------------------------------------------------------------


def test_a_spoken_turn() -> None:
    s, events = feed(
        [
            mark("speech_ended", 5.0),
            *user_said("u1", "What time is it?", 5.4),
            agent_state("thinking", 5.5),
            mark("audio_received", 6.0),
            mark("audio_heard", 6.01, 0.02),
            *reply("a1", 6.0),
        ],
        ready(),
    )
    [w] = latencies(events)
    assert (w.kind, w.user_ended_at, w.user_final_at, w.thinking_at) == ("spoken", 5.0, 5.4, 5.5)
    assert w.heard is not None
    assert abs(w.heard - 1.03) < 1e-9
    assert s.latency.open is None


def test_a_pause_in_speech_moves_the_end_of_the_turn() -> None:
    s, _ = feed(
        [
            mark("speech_ended", 5.0),
            *user_said("u1", "Well,", 5.3),
            mark("speech_ended", 6.0),
        ],
        ready(),
    )
    w = s.latency.open
    assert w is not None
    # "Well," was a line of its own (its final transcript came): the speech after it is
    # the user's second turn, the one a reply would answer (issue 24).
    assert (w.turn, w.user_ended_at, w.user_final_at) == (2, 6.0, None)


def test_the_final_transcript_may_come_before_the_end_of_speech_mark() -> None:
    s, _ = feed([*user_said("u1", "Hi", 5.3), mark("speech_ended", 5.0)], ready())
    w = s.latency.open
    assert w is not None
    assert (w.user_ended_at, w.user_final_at) == (5.0, 5.3)


def test_a_late_end_of_speech_claims_a_reply_that_already_began() -> None:
    s, events = feed(
        [
            *reply("greeting", 1.5),  # the greeting: no user turn
            *user_said("u1", "Hi", 5.3),
            *reply("a1", 5.6)[:2],  # the reply begins before the detector reports
            mark("speech_ended", 5.0),
        ],
        ready(),
    )
    assert [w.incomplete for w in latencies(events)] == ["no user turn"]
    w = s.latency.open
    assert w is not None
    assert (w.kind, w.user_ended_at, w.user_final_at, w.segment_id) == ("spoken", 5.0, 5.3, "a1")


def test_speaking_over_the_reply_before_it_is_heard_is_an_interruption() -> None:
    _s, events = feed(
        [mark("speech_ended", 5.0), *reply("a1", 5.5)[:2], mark("speech_ended", 6.0)], ready()
    )
    assert [w.incomplete for w in latencies(events)] == ["interrupted"]


def test_with_no_audio_output_a_reply_cut_short_says_no_audio() -> None:
    """A client with no output device (``Connected(audio_out=False)``: --no-audio, no
    speaker) hears no reply, so a reply the next typed turn cuts short, or the end of the
    call, is "no audio", not "interrupted" or "ended": nothing here could have heard it."""
    deaf, _ = feed(
        [c.Connected(ME, 1.0, audio_out=False), agent_state("listening", 1.1)],
        c.initial_state(spoken=True),
    )
    cut = [
        c.SendText("one", 2.0),
        mark("typed_sent", 2.0),
        *reply("a1", 2.5)[:2],
        c.SendText("two", 3.0),
        mark("typed_sent", 3.0),
        *reply("a2", 3.5),
        c.Hangup(4.5),
    ]
    _s, events = feed(cut, deaf)
    assert [w.incomplete for w in latencies(events)] == ["no audio", "no audio"]
    # With an output device, the same call says what cut each reply short.
    _s, events = feed(cut, ready())
    assert [w.incomplete for w in latencies(events)] == ["interrupted", "no audio"]


# --- unprompted replies, interrupts, the end --------------------------------------------------


def test_the_greeting_is_a_turn_with_no_user_turn() -> None:
    s, events = feed([*reply("hello", 1.5), *reply("more", 2.5)], ready())
    [w] = latencies(events)
    assert (w.kind, w.incomplete, w.segment_id, w.heard) == (
        "unprompted",
        "no user turn",
        "hello",
        None,
    )
    assert s.latency.open is None  # the second segment is more of the same reply


def test_turns_are_numbered_by_the_user_turn_they_answer() -> None:
    """The greeting is no user turn: the worst turn named in the summary is the user's
    own count ("turn 2" = their second message), the same in the summary's counts."""
    s, _ = feed([*reply("hello", 1.5)], ready(False))
    for n, slow in enumerate((0.3, 0.9, 0.4)):
        at = 10.0 + 10 * n
        s, _ = feed(
            [
                c.SendText(f"q{n}", at),
                mark("audio_received", at + slow),
                mark("audio_heard", at + slow, 0.0),
                *reply(f"a{n}", at + slow),
            ],
            s,
        )
    s, _ = feed([c.Hangup(50.0)], s)
    assert [(w.kind, w.turn) for w in s.latency.turns] == [
        ("unprompted", 0),
        ("typed", 1),
        ("typed", 2),
        ("typed", 3),
    ]
    summary = c.summarize(s.latency.turns)
    assert summary.worst is not None
    assert summary.worst.turn == 2
    assert c.summary_text(summary).endswith("(your turn 2); 3 replies")


def test_an_interrupt_closes_the_turn_and_is_measured() -> None:
    s, events = feed(
        [
            c.SendText("tell me a story", 2.0),
            mark("audio_received", 2.5),
            *reply("a1", 2.5)[:2],
            c.Interrupt(3.0),
            mark("interrupt_flushed", 3.04),
        ],
        ready(),
    )
    assert [w.incomplete for w in latencies(events)] == ["interrupted"]
    pending = s.latency.open_interrupt
    assert pending is not None
    assert pending.flushed_at == 3.04
    assert s.latency.interrupts == ()
    s, events = feed([mark("interrupt_wire_stopped", 3.2)], s)
    [closed] = [e.interrupt for e in events if isinstance(e, c.InterruptLatency)]
    assert closed.local_flush is not None
    assert abs(closed.local_flush - 0.04) < 1e-9
    assert closed.wire_stop is not None
    assert abs(closed.wire_stop - 0.2) < 1e-9
    assert s.latency.interrupts == (closed,)
    assert s.latency.open_interrupt is None


def test_an_interrupt_after_the_reply_was_heard_keeps_its_figure() -> None:
    _s, events = feed(
        [
            c.SendText("hi", 2.0),
            mark("audio_received", 2.5),
            mark("audio_heard", 2.51, 0.01),
            *reply("a1", 2.5)[:2],
            c.Interrupt(3.0),
        ],
        ready(),
    )
    [w] = latencies(events)
    assert w.incomplete is None
    assert w.heard is not None
    assert abs(w.heard - 0.52) < 1e-9


def test_the_end_of_the_call_closes_what_is_open() -> None:
    s, events = feed(
        [
            agent_state("speaking", 1.4),
            c.Interrupt(1.5),
            c.SendText("hi", 2.0),
            agent_state("thinking", 2.1),
            c.Hangup(2.5),
        ],
        ready(),
    )
    assert [w.incomplete for w in latencies(events)] == ["ended"]
    assert len([e for e in events if isinstance(e, c.InterruptLatency)]) == 1
    assert s.latency.open is None
    assert s.latency.open_interrupt is None
    kinds = [e.kind for e in events]
    assert kinds.index("turn_latency") < kinds.index("ended")


def test_an_interrupt_before_the_reply_leaves_the_turn_open() -> None:
    s, events = feed(
        [
            c.SendText("hi", 2.0),
            agent_state("thinking", 2.1),
            c.Interrupt(2.2),
            agent_state("listening", 2.3),
        ],
        ready(),
    )
    assert latencies(events) == []
    assert s.latency.open_interrupt is None  # nothing was speaking: nothing to time
    s, events = feed([c.SendText("again", 3.0), *reply("a1", 3.2)], s)
    [w] = latencies(events)
    # The reply answers the last user turn before it, the second (issue 24).
    assert (w.turn, w.user_ended_at, w.incomplete) == (2, 3.0, "no audio")


def test_marks_that_fit_nowhere_are_ignored() -> None:
    s = ready()
    before = s.debug.ignored_inputs
    s, events = feed(
        [
            mark("audio_heard", 2.0, 0.01),  # no turn open
            mark("interrupt_flushed", 2.0),  # no interrupt
            mark("rtt", 2.0, -1.0),  # not a round trip
            mark("rtt", 2.0, float("nan")),
            mark("speech_ended", float("inf")),
        ],
        s,
    )
    assert s.debug.ignored_inputs == before + 5
    assert s.latency == ready().latency
    assert events == []


def test_turns_are_numbered_and_bounded() -> None:
    s = ready(False)
    for n in range(c.MAX_TURNS + 5):
        s, _ = feed([c.SendText(f"q{n}", 10.0 + n), *reply(f"a{n}", 10.2 + n)], s)
    assert len(s.latency.turns) == c.MAX_TURNS
    assert s.latency.earlier_turns == 5
    assert s.latency.turns[-1].turn == c.MAX_TURNS + 5
    assert [w.turn for w in s.latency.turns] == list(range(6, c.MAX_TURNS + 6))


# --- any order of marks -----------------------------------------------------------------------

MARKS = st.builds(
    c.LatencyMark,
    kind=st.sampled_from(c.MARK_KINDS),
    at=st.just(0.0),
    value=st.none() | st.floats(min_value=-0.1, max_value=0.5),
)
SEGS = st.sampled_from(["a1", "a2", "u1"])
OTHERS: st.SearchStrategy[c.Input] = st.one_of(
    st.builds(c.SendText, st.sampled_from(["hi", "more"]), st.just(0.0), st.none() | st.booleans()),
    st.builds(
        lambda v: agent_state(v, 0.0), st.sampled_from(["thinking", "speaking", "listening"])
    ),
    st.builds(
        lambda s: c.TranscriptStreamOpened(f"s-{s}", s, ME if s == "u1" else AGENT, s == "u1", 0.0),
        SEGS,
    ),
    st.builds(lambda s: c.TranscriptStreamChunk(f"s-{s}", s, "word ", 0.0), SEGS),
    st.builds(lambda s: c.TranscriptStreamClosed(f"s-{s}", s, 0.0, s == "u1"), SEGS),
    st.just(c.Interrupt(0.0)),
    st.builds(c.SetSpoken, st.booleans(), st.just(0.0)),
)
STEP_INPUTS = st.sampled_from(range(60)).flatmap(
    lambda i: st.just(c.Hangup(0.0)) if i == 0 else MARKS if i % 2 else OTHERS
)


@st.composite
def mark_scripts(draw: st.DrawFn) -> list[c.Input]:
    steps = draw(
        st.lists(st.tuples(st.sampled_from([0.0, 0.01, 0.1, 0.5, -0.05]), STEP_INPUTS), max_size=80)
    )
    at = 2.0
    out: list[c.Input] = []
    for dt, inp in steps:
        at += dt
        # A mark may be stamped earlier than when it is fed (the detector's hangover, a
        # frame handed over from an audio thread).
        lag = draw(st.sampled_from([0.0, 0.0, 0.02, 0.3])) if isinstance(inp, c.LatencyMark) else 0
        out.append(dataclasses.replace(inp, at=at - lag))
    return out


def _check_waterfall(w: c.Waterfall) -> None:
    for seen in (
        w.user_final_at,
        w.thinking_at,
        w.first_text_at,
        w.audio_received_at,
        w.audio_handed_at,
    ):
        assert seen is None or seen >= w.user_ended_at
    if w.audio_received_at is not None and w.audio_handed_at is not None:
        assert w.audio_handed_at >= w.audio_received_at
        assert w.client_share is not None
        assert w.client_share >= 0
    if w.output_latency is not None:
        assert w.output_latency >= 0
    if w.heard is not None:
        assert w.heard >= 0
        if w.audio_received_at is not None:
            assert w.heard >= w.audio_received_at - w.user_ended_at
        if w.first_text is not None:
            assert w.first_text >= 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mark_scripts(), st.booleans())
@example(  # a user's final transcript, then the agent's audio with no end of speech seen
    [
        c.TranscriptStreamOpened(
            stream_id="s-u1", segment_id="u1", identity="user-1", final=True, at=2.0
        ),
        c.TranscriptStreamChunk(stream_id="s-u1", segment_id="u1", text="word ", at=2.0),
        c.LatencyMark(kind="audio_received", at=2.01),
    ],
    False,
)
@example(  # an end of speech again, for the turn an interrupt closed: no second waterfall
    [
        c.LatencyMark("speech_ended", 2.0),
        c.LatencyMark("audio_received", 2.0),
        c.Interrupt(2.0),
        c.LatencyMark("speech_ended", 2.0),
    ],
    False,
)
def test_any_order_of_marks_keeps_the_waterfall_sound(script: list[c.Input], spoken: bool) -> None:
    s = ready(spoken)
    closed: list[c.Waterfall] = []
    for inp in script:
        before = s
        s, _ = c.reduce(s, inp)
        lat, was = s.latency, before.latency
        # Closed turns are never reopened nor changed: the old tuple is a prefix of the new.
        assert len(lat.turns) >= len(was.turns)
        assert all(a is b for a, b in zip(was.turns, lat.turns, strict=False))
        new = [e.waterfall for e in c.changes(before, s) if isinstance(e, c.TurnLatency)]
        assert tuple(new) == lat.turns[len(was.turns) :]
        closed += new
        for w in new:
            _check_waterfall(w)
            # A closed turn has a heard figure or says why not, never both.
            assert (w.heard is None) == (w.incomplete is not None)
        if lat.open is not None:
            _check_waterfall(lat.open)
            assert lat.open.incomplete is None
            # Numbered by the user turn it answers (issue 24): at most the last one ended.
            assert lat.user_turns <= lat.open.turn <= s._internal.user_turn
            if lat.open.kind != "unprompted":
                assert lat.open.turn > lat.user_turns
        if s.ended:
            assert lat.open is None
            assert lat.open_interrupt is None
        for i in (*lat.interrupts, *([lat.open_interrupt] if lat.open_interrupt else [])):
            assert i.local_flush is None or i.local_flush >= 0
            assert i.wire_stop is None or i.wire_stop >= 0
    # Numbered by the user turn answered (issue 24): increasing over the answered turns
    # (two user turns before one reply are numbered by the last); an unprompted one
    # carries the number of the user turn before it (0 before any).
    numbers = [w.turn for w in closed]
    assert numbers == sorted(numbers)
    answered = [w.turn for w in closed if w.kind != "unprompted"]
    assert answered == sorted(set(answered))
    assert all(1 <= n <= s._internal.user_turn for n in answered)
