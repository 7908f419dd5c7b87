"""``speak`` turns from text: how text and WAV paths are told apart, the voice, the cache,
and the one-line errors (a missing espeak-ng, an unknown voice). No sim: the spoken run
itself is ``files/pass/spoken_text.toml`` in :mod:`.test_suite`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fishtalk.cli.exits import exit_code_for
from fishtalk.core.errors import SpeechUnavailableError, TestFileError
from fishtalk.engine.paths import speech_cache_dir
from fishtalk.workbench.agenttest.speaking import clip, is_wav_path, synthesize
from fishtalk.workbench.agenttest.spec import load_test, parse_test
from fishtalk.workbench.agenttest.wavmic import speech_end

from .conftest import FILES

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng")


def test_a_value_ending_in_wav_is_a_file_and_anything_else_is_text() -> None:
    assert is_wav_path("question.wav")
    assert is_wav_path(" clips/Q.WAV ")
    assert is_wav_path("my question.wav")
    assert not is_wav_path("What is my balance?")
    assert not is_wav_path("Play intro.wav.")  # the documented way to say a file name
    assert not is_wav_path("wav")


def test_text_is_synthesised_once_and_cached_by_text_and_voice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = synthesize("What is my balance?")
    assert speech_end(first) > 0  # speech, at the session's rate (48 kHz: over a second)
    assert len(first) > 2 * 48_000
    cached = sorted(speech_cache_dir().iterdir())
    assert len(cached) == 1
    stamp = cached[0].stat().st_mtime_ns
    assert synthesize("What is my balance?") == first
    assert cached[0].stat().st_mtime_ns == stamp  # read back, not written again
    american = synthesize("What is my balance?", "en-us")  # espeak-ng's default is British
    assert american != first
    assert len(list(speech_cache_dir().iterdir())) == 2
    # A WAV path reads the file, whatever the voice.
    assert clip("tone-440.wav", FILES / "pass", "en-gb") == clip("tone-440.wav", FILES / "pass")


def test_voice_goes_with_a_spoken_text(tmp_path: Path) -> None:
    with pytest.raises(TestFileError, match=r"voice goes with a speak turn whose value is text"):
        parse_test('[[turns]]\nsay = "hi"\nvoice = "en-gb"\n', source="t.toml")
    with pytest.raises(TestFileError, match=r"voice goes with a speak turn"):
        parse_test('[[turns]]\nspeak = "a.wav"\nvoice = "en-gb"\n', source="t.toml")
    test = parse_test(
        'voice = "en-gb"\n[[turns]]\nspeak = "Hi"\n[[turns]]\nspeak = "Yo"\nvoice = "en-us"\n',
        source="t.toml",
    )
    assert [test.voice_of(t) for t in test.turns] == ["en-gb", "en-us"]


def test_an_unknown_voice_or_missing_file_is_named_with_its_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bad = tmp_path / "bad.toml"
    bad.write_text('[[turns]]\nspeak = "Hello"\nvoice = "nosuch"\n')
    with pytest.raises(TestFileError) as caught:
        load_test(bad)
    assert str(caught.value) == (
        f"{bad}:3: turns[1].voice: espeak-ng voice 'nosuch': "
        "The specified espeak-ng voice does not exist."
    )
    assert exit_code_for(None, caught.value) == 2
    bad.write_text('[[turns]]\nlisten = true\n[[turns]]\nspeak = "missing.wav"\n')
    with pytest.raises(TestFileError, match=r"bad.toml:4: turns\[2\]\.speak: cannot read WAV"):
        load_test(bad)


def test_without_espeak_a_spoken_text_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    path = tmp_path / "t.toml"
    path.write_text('[[turns]]\nspeak = "Hello"\n')
    with pytest.raises(SpeechUnavailableError) as caught:
        load_test(path)
    assert str(caught.value).startswith("offline speech needs espeak-ng: install")
    assert exit_code_for(None, caught.value) == 2
