"""The TUI on the real Session against the simulated agent (real livekit SDK, real sim).

Run inside the network namespace:
``.venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/tui -q``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from textual import events
from textual.pilot import Pilot

from fishtalk.cli.config import load_settings
from fishtalk.cli.exits import exit_code_of
from fishtalk.cli.launch import build_session
from fishtalk.core.conversation import State
from fishtalk.engine.paths import CONFIG_PATH_ENV
from fishtalk.engine.session import Session
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle, run_sim
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.screens.ended import EndedScreen
from fishtalk.tui.widgets.status import AgentIndicator, ConnectionStatus
from fishtalk.tui.widgets.tools import ToolPanel
from fishtalk.tui.widgets.transcript import Transcript

from .helpers import Recorder

pytestmark = pytest.mark.webrtc

WAIT = 30.0

_TOUR = parse_scenario(
    """
    then = "converse"
    [agent]
    greeting = "Hello from the sim."
    voice = "tones"
    idle_seconds = 0
    [[steps]]
    do = "tool"
    name = "lookup_weather"
    input = { city = "Lisbon" }
    output = { forecast = "sunny" }
    duration = 0.3
    [[steps]]
    do = "tool"
    name = "search_docs"
    source = "mcp"
    pad_input_bytes = 5000
    error = "upstream timed out"
    duration = 0.2
    [[steps]]
    do = "client_tool"
    name = "no_such_tool"
    announce = false
    [[steps]]
    do = "user_transcript"
    interim = ["what", "what is the"]
    final = "What is the weather?"
    interval = 0.3
    """,
    name="tour",
)

_LONG = " ".join(["This sentence goes on and on so that there is time to interrupt it."] * 6)
_CUT = parse_scenario(
    f"""
    then = "end"
    [agent]
    greeting = ""
    voice = "tones"
    idle_seconds = 0
    [[steps]]
    do = "say"
    text = "{_LONG}"
    [[steps]]
    do = "reconnect"
    [[steps]]
    do = "sleep"
    seconds = 2.0
    [[steps]]
    do = "say"
    text = "Back again. Goodbye."
    audio = false
    """,
    name="cut",
)


_ECHO = parse_scenario(
    """
    then = "converse"
    [agent]
    greeting = ""
    voice = "tones"
    idle_seconds = 0
    """,
    name="echo",
)


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    async with run_sim(scenarios={"tour": _TOUR, "cut": _CUT, "echo": _ECHO}) as handle:
        yield handle


def session_for(sim: SimHandle, agent: str) -> Session:
    settings = load_settings(
        env={CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"},
        overrides={
            "api.url": sim.api_url,
            "api.api_key": sim.dev_key,
            "session.agent_id": agent,
            "session.text_only": True,
        },
    )
    return build_session(settings)


async def until(pilot: Pilot[int], what: str, predicate: Callable[[], bool]) -> None:
    """Wait (bounded) for ``predicate``; fail naming ``what`` and the transcript."""
    for _ in range(int(WAIT / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    app = pilot.app
    assert isinstance(app, FishtalkApp)
    raise AssertionError(f"timed out waiting for {what}: {app.query_one(Transcript).plain_items()}")


def app_for(session: Session) -> FishtalkApp:
    return FishtalkApp(session, title="sim", ended_linger=None)


async def test_conversation_tools_typed_turn_and_hangup(sim: SimHandle) -> None:
    session = session_for(sim, "tour")
    seen: list[State] = []  # every snapshot (the app may coalesce some away)
    session.add_listener(lambda state, _events: seen.append(state))
    app = app_for(session)
    recorder = Recorder()
    async with app.run_test(size=(100, 30), message_hook=recorder) as pilot:
        transcript = app.query_one(Transcript)
        tools = app.query_one(ToolPanel)
        await until(
            pilot,
            "the greeting",
            lambda: "agent ▸ Hello from the sim." in transcript.plain_items(),
        )
        assert app.query_one(ConnectionStatus).has_class("-connected")
        await until(pilot, "three tool cards", lambda: len(tools.card_views) == 3)
        await until(
            pilot,
            "the tools to settle",
            lambda: (
                [v.card.display_status for v in tools.card_views]
                == ["completed", "failed", "unknown"]
            ),
        )
        failed = tools.view(session.state.tools[1].call_id)
        assert failed is not None
        assert "[truncated]" in str(failed.render())
        assert "upstream timed out" in str(failed.render())
        await until(
            pilot,
            "the final user transcript",
            lambda: "you ▸ What is the weather?" in transcript.plain_items(),
        )
        # The same segment was interim (styled, then replaced) before it was final.
        user_texts = [
            (seg.text, seg.final)
            for state in seen
            for seg in state.transcript
            if seg.role == "user" and not seg.typed
        ]
        assert ("what is the", False) in user_texts
        assert len({seg.segment_id for seg in session.state.transcript if seg.role == "user"}) == 1
        # A typed turn shows at once and gets an answer.
        await pilot.press(*"hello sim", "enter")
        await until(
            pilot,
            "the typed turn",
            lambda: any("you ⌨ hello sim" in t for t in transcript.plain_items()),
        )
        await until(
            pilot,
            "the reply",
            lambda: any(
                t.startswith("agent ▸ You said: hello sim") for t in transcript.plain_items()
            ),
        )
        await pilot.press("ctrl+x")
        await until(pilot, "the ended screen", lambda: isinstance(app.screen, EndedScreen))
        screen = app.screen
        assert isinstance(screen, EndedScreen)
        assert screen.summary.reason == "user_hangup"
        assert screen.summary.tools == 3
        await pilot.press("q")
        await pilot.pause()
    assert exit_code_of(app.outcome) == 0
    assert [m.reason for m in recorder.finished()] == ["user_hangup"]
    assert session.state.status == "ended"
    (agent,) = sim.agents.values()
    assert "received user.message" in agent.journal
    assert "received user.hangup" in agent.journal


async def test_interrupt_reconnect_and_agent_hangup(sim: SimHandle) -> None:
    session = session_for(sim, "cut")
    seen: list[State] = []
    session.add_listener(lambda state, _events: seen.append(state))
    app = app_for(session)
    recorder = Recorder()
    async with app.run_test(size=(80, 24), message_hook=recorder) as pilot:
        transcript = app.query_one(Transcript)
        await until(
            pilot,
            "the agent to start speaking",
            lambda: any(
                seg.role == "agent" and seg.open and len(seg.text) > 10
                for seg in session.state.transcript
            ),
        )
        assert app.query_one(AgentIndicator).has_class("-state-speaking")
        await pilot.press("escape")
        await until(
            pilot,
            "the interrupted mark",
            lambda: any("⏹ interrupted" in t for t in transcript.plain_items()),
        )
        cut = session.state.transcript[0]
        assert cut.interrupted
        assert len(cut.text) < len(_LONG)
        await until(
            pilot,
            "the reconnect",
            lambda: any(s.status == "reconnecting" for s in seen),
        )
        await until(
            pilot,
            "the last line",
            lambda: "agent ▸ Back again. Goodbye." in transcript.plain_items(),
        )
        await until(pilot, "the ended screen", lambda: isinstance(app.screen, EndedScreen))
        screen = app.screen
        assert isinstance(screen, EndedScreen)
        assert screen.summary.reason == "agent_hangup"
        assert screen.summary.reason_text == "The agent ended the call."
        await pilot.press("enter")
        await pilot.pause()
    assert exit_code_of(app.outcome) == 0
    (agent,) = sim.agents.values()
    assert "received user.interrupt" in agent.journal
    statuses = [s.status for s in seen]
    assert "reconnecting" in statuses
    assert statuses[statuses.index("reconnecting") :].count("connected") >= 1


async def test_lines_typed_at_full_speed_reach_the_agent_once_each_in_order(
    sim: SimHandle,
) -> None:
    session = session_for(sim, "echo")
    app = app_for(session)
    lines = [f"line {n} yes" for n in range(15)]
    paste = "a pasted\nmulti-line\nmessage"
    async with app.run_test(size=(100, 30)) as pilot:
        await until(
            pilot,
            "the agent",
            lambda: session.state.status == "connected" and session.state.agent_state is not None,
        )
        # Every key queued before the app handles any (a paste tool's speed).
        for line in lines:
            for char in line:
                app.post_message(events.Key("space" if char == " " else char, char))
            app.post_message(events.Key("enter", "\r"))
        app.post_message(events.Paste(paste))
        app.post_message(events.Key("enter", "\r"))
        expected = [f"You said: {line}" for line in [*lines, paste]]

        def answers() -> list[str]:
            return [
                seg.text.split(". Try")[0]
                for seg in session.state.transcript
                if seg.role == "agent" and seg.final and seg.text.startswith("You said:")
            ]

        await until(pilot, "every answer", lambda: len(answers()) >= len(expected))
        assert answers() == expected
        assert [seg.text for seg in session.state.transcript if seg.typed] == [*lines, paste]
        (agent,) = sim.agents.values()
        assert agent.journal.count("received user.message") == len(expected)
        await pilot.press("ctrl+x")
        await until(pilot, "the ended screen", lambda: isinstance(app.screen, EndedScreen))
        await pilot.press("q")
        await pilot.pause()
