"""End of input and Ctrl-C in line mode: when the call is hung up, and how a cut line reads.

End of input hangs up once the agent has answered the last typed turn and is not saying a
line, even while it goes on with a tour of its own; a hang-up that cuts a line the agent is
saying prints that line with ``[interrupted]``.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from line_mode import chat_env, start_chat

from fishtalk.plain.chat import EOF_MAX_WAIT
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle, run_sim

pytestmark = pytest.mark.webrtc

_TOUR = parse_scenario(
    """
    name = "tour"
    then = "converse"
    [agent]
    greeting = "Hi."
    greeting_audio = false
    answer_during_steps = true
    voice = "tones"
    """
    + '[[steps]]\ndo = "state"\nvalue = "thinking"\n[[steps]]\ndo = "sleep"\nseconds = 1.0\n' * 80,
    name="tour",
)
_WORDS = "word after word, far longer than anyone would wait for it to finish, and on"
_LONG = parse_scenario(
    f"""
    name = "long"
    then = "converse"
    [agent]
    greeting = "This greeting goes on and on, {_WORDS}, {_WORDS}."
    voice = "tones"
    """,
    name="long",
)


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    async with run_sim(scenarios={"tour": _TOUR, "long": _LONG}) as handle:
        yield handle


async def test_end_of_input_hangs_up_once_answered_during_a_tour(sim: SimHandle) -> None:
    """The agent answers and then keeps busy with its own steps (80 s of them): end of input
    hangs up after the answer, not after :data:`EOF_MAX_WAIT`."""
    proc = await start_chat(sim, "--agent", "tour", "--plain", "--text-only", env=chat_env(sim))
    started = time.monotonic()
    out, err = await asyncio.wait_for(proc.communicate(b"hello\n"), EOF_MAX_WAIT + 30)
    took = time.monotonic() - started
    lines = out.decode().splitlines()
    assert proc.returncode == 0, err
    answer = lines.index("you> hello") + 1
    assert any(line.startswith("agent: ") for line in lines[answer:]), lines
    # Waiting out EOF_MAX_WAIT (or the tour's 80 s) takes at least that long: anything
    # shorter hung up on the answer (a loaded machine took 32 s of the 60 to get there).
    assert took < EOF_MAX_WAIT, (took, lines)


async def test_ctrl_c_marks_the_line_it_cuts(sim: SimHandle, tmp_path: Path) -> None:
    """Ctrl-C while the agent is saying a line: the line is printed as cut, and the journal
    says the call ended because it was interrupted (not that the user hung up)."""
    env = chat_env(sim, extra={"XDG_STATE_HOME": str(tmp_path)})
    proc = await start_chat(sim, "--agent", "long", "--plain", env=env)
    assert proc.stdout is not None
    lines: list[str] = []
    async with asyncio.timeout(60):
        while (line := (await proc.stdout.readline()).decode()) and "agent speaking" not in line:
            lines.append(line)
    await asyncio.sleep(1.0)  # some of the greeting said, most of it not
    proc.send_signal(signal.SIGINT)
    out, _err = await asyncio.wait_for(proc.communicate(), 60)
    lines += out.decode().splitlines()
    said = [line for line in lines if line.startswith("agent: This greeting")]
    assert len(said) == 1, lines
    assert said[0].endswith(" [interrupted]"), lines
    assert _end_reason(tmp_path) == "interrupted"


def _end_reason(state: Path) -> str | None:
    """The end reason of the one journal under ``state``."""
    from fishtalk.engine.journal.reader import read_journal, summarize_journal

    [journal] = list(state.rglob("*.jsonl"))
    return summarize_journal(read_journal(journal)).end_reason
