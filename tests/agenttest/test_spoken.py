"""Tests that speak and hear, against one sim: a sentence synthesised from text reaches
the sim's ears (its user transcript holds the words), the sim answers in espeak-ng's
voice, and the spoken expectations check the reply's received audio; the must-fail files
show a voice that drifts from its transcript and a silent reply failing, with what was
heard. Also the hearing itself on espeak-ng audio (no sim)."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from fishtalk.cli.exits import exit_code_of
from fishtalk.core.conversation.reply_audio import ReplyAudioReport
from fishtalk.core.errors import TestFileError
from fishtalk.engine.journal.reader import read_journal, summarize_journal
from fishtalk.sim.fish.scenario import load_scenario
from fishtalk.sim.process import SimProcess
from fishtalk.sim.runner import SimInfo
from fishtalk.speech import stt
from fishtalk.speech.tts import Espeak
from fishtalk.workbench.agenttest.audiochecks import CUT_SLACK, check_cut
from fishtalk.workbench.agenttest.expect import Expect
from fishtalk.workbench.agenttest.listening import hear, spoken_failures
from fishtalk.workbench.agenttest.results import TestResult
from fishtalk.workbench.agenttest.runner import RunOptions, Target, run_test, run_tests
from fishtalk.workbench.agenttest.spec import load_test, parse_test
from fishtalk.workbench.journal.export import to_data, to_txt
from fishtalk.workbench.journal.replay import states

from .conftest import FILES, SCENARIOS, markers

pytestmark = [
    # One worker runs the whole module: its sim and its sessions are started once.
    pytest.mark.xdist_group("agenttest-spoken"),
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng (apt)"),
    pytest.mark.skipif(not stt.available(), reason="needs the speech extra"),
]

SPOKEN = FILES / "spoken"
FAIL = sorted((SPOKEN / "fail").glob("*.toml"))
CUT = SPOKEN / "pass" / "transcript_cut.toml"
BALANCE = "Your balance is ten dollars."


# --- hearing, on espeak-ng audio --------------------------------------------------------------


@pytest.fixture(scope="module")
def recognizer() -> stt.Recognizer:
    return stt.load()


def said(text: str) -> object:
    return Espeak.find(voice="en-us").synthesize(text, 48_000)


def test_audio_that_says_its_transcript_is_aligned(recognizer: stt.Recognizer) -> None:
    heard = hear(recognizer, said(BALANCE), 48_000, BALANCE, where="t")  # type: ignore[arg-type]
    assert (heard.method, heard.heard_text, heard.confidence) == (
        "align",
        "your balance is ten dollars",
        1.0,
    )
    assert heard.says("ten dollars")
    assert not heard.says("dollars ten")
    assert (
        spoken_failures(
            Expect(spoken_contains=["balance"], audio_matches_text=0.6, no_silent_replies=True),
            [heard],
        )
        == []
    )
    assert heard.to_dict()["heard_text"] == "your balance is ten dollars"


def test_audio_that_says_something_else_is_not(recognizer: stt.Recognizer) -> None:
    heard = hear(recognizer, said("The weather is sunny today."), 48_000, BALANCE)  # type: ignore[arg-type]
    assert heard.method == "free"  # the alignment found none of the transcript: it says so
    assert heard.share == 0.0
    assert not heard.says("balance")
    failed = spoken_failures(Expect(spoken_contains="balance", audio_matches_text=0.6), [heard])
    assert [f[0] for f in failed] == [
        "the agent's audio says 'balance'",
        "the audio says at least 60% of the reply's transcript",
    ]
    assert "(free decoding, confidence" in failed[0][1]


STORY = "Once upon a time there was a small fish who lived in a very large lake"


@pytest.mark.parametrize("spoken", [3, 8])
def test_a_cut_reply_s_audio_says_the_first_words_of_its_transcript(
    recognizer: stt.Recognizer, spoken: int
) -> None:
    """The audio of a line cut after its first words, under the whole line's transcript:
    the words it said are counted, the rest are named, with the reply's number."""
    audio = said(" ".join(STORY.split()[:spoken]))
    for transcript, unspoken in [(STORY, STORY.split()[spoken:]), (said_words(spoken), [])]:
        heard = hear(recognizer, audio, 48_000, transcript, "turn 1", ["seg-1"], True)  # type: ignore[arg-type]
        assert heard.spoken_words == spoken
        assert heard.unspoken == tuple(w.lower() for w in unspoken)
    report = ReplyAudioReport(reply=2, turn=1, segment_ids=("seg-1",))
    heard = hear(recognizer, audio, 48_000, STORY, "turn 1", ["seg-1"], True)  # type: ignore[arg-type]
    [failure] = check_cut("turn 1", heard, [report])
    assert failure.expected == "transcript_cut true"
    left = len(STORY.split()) - spoken
    assert failure.seen.startswith(
        f"reply 2: {left} unspoken words in its transcript after the {spoken} its audio said ("
    )
    assert failure.seen.endswith(f" (transcript_cut true: {CUT_SLACK} words of slack)")
    # The word the cut fell in, and the one queued after it: within the slack.
    near = hear(recognizer, audio, 48_000, said_words(spoken + 2), "turn 1", ["seg-1"], True)  # type: ignore[arg-type]
    assert check_cut("turn 1", near, [report]) == []
    far = hear(recognizer, audio, 48_000, said_words(spoken + 3), "turn 1", ["seg-1"], True)  # type: ignore[arg-type]
    assert len(check_cut("turn 1", far, [report])) == 1


def said_words(n: int) -> str:
    return " ".join(STORY.split()[:n])


