"""The offline speech layer on real espeak-ng audio: grammar decoding gives the exact
text, alignment tells the true text from a wrong one, silence is "heard nothing", and a
missing part is a one-line typed error."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

from fishtalk.cli.exits import EXIT_USAGE
from fishtalk.core.errors import SpeechUnavailableError
from fishtalk.speech import pcm, stt
from fishtalk.speech.recognition import Recognition, normalize
from fishtalk.speech.tts import Espeak

pytestmark = [
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng (apt)"),
    pytest.mark.skipif(not stt.available(), reason="needs the speech extra"),
]

COMMANDS = ["call get time", "call get local context", "goodbye", "error", "what is my balance"]


@pytest.fixture(scope="module")
def recognizer() -> stt.Recognizer:
    return stt.load()


@pytest.fixture(scope="module")
def voice() -> Espeak:
    return Espeak.find(voice="en-us")


def test_espeak_gives_speech_at_both_rates(voice: Espeak) -> None:
    low = voice.synthesize("hello there", 16_000)
    high = voice.synthesize("hello there", 48_000)
    assert 0.4 < low.size / 16_000 < 3.0
    assert abs(high.size / 48_000 - low.size / 16_000) < 0.01
    assert stt.speech_seconds(high, 48_000) > 0.3
    # An argv list, text on stdin: a text that looks like an option is just spoken.
    assert voice.argv()[:3] == [voice.executable, "--stdout", "--stdin"]
    assert voice.synthesize("--version", 16_000).size > 0


@pytest.mark.parametrize("said", ["what is my balance", "goodbye", "error"])
def test_a_grammar_gives_the_exact_text(
    recognizer: stt.Recognizer, voice: Espeak, said: str
) -> None:
    heard = recognizer.grammar(voice.synthesize(said, 16_000), 16_000, COMMANDS)
    assert heard == Recognition(said, "grammar", heard.confidence, heard.speech_seconds)
    assert heard.matched
    assert not heard.heard_nothing
    assert 0 < heard.confidence <= 1
    assert heard.describe().startswith(f'grammar heard "{said}"')


def test_the_grammar_works_on_48k_audio(recognizer: stt.Recognizer, voice: Espeak) -> None:
    heard = recognizer.understand(voice.synthesize("goodbye", 48_000), 48_000, COMMANDS)
    assert (heard.method, heard.text, heard.matched) == ("grammar", "goodbye", True)


def test_alignment_tells_the_true_text_from_a_wrong_one(
    recognizer: stt.Recognizer, voice: Espeak
) -> None:
    audio = voice.synthesize("What is my balance?", 16_000)
    right = recognizer.align(audio, 16_000, "What is my balance?")
    assert right.method == "align"
    assert right.matched
    assert right.confidence > 0.5
    wrong = recognizer.align(audio, 16_000, "the weather is sunny today")
    assert not wrong.matched
    assert wrong.confidence == 0.0
    assert "does not match" in wrong.describe()


def test_free_decoding_says_it_is_free_decoding(recognizer: stt.Recognizer, voice: Espeak) -> None:
    heard = recognizer.free(voice.synthesize("hello there how are you", 16_000), 16_000)
    assert heard.method == "free"
    assert heard.describe().startswith("free decoding")


def test_silence_is_heard_nothing(recognizer: stt.Recognizer) -> None:
    quiet = pcm.silence(1.0, 16_000)
    noise = (np.random.default_rng(1).normal(0, 20, 16_000)).astype(np.int16)
    for audio in (quiet, noise):
        for heard in (
            recognizer.understand(audio, 16_000, COMMANDS),
            recognizer.free(audio, 16_000),
            recognizer.grammar(audio, 16_000, COMMANDS),
        ):
            assert heard.heard_nothing
            assert heard.describe() == "heard nothing"
        aligned = recognizer.align(audio, 16_000, "goodbye")
        assert not aligned.matched
        assert aligned.heard_nothing


def test_results_do_not_depend_on_what_came_before(
    recognizer: stt.Recognizer, voice: Espeak
) -> None:
    audio = voice.synthesize("what is my balance", 16_000)
    first = recognizer.grammar(audio, 16_000, COMMANDS)
    recognizer.free(voice.synthesize("hello there how are you", 16_000), 16_000)
    again = recognizer.grammar(audio, 16_000, COMMANDS)
    assert (again.text, again.method, again.matched) == (first.text, "grammar", True)
    # The cepstral mean restarts each utterance; other decoder state moves the score a hair.
    assert again.confidence == pytest.approx(first.confidence, abs=0.05)


def test_words_outside_the_dictionary_are_left_out() -> None:
    assert normalize("Call get_time, NOW!") == "call get time now"
    assert "( call get time ) | ( goodbye )" in stt.jsgf(["call get time", "goodbye"])


def test_a_missing_extra_is_one_typed_line() -> None:
    # A child interpreter where pocketsphinx cannot be imported.
    code = (
        "import sys; sys.modules['pocketsphinx'] = None\n"
        "from fishtalk.speech import stt\n"
        "from fishtalk.core.errors import SpeechUnavailableError\n"
        "from fishtalk.cli.exits import exit_code_for\n"
        "try:\n    stt.load()\n"
        "except SpeechUnavailableError as e:\n    print(e, exit_code_for(None, e))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        f"offline speech needs pocketsphinx: pip install 'fishtalk[speech]' {EXIT_USAGE}"
    )
    assert issubclass(SpeechUnavailableError, Exception)


def test_a_missing_espeak_is_one_typed_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SpeechUnavailableError, match=r"^offline speech needs espeak-ng: install"):
        Espeak.find()
