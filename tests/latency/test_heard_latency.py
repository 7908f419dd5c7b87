"""Heard latency end to end: the real session against the sim agent, with injected delays.

The sim agent's timings are set per scenario (``think_seconds``,
``first_audio_delay_seconds``; see :mod:`fishtalk.sim.fish.scenario`), so what the agent
adds to a turn is known. The session measures each turn on its own clock
(:class:`fishtalk.core.conversation.Waterfall` in ``state.latency``); every figure it reports
must be at least what was injected, because nothing can come sooner than the agent sends
it. That lower bound is the only timing asserted here: what lies above it (the sim's
relay, Opus, the jitter buffer, a 2-core host running other tests) has no bound a test
may rely on, and bench/bench_latency.py measures what the figures really are.

What an upper bound used to guard against, a figure taken from the wrong line or the
wrong mark, is checked by identity instead (:func:`_the_reply`): the line a turn was
measured on is the agent line that answers that turn, and its first-text mark falls
within that line's life. Which frame and which mark the rules pick is the pure tests'
business (tests/conversation/test_latency_reduce.py, including a property test over any
order of marks).

Spoken turns go through the virtual PulseAudio chain: a tone played into the virtual
mic, the session's detector ends the turn at the end of that tone, and the sim agent
answers once its own endpointing (``SIM_ENDPOINTING``: 0.8 s of quiet after the sound
it received) has run, then thinks. Both are injected on the agent's side.

Run: ``.venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/latency -q``
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from support.virtual_audio import MIC, SPEAKER, VirtualAudio

from fishtalk.cli.config import load_settings
from fishtalk.cli.launch import build_session
from fishtalk.core import conversation as conv
from fishtalk.core.conversation import Segment, State, Waterfall
from fishtalk.engine import observe
from fishtalk.engine.paths import CONFIG_PATH_ENV
from fishtalk.engine.session import Session
from fishtalk.sim.fish.scenario import Scenario, parse_scenario
from fishtalk.sim.fish.voice import SpeechDetector, ToneVoice, silence, tone
from fishtalk.sim.runner import SimHandle, run_sim

pytestmark = [pytest.mark.webrtc, pytest.mark.audio, pytest.mark.timeout(120)]

SIM_ENDPOINTING = SpeechDetector().hangover
"""Quiet the sim agent waits for after the user's sound before it takes the turn."""
WAIT = 30.0


def _scenario(name: str, *, think: float, first_audio_delay: float = 0.0) -> Scenario:
    return parse_scenario(
        f"""
        [agent]
        greeting = ""
        idle_seconds = 0
        voice = "tones"
        think_seconds = {think}
        first_audio_delay_seconds = {first_audio_delay}
        """,
        name=name,
    )


THINK = 0.6
FIRST_AUDIO_DELAY = 0.4
STRAIGHT_ON = parse_scenario(
    """
    then = "listen"
    [agent]
    greeting = ""
    idle_seconds = 0
    voice = "tones"
    answer_during_steps = true
    [[steps]]
    do = "say"
    text = "This first step is a long line, with many words in it, so a typed turn lands in it."
    [[steps]]
    do = "say"
    text = "And the second step follows straight on."
    """,
    name="straight_on",
)
"""The agent answers a turn typed while it speaks as soon as that line ends, then goes on
with the next line: its audio never pauses for long and its state barely leaves speaking."""
SCENARIOS = {
    "typed": _scenario("typed", think=THINK, first_audio_delay=FIRST_AUDIO_DELAY),
    "spoken": _scenario("spoken", think=THINK),
    "straight_on": STRAIGHT_ON,
}


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    async with run_sim(scenarios=SCENARIOS, voice=ToneVoice()) as handle:
        yield handle
        for session_id, agent in handle.agents.items():
            print(f"agent journal for {session_id}:", *agent.journal, sep="\n  ")  # on failure


@dataclass
class Call:
    session: Session
    run: asyncio.Task[Any]


@pytest.fixture
async def calls() -> AsyncIterator[list[Call]]:
    """Sessions started by a test; hung up and awaited afterwards."""
    started: list[Call] = []
    yield started
    for call in started:
        if not call.run.done():
            call.session.hangup()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(call.run), 15)
        if not call.run.done():
            call.run.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await call.run
        print("latency:", call.session.state.latency)  # shown when the test failed


async def _until(session: Session, what: str, predicate: Callable[[State], Any]) -> State:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not predicate(session.state):
        if loop.time() > deadline:
            pytest.fail(f"timed out waiting for {what}; latency: {session.state.latency}")
        await asyncio.sleep(0.02)
    return session.state


