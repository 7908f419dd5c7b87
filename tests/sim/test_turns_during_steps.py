"""Typed turns while a scenario's steps run: answered between steps when the scenario
says so (the demo tour does), else once the steps are done, and never after a nudge.

Run: ``.venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/sim -q``
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from fishtalk.core import protocol as p
from fishtalk.sim.fish.scenario import builtin_scenario, parse_scenario
from fishtalk.sim.runner import SimHandle

from .sim_user import UserClient, tone_sim

pytestmark = [pytest.mark.webrtc, pytest.mark.timeout(90)]

_STEPS = """
    [[steps]]
    do = "say"
    text = "Step one is a line with enough words in it to take a little while to say."
    [[steps]]
    do = "sleep"
    seconds = 2.0
    [[steps]]
    do = "say"
    text = "Step three."
    audio = false
"""

SCENARIOS = {
    "prompt": f"""
        then = "listen"
        [agent]
        greeting = ""
        voice = "tones"
        answer_during_steps = true
        {_STEPS}
    """,
    "patient": f"""
        then = "converse"
        [agent]
        greeting = ""
        voice = "tones"
        idle_seconds = 1.0
        {_STEPS}
    """,
}


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    scenarios = {name: parse_scenario(text, name=name) for name, text in SCENARIOS.items()}
    async with tone_sim(scenarios) as handle:
        yield handle


def _order(user: UserClient) -> list[str]:
    return [s.text.split(".")[0] for s in user.agent_segments() if s.closed]


async def test_a_turn_during_the_steps_is_answered_before_the_next_step(
    user: UserClient,
) -> None:
    await user.start("prompt")
    await user.until(lambda: any("Step one" in s.text for s in user.agent_segments()))
    await user.send(p.UserMessage(text="are you there", audio=False))
    answer = await user.final_agent_segment("You said: are you there", within=30.0)
    assert "carry on" in answer.text
    await user.final_agent_segment("Step three.", within=30.0)
    # Answered between step one and the sleep, then the steps carried on.
    order = _order(user)
    assert order.index("You said: are you there") < order.index("Step three")
    assert (
        order.index("Step one is a line with enough words in it to take a little while to say") == 0
    )


async def test_without_the_option_the_turn_waits_for_the_steps_but_not_for_a_nudge(
    sim: SimHandle, user: UserClient
) -> None:
    await user.start("patient")
    await user.until(lambda: any("Step one" in s.text for s in user.agent_segments()))
    await user.send(p.UserMessage(text="early bird", audio=False))
    await user.final_agent_segment("You said: early bird", within=30.0)
    order = _order(user)
    # The steps ran first (as documented), and the waiting turn beat the idle nudge,
    # even though more than idle_seconds passed since it was typed.
    assert order.index("Step three") < order.index("You said: early bird")
    assert not any("still there" in text for text in order)
    agent = await sim.agent(user.session_id)
    assert "answering a turn between steps" not in agent.journal


def test_the_demo_tour_answers_between_steps() -> None:
    assert builtin_scenario("demo").agent.answer_during_steps
