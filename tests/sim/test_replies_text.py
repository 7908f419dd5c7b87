"""The sim's reply texts: punctuation and clocks that read right (pure, no sim running)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from fishtalk.sim.fish.interpreter import end_sentence, machine_time_answer, you_said
from fishtalk.sim.fish.scenario import builtin_scenario

TRY = "Try 'call get_local_context', 'error' or 'goodbye'."


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("What can you do?", "You said: What can you do? Try"),
        ("Wow!", "You said: Wow! Try"),
        ("Fine.", "You said: Fine. Try"),
        ("well…", "You said: well… Try"),
        ('He said "stop."', 'You said: He said "stop." Try'),
        ("hello", "You said: hello. Try"),
        ("hello,", "You said: hello. Try"),
        ("  spaced out  ", "You said: spaced out. Try"),
    ],
)
def test_quoted_text_ending_in_punctuation_is_not_doubled(text: str, said: str) -> None:
    assert you_said(text, TRY) == f"{said}{TRY.removeprefix('Try')}"
    assert "?." not in you_said(text, TRY)
    assert "!." not in you_said(text, TRY)


def test_without_a_follow_up_the_echo_is_as_typed() -> None:
    assert you_said("hello") == "You said: hello"
    assert end_sentence("") == ""
    assert end_sentence("ok:") == "ok."


# Measured by hand on espeak-ng (the demo's voice where it is installed): 2.0 to 2.2 words a
# second with the pauses, and the tour took 1:42 from its opening line to its last (1:48 from
# connecting); the spoken get_local_context answer alone took 17 s.
WORDS_PER_SECOND = 2.0
SPOKEN_TOOL_ANSWER = 20.0
"""Seconds the agent takes to say what an answered client tool returned (a JSON preview)."""
CLAIMS = {"In the next minute": 60.0, "In the next two minutes": 120.0}


def _tour_seconds() -> float:
    """The demo tour's length on the sim's own pacing: speech, tool durations, sleeps."""
    total = 0.0
    for step in builtin_scenario("demo").steps:
        if step.do == "say" and step.audio:
            total += len(step.text.split()) / WORDS_PER_SECOND
        elif step.do == "tool":
            total += step.duration
        elif step.do == "sleep":
            total += step.seconds
        elif step.do == "user_transcript":
            total += step.interval * (len(step.interim) + 1)
        elif step.do == "client_tool" and step.expects_response and step.announce:
            total += SPOKEN_TOOL_ANSWER
    return total


def test_the_tour_takes_no_longer_than_it_says() -> None:
    opening = next(s for s in builtin_scenario("demo").steps if s.do == "say")
    claim = next(seconds for words, seconds in CLAIMS.items() if opening.text.startswith(words))
    assert _tour_seconds() <= claim, (opening.text, _tour_seconds())
    # The scenario's description says the same length.
    assert ("two-minute" in builtin_scenario("demo").description) == (claim == 120.0)


def test_the_demo_clock_says_it_is_fixed() -> None:
    """The demo's built-in get_time is a stand-in: its answer says so, never a bare 12:00."""
    (tool,) = [s for s in builtin_scenario("demo").steps if s.do == "tool" and s.name == "get_time"]
    assert isinstance(tool.output, dict)
    assert "fixed demo clock" in str(tool.output["clock"])


def test_without_a_client_get_time_the_sim_tells_the_machine_time() -> None:
    at = datetime(2026, 12, 2, 18, 36, tzinfo=UTC)
    said = machine_time_answer(at)
    assert "18:36" in said
    assert "machine's clock" in said