async def _connect(
    sim: SimHandle,
    calls: list[Call],
    agent_id: str,
    *,
    text_only: bool = False,
    listening: bool = True,
) -> Session:
    """A call to ``agent_id``, returned once the agent is ready (and, with ``listening``,
    listens: done with whatever it says first) and the publishing side is open."""
    overrides: dict[str, Any] = {
        "api.url": sim.api_url,
        "api.api_key": sim.dev_key,
        "session.agent_id": agent_id,
        "session.text_only": text_only,
    }
    if not text_only:
        overrides["audio.input_device"] = MIC
        overrides["audio.output_device"] = SPEAKER
    no_file = {CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"}
    settings = load_settings(env=no_file, overrides=overrides)
    session = build_session(settings)
    calls.append(Call(session, asyncio.create_task(session.run())))
    await _until(
        session,
        "the agent to be ready",
        lambda s: (
            s.status == "connected"
            and s.agent_ready
            and (s.agent_state == "listening" or not listening)
        ),
    )
    await _publishing(session)
    return session


async def _publishing(session: Session) -> None:
    """Open the session's publishing side before a turn is timed.

    A client's first data packet waits for the publisher connection to be negotiated
    (0.3-0.6 s, seconds under load); a call with a microphone has done that already, a
    text-only one has not. Users do wait for it, but it is not what these tests inject.
    """
    sent = asyncio.Event()

    def watch(item: object) -> None:
        if isinstance(item, observe.PacketOut):
            sent.set()

    remove = session.add_observer(watch)
    try:
        session.activity()
        await asyncio.wait_for(sent.wait(), WAIT)
    finally:
        remove()


QUIET_FOR = 0.3
"""Seconds of silence at the speaker after which an agent reply counts as over."""


async def _settled(session: Session) -> None:
    """Wait until the agent listens again and its last sound has left the speaker.

    The agent says ``listening`` once it has fed its last frame; that audio is still in
    flight for a few hundred ms. A turn sent before it arrived would be measured from its
    publish to a reply that can only start once the old one is heard out: right, but not
    the injected delays alone.
    """
    await _until(session, "the agent to listen", lambda s: s.agent_state == "listening")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    quiet_since: float | None = None
    while True:
        now = loop.time()
        if session.audio_levels().agent_peak > 1e-3:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= QUIET_FOR:
            return
        if now > deadline:
            pytest.fail("the agent's audio never went quiet")
        await asyncio.sleep(0.02)


async def _closed_turn(session: Session, number: int) -> Waterfall:
    """The ``number``-th (1-based) closed turn of the call."""
    state = await _until(
        session, f"turn {number} to close", lambda s: len(s.latency.turns) >= number
    )
    return state.latency.turns[number - 1]


def _the_reply(session: Session, w: Waterfall) -> Segment:
    """The agent line turn ``w`` was measured on: it answers that turn (not the greeting,
    not a neighbour), and the turn's first-text mark falls within the line's life."""
    line = next(s for s in session.state.transcript if s.segment_id == w.segment_id)
    assert line.role == "agent", (line, w)
    assert line.answers_turn == w.turn, (line, w)
    assert w.first_text_at is not None
    assert line.started_at <= w.first_text_at <= line.updated_at, (line, w)
    return line


def _check_order(w: Waterfall) -> None:
    """Every mark of a measured turn comes after the one it follows from."""
    assert w.thinking_at is not None
    assert w.first_text_at is not None
    assert w.audio_received_at is not None
    assert w.audio_handed_at is not None
    assert w.output_latency is not None
    assert w.output_latency >= 0
    assert w.user_ended_at <= w.thinking_at <= w.first_text_at
    assert w.audio_received_at <= w.audio_handed_at
    client_share = w.client_share
    assert client_share is not None
    assert client_share >= 0


async def test_typed_turns_measure_at_least_the_injected_delays(
    vaudio: VirtualAudio, sim: SimHandle, calls: list[Call]
) -> None:
    """Typed turns: the agent thinks THINK s, writes its first word, and speaks
    FIRST_AUDIO_DELAY s later. First text >= THINK, first audio received >= the delay
    after the first text, heard >= both together, each measured on the line that answers
    its turn. A last turn asks for a text-only reply: it says so instead of a heard
    figure."""
    session = await _connect(sim, calls, "typed")
    injected = THINK + FIRST_AUDIO_DELAY
    heards: list[float] = []
    for number, text in enumerate(["first question", "second question", "third one"], 1):
        session.send_text(text)
        w = await _closed_turn(session, number)
        assert w.turn == number
        assert w.kind == "typed"
        assert w.incomplete is None, w
        _check_order(w)
        assert w.segment_id is not None
        first_text, heard = w.first_text, w.heard
        assert first_text is not None
        assert heard is not None
        assert first_text >= THINK, w
        _the_reply(session, w)
        assert w.first_text_at is not None
        assert w.thinking_at is not None
        # Each arrival is measured from the turn's own publish (user_ended_at for a typed
        # turn), never from another arrival: two arrivals' delays differ without bound.
        assert w.user_ended_at <= w.thinking_at, w
        assert w.audio_received_at is not None
        received = w.audio_received_at - w.user_ended_at
        assert injected <= received, w
        assert injected <= heard, w
        heards.append(heard)
        # The reply is over (and heard to its end) before the next turn is sent.
        await _settled(session)
    # What the agent scheduled between ``thinking`` and its first word: its journal.
    assert any(f"thinking for {THINK:g} s" in a.journal for a in sim.agents.values())
    # A reply asked to be text-only, in the same spoken call: no number, the reason.
    session.send_text("just write it", audio=False)
    w = await _closed_turn(session, 4)
    assert w.heard is None
    assert w.incomplete == "text-only"
    assert w.first_text is not None
    assert w.first_text >= THINK
    _the_reply(session, w)
    summary = conv.summarize(session.state.latency.turns)
    assert summary.turns == 4
    assert summary.measured == 3
    assert summary.p50 == pytest.approx(sorted(heards)[1])  # the median of the three


async def test_spoken_turn_measures_at_least_the_injected_delays(
    vaudio: VirtualAudio, sim: SimHandle, calls: list[Call]
) -> None:
    """A spoken turn: a tone into the virtual mic. The turn ends at the end of the tone
    (the session's detector); the user's final transcript comes no sooner than the sim's
    endpointing after it, and the agent is heard no sooner than endpointing + THINK."""
    session = await _connect(sim, calls, "spoken")
    speech = np.concatenate([tone(440.0, 0.8, amplitude=0.3), silence(0.2)])
    feeder = vaudio.feed_mic(speech.tobytes())
    try:
        w = await _closed_turn(session, 1)
    finally:
        await asyncio.to_thread(feeder.wait, 10)
    assert w.turn == 1
    assert w.kind == "spoken"
    assert w.incomplete is None, w
    _check_order(w)
    assert w.user_final_at is not None
    assert w.user_final_at - w.user_ended_at >= SIM_ENDPOINTING
    first_text, heard = w.first_text, w.heard
    assert first_text is not None
    assert heard is not None
    assert first_text >= SIM_ENDPOINTING + THINK, w
    assert heard >= SIM_ENDPOINTING + THINK, w
    # The agent said what it heard: the turn measured is the reply to the tone.
    assert "hertz" in _the_reply(session, w).text


async def test_a_reply_straight_after_the_agents_own_speech_is_measured(
    vaudio: VirtualAudio, sim: SimHandle, calls: list[Call]
) -> None:
    """A turn typed while the agent speaks, answered with no pause after that line: the
    earlier line's audio is not the answer, and the answer's audio (it has some) is found
    after the answer's words arrive, so the turn gets a heard figure, not "no audio"."""
    session = await _connect(sim, calls, "straight_on", listening=False)
    await _until(
        session,
        "the first line to play",
        lambda s: (
            s.agent_state == "speaking"
            and any(seg.role == "agent" and "first step" in seg.text for seg in s.transcript)
        ),
    )
    session.send_text("a question while you talk")
    state = await _until(
        session,
        "the typed turn to close",
        lambda s: any(t.kind == "typed" for t in s.latency.turns),
    )
    # The first line (the agent spoke first) is a turn of its own, answering no one.
    assert [t.kind for t in state.latency.turns][:1] == ["unprompted"]
    w = next(t for t in state.latency.turns if t.kind == "typed")
    assert w.turn == 1
    assert w.incomplete is None, w
    reply = _the_reply(session, w)
    assert reply.text.startswith("You said: a question while you talk"), reply
    _check_order(w)
    assert w.first_text_at is not None
    assert w.audio_received_at is not None
    # Found after the answer's words came (the earlier line's audio is not the answer).
    assert w.first_text_at <= w.audio_received_at, w
    heard = w.heard
    assert heard is not None
    assert heard >= w.first_text_at - w.user_ended_at


async def test_text_only_turn_says_so_instead_of_a_number(
    sim: SimHandle, calls: list[Call]
) -> None:
    """A text-only call has no audio path: its turns carry the reason, not a heard
    figure; the time to first text is still measured (and still at least THINK)."""
    session = await _connect(sim, calls, "typed", text_only=True)
    session.send_text("no sound please")
    w = await _closed_turn(session, 1)
    assert w.kind == "typed"
    assert w.heard is None
    assert w.incomplete == "text-only"
    assert conv.badge(w) == "text-only"
    assert "text-only" in conv.note(w)
    first_text = w.first_text
    assert first_text is not None
    assert first_text >= THINK
    _the_reply(session, w)
    summary = conv.summarize(session.state.latency.turns)
    assert summary.measured == 0
    assert summary.p50 is None
