"""Which lines make a complete reply (:mod:`fishtalk.engine.replies`), on built states:
several lines joined, a tool call the agent has not spoken about, an open line."""

from __future__ import annotations

from dataclasses import replace

from fishtalk.core import conversation as conv
from fishtalk.engine.replies import complete_reply


def _line(seq: int, text: str, answers: int | None, *, final: bool = True) -> conv.Segment:
    return conv.Segment(
        seq=seq,
        segment_id=f"SG_{seq}",
        role="agent",
        identity="agent",
        text=text,
        final=final,
        open=not final,
        answers_turn=answers,
        started_at=float(seq),
        updated_at=float(seq) + 0.5,
    )


def _user(seq: int, turn: int) -> conv.Segment:
    return conv.Segment(
        seq=seq, segment_id=f"typed-{turn}", role="user", identity=None, text="hi",
        final=True, typed=True, turn=turn,
    )  # fmt: skip


def _state(*items: conv.Segment | conv.ToolCard, agent: str = "listening") -> conv.State:
    state = replace(conv.initial_state(), agent_state=agent)
    for item in items:
        if isinstance(item, conv.Segment):
            state = replace(state, segment_log=state.segment_log.put(item)[0])
        else:
            state = replace(state, tool_log=state.tool_log.put(item)[0])
    return state


def _card(seq: int, status: conv.ToolStatus) -> conv.ToolCard:
    return conv.ToolCard(seq=seq, call_id=f"call-{seq}", tool_name="lookup", source="webhook",
                         status=status)  # fmt: skip


def test_the_lines_answering_a_turn_come_joined_around_a_finished_tool_call() -> None:
    state = _state(
        _line(0, "Hello!", None),
        _user(1, 1),
        _line(2, "Let me look that up.", 1),
        _card(3, "completed"),
        _line(4, "Found it: forty-two.", 1),
    )
    reply = complete_reply(state, 1)
    assert reply is not None
    assert reply.text == "Let me look that up. Found it: forty-two."
    assert reply.segment_id == "SG_2"
    assert reply.updated_at == 4.5
    assert complete_reply(state, 0) == state.transcript[0]  # the opening alone


def test_a_reply_is_not_complete_while_the_agent_owes_words_about_a_tool() -> None:
    asked = (_user(1, 1), _line(2, "Let me look that up.", 1))
    assert complete_reply(_state(*asked, _card(3, "running")), 1) is None
    assert complete_reply(_state(*asked, _card(3, "completed")), 1) is None


def test_a_reply_is_not_complete_while_a_line_is_open_or_the_agent_busy() -> None:
    assert complete_reply(_state(_user(1, 1), _line(2, "Let me", 1, final=False)), 1) is None
    assert complete_reply(_state(_user(1, 1), _line(2, "Done.", 1), agent="speaking"), 1) is None
    assert complete_reply(_state(_user(1, 1), _line(2, "Done.", 1)), 2) is None  # a later turn
    assert complete_reply(_state(_line(0, "Hello!", None)), 1) is None  # never the greeting