def test_heard_nothing_is_a_result_never_a_pass(recognizer: stt.Recognizer) -> None:
    import numpy as np

    for audio, seen in [
        (np.zeros(0, np.int16), "heard nothing: no audio came for this reply"),
        (np.zeros(48_000, np.int16), "heard nothing: 1.0 s of audio without speech"),
    ]:
        heard = hear(recognizer, audio, 48_000, BALANCE)
        assert (heard.method, heard.heard_text, heard.heard_nothing) == ("none", "", True)
        failed = spoken_failures(
            Expect(spoken_contains="balance", audio_matches_text=0.1, no_silent_replies=True),
            [heard],
        )
        assert len(failed) == 3
        assert all(seen in f[1] for f in failed)


def test_spoken_expectations_need_audio_replies() -> None:
    with pytest.raises(TestFileError, match="need text_only = false"):
        parse_test('[[turns]]\nsay = "hi"\nexpect.spoken_contains = "x"\n', source="t.toml")
    with pytest.raises(TestFileError, match="go with a say, speak or listen turn"):
        parse_test(
            "text_only = false\n[[turns]]\nwait = 1\nexpect.no_silent_replies = true\n",
            source="t.toml",
        )
    say = '[[turns]]\nsay = "hi"\n'
    for text, refused in [
        (f"text_only = false\n{say}expect.transcript_cut = true\n", "with a turn's interrupt"),
        (f"text_only = false\n{say}[expect]\ntranscript_cut = true\n", r"not \[expect\]"),
        (f"{say}interrupt_after = 0.5\nexpect.transcript_cut = true\n", "need text_only = false"),
    ]:
        with pytest.raises(TestFileError, match=refused):
            parse_test(text, source="t.toml")
    with pytest.raises(TestFileError, match="must be at most 1"):
        parse_test(
            "text_only = false\n[[turns]]\nlisten = true\nexpect.audio_matches_text = 2\n",
            source="t.toml",
        )


# --- against the sim ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim() -> Iterator[SimInfo]:
    names = ("listener", "drift", "mute", "teller")
    scenarios = {name: load_scenario(SCENARIOS / f"{name}.toml") for name in names}
    scenarios["uncut-teller"] = scenarios["teller"].with_agent({"transcript_uncut": True})
    with SimProcess(scenarios["listener"], scenarios=scenarios) as info:
        yield info


@pytest.fixture(scope="module")
def results(sim: SimInfo) -> Mapping[str, TestResult]:
    tests = [load_test(p) for p in [*FAIL, CUT]]
    target = Target(None, api_url=sim.api_url, api_key=sim.dev_key)
    done = asyncio.run(run_tests(tests, target, RunOptions(concurrency=2)))
    return {r.path: r for r in done}


@pytest.mark.webrtc
@pytest.mark.timeout(300)
def test_a_spoken_round_trip(sim: SimInfo) -> None:
    test = load_test(SPOKEN / "pass" / "round_trip.toml")
    target = Target(None, api_url=sim.api_url, api_key=sim.dev_key, journal=True)
    result = asyncio.run(run_test(test, target))
    report = result.to_dict(exit_code_of)
    # The sim heard the synthesised sentence: its user transcript holds the words.
    assert "you: call notify" in result.transcript, json.dumps(report, indent=1)
    assert result.status == "passed", json.dumps(report, indent=1)
    (heard,) = report["heard_replies"]
    assert heard["method"] == "align"
    assert "ten o'clock" in heard["heard_text"]
    assert result.heard[0].heard is not None  # heard latency measured for the spoken turn
    # The journal records what was heard; export and replay show it.
    assert result.journal is not None
    journal = read_journal(Path(result.journal))
    (record,) = [r for r in journal.records if r["type"] == "heard"]
    assert (record["method"], record["heard_text"]) == ("align", heard["heard_text"])
    summary = summarize_journal(journal)
    assert f"audio said {heard['heard_text']!r} (alignment" in to_txt(summary)
    (turn,) = [t for t in to_data(summary)["turns"] if "heard" in t]
    assert turn["heard"]["method"] == "align"
    *_, (_, last, _) = states(journal)
    assert any("audio said" in n.text for n in last.notices), last.notices


@pytest.mark.webrtc
@pytest.mark.timeout(240)
@pytest.mark.parametrize("path", FAIL, ids=lambda p: p.stem)
def test_spoken_must_fail_files_fail_for_their_reason(
    results: Mapping[str, TestResult], path: Path
) -> None:
    result = results[str(path)]
    assert result.status == "failed", result.to_dict(exit_code_of)
    texts = [f"{f.expected} | {f.seen}" for f in result.failures]
    for want in [*markers(path, "must-fail"), *markers(path, "must-see")]:
        assert any(want in t for t in texts), (want, texts)
    # The transcript itself passed: only what was heard failed.
    assert not any("reply contains" in t for t in texts), texts


@pytest.mark.webrtc
@pytest.mark.timeout(240)
def test_a_cut_reply_whose_transcript_ends_where_its_voice_did_passes(
    results: Mapping[str, TestResult],
) -> None:
    result = results[str(CUT)]
    report = result.to_dict(exit_code_of)
    assert result.status == "passed", json.dumps(report, indent=1)
    (heard,) = result.replies
    # Cut: a few words were said, and the line's end never was.
    assert "goodbye" not in heard.transcript.lower(), json.dumps(report, indent=1)
    assert heard.spoken_words is not None
    assert 0 < heard.spoken_words <= len(heard.transcript.split())
    assert len(heard.unspoken) <= CUT_SLACK
