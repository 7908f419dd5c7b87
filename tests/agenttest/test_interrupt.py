"""Stopping a run (Ctrl-C cancels it): the open sessions end with ``user.hangup`` and the
results that finished are kept."""

from __future__ import annotations

import asyncio

import pytest

from fishtalk.sim.fish.scenario import load_scenario
from fishtalk.sim.runner import run_sim
from fishtalk.workbench.agenttest.results import TestResult
from fishtalk.workbench.agenttest.runner import RunOptions, Target, run_tests
from fishtalk.workbench.agenttest.spec import TestFile, parse_test

from .conftest import SCENARIOS

pytestmark = pytest.mark.webrtc

WAIT = 30.0


async def test_a_cancelled_run_hangs_up_and_keeps_what_finished() -> None:
    quick = parse_test('[[turns]]\nsay = "hi"\n[[turns]]\nhangup = true\n', source="quick.toml")
    # chat never sends an error event: this turn waits until the run is stopped.
    hung = parse_test('[[turns]]\nwait_for_event = "error"\ntimeout = 100\n', source="hung.toml")
    async with run_sim(load_scenario(SCENARIOS / "chat.toml")) as handle:
        target = Target("chat", api_url=handle.api_url, api_key=handle.dev_key)
        hung_started = asyncio.Event()

        def started(test: TestFile, _run: int) -> None:
            if test.name == "hung":
                hung_started.set()

        task = asyncio.ensure_future(
            run_tests([quick, hung], target, RunOptions(concurrency=1), on_start=started)
        )
        await asyncio.wait_for(hung_started.wait(), WAIT)
        task.cancel()
        results: list[TestResult] = await asyncio.wait_for(task, WAIT)
        assert [(r.name, r.status) for r in results] == [("quick", "passed")]
        assert len(handle.agents) == 2
        for agent in handle.agents.values():
            await agent.wait_note("received user.hangup", within=WAIT)
