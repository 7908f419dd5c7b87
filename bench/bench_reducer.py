"""How many inputs per second the conversation reducer handles.

A scripted, realistic input mix (connect, agent join and state changes, user interim and
final transcripts, streamed agent replies chunk by chunk, tool events, typed turns) is fed
to ``fishtalk.conversation.reduce``. State is immutable and the transcript is a tuple, so
cost grows with the conversation: the rate is measured at several conversation lengths.
Prints one markdown section.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator

from fishtalk import conversation as conv
from fishtalk import protocol as p

REPLY_WORDS = ("It", "is", "sunny", "and", "warm", "with", "a", "light", "breeze", "today.")
USER = "user-bench"
AGENT = "agent"


def _opening(at: float) -> list[conv.Input]:
    return [
        conv.Connected(local_identity=USER, at=at),
        conv.ParticipantJoined(identity=AGENT, at=at, attributes={p.ATTR_AGENT_STATE: "idle"}),
    ]


def _turn(n: int, at: float) -> Iterator[conv.Input]:
    """One exchange: about 30 inputs, like a spoken turn with a tool call and a reply."""
    user_seg = f"u-{n}"
    for i, text in enumerate(("what", "what is the", "what is the weather")):
        sid = f"us-{n}-{i}"
        yield conv.TranscriptStreamOpened(sid, user_seg, USER, final=False, at=at)
        yield conv.TranscriptStreamChunk(sid, user_seg, text, at=at)
        yield conv.TranscriptStreamClosed(sid, user_seg, at=at)
    sid = f"us-{n}-f"
    yield conv.TranscriptStreamOpened(sid, user_seg, USER, final=True, at=at)
    yield conv.TranscriptStreamChunk(sid, user_seg, "What is the weather today?", at=at)
    yield conv.TranscriptStreamClosed(sid, user_seg, at=at, final=True)
    yield conv.AttributesChanged(AGENT, {p.ATTR_AGENT_STATE: "thinking"}, at=at)
    call = f"call-{n}"
    yield conv.AgentEventReceived(
        p.ToolStarted(call_id=call, tool_name="weather", tool_source="webhook", input="{}"), at=at
    )
    yield conv.AgentEventReceived(
        p.ToolCompleted(call_id=call, tool_name="weather", tool_source="webhook", output="{}"),
        at=at,
    )
    yield conv.AttributesChanged(AGENT, {p.ATTR_AGENT_STATE: "speaking"}, at=at)
    agent_seg = f"a-{n}"
    sid = f"as-{n}"
    yield conv.TranscriptStreamOpened(sid, agent_seg, AGENT, final=False, at=at)
    for word in REPLY_WORDS:
        yield conv.TranscriptStreamChunk(sid, agent_seg, word + " ", at=at)
    yield conv.TranscriptStreamClosed(sid, agent_seg, at=at)
    yield conv.AttributesChanged(AGENT, {p.ATTR_AGENT_STATE: "listening"}, at=at)
    yield conv.SendText(f"thanks {n}", at=at)
    yield conv.SignalActivity(at=at)


def _rate(turns_before: int, turns_measured: int) -> tuple[float, int]:
    """Inputs per second while adding ``turns_measured`` turns after ``turns_before``."""
    state = conv.initial_state()
    at = 1.0
    for inp in _opening(at):
        state, _ = conv.reduce(state, inp)
    for n in range(turns_before):
        for inp in _turn(n, at):
            state, _ = conv.reduce(state, inp)
    inputs = [
        inp for n in range(turns_before, turns_before + turns_measured) for inp in _turn(n, at)
    ]
    started = time.perf_counter()
    for inp in inputs:
        state, _ = conv.reduce(state, inp)
    elapsed = time.perf_counter() - started
    return len(inputs) / elapsed, len(state.transcript)


def main() -> None:
    """Measure and print the markdown section."""
    rows = []
    for before in (0, 100, 400):
        rates = []
        segments = 0
        for _ in range(3):
            rate, segments = _rate(before, 50)
            rates.append(rate)
        rows.append((before, segments, statistics.median(rates)))
    per_turn = len(list(_turn(0, 1.0)))
    print("## reducer")
    print()
    print(
        f"`fishtalk.conversation.reduce` fed a realistic turn ({per_turn} inputs: interim and "
        "final user transcripts, tool events, a reply streamed word by word, a typed turn), 50 "
        "turns per run, median of 3 runs. State is immutable, so the rate depends on how "
        "long the conversation already is."
    )
    print()
    print("| turns already in the conversation | transcript segments at the end | inputs/s |")
    print("|---:|---:|---:|")
    for before, segments, rate in rows:
        print(f"| {before} | {segments} | {rate:,.0f} |")
    print()
    print(
        "For scale: a fast agent reply streams ~10 chunks/s and the UI needs ~30 updates/s, "
        "so even the slowest row leaves the reducer idle almost all the time."
    )


if __name__ == "__main__":
    main()
