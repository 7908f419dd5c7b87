"""Your own speech model, by path: a pocketsphinx model folder hears the replies; a
faster-whisper folder or a piper voice without its package is one line naming the extra
(exit 2); anything else says what was expected. Nothing is downloaded."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fishtalk.cli.exits import exit_code_for
from fishtalk.core.errors import SpeechUnavailableError, TestFileError
from fishtalk.speech import stt
from fishtalk.speech.models import ModelPathError, identify
from fishtalk.speech.tts import Espeak, find_espeak
from fishtalk.workbench.agenttest.spec import load_test

pytestmark = pytest.mark.skipif(not stt.available(), reason="needs the speech extra")


def user_model(root: Path) -> Path:
    """A pocketsphinx model folder of the user's: links to the bundled model's files."""
    import pocketsphinx

    bundled = Path(pocketsphinx.get_model_path()) / "en-us"
    acoustic = root / "my-model" / "acoustic"
    acoustic.mkdir(parents=True)
    for item in (bundled / "en-us").iterdir():
        (acoustic / item.name).symlink_to(item)
    (root / "my-model" / "words.dict").symlink_to(bundled / "cmudict-en-us.dict")
    return acoustic


def test_a_pocketsphinx_model_folder_hears(tmp_path: Path) -> None:
    model = identify(user_model(tmp_path))
    assert (model.kind, model.dictionary, model.language_model) == (
        "pocketsphinx",
        tmp_path / "my-model" / "words.dict",
        None,
    )
    if find_espeak() is None:
        pytest.skip("needs espeak-ng")
    audio = Espeak.find(voice="en-us").synthesize("Your balance is ten dollars.", 16_000)
    assert stt.load(model).cover(audio, 16_000, "your balance is ten dollars").share == 1.0


@pytest.mark.parametrize(
    ("files", "package", "extra"),
    [
        (("model.bin", "config.json"), "faster_whisper", "fishtalk[whisper]"),
        (("voice.onnx",), "piper", "fishtalk[piper]"),
    ],
)
def test_a_model_without_its_package_is_one_line_and_exit_2(
    tmp_path: Path, files: tuple[str, ...], package: str, extra: str
) -> None:
    if importlib.util.find_spec(package) is not None:
        pytest.skip(f"{package} is installed")
    for name in files:
        (tmp_path / name).write_bytes(b"")
    path = tmp_path / "voice.onnx" if len(files) == 1 else tmp_path
    with pytest.raises(SpeechUnavailableError) as caught:
        identify(path).require()
    assert str(caught.value).startswith("offline speech needs ")
    assert f"pip install '{extra}' (for the model at {path})" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert exit_code_for(None, caught.value) == 2


def test_anything_else_says_what_was_expected(tmp_path: Path) -> None:
    with pytest.raises(ModelPathError, match="no such model"):
        identify(tmp_path / "missing")
    with pytest.raises(ModelPathError, match="holds mdef; a faster-whisper folder holds"):
        identify(tmp_path)
    (tmp_path / "mdef").write_bytes(b"")
    with pytest.raises(ModelPathError, match=r"no pronunciation dictionary \(\*\.dict\)"):
        identify(tmp_path)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ModelPathError, match=r"a piper voice is a \.onnx file"):
        identify(tmp_path / "notes.txt")


def test_a_test_file_names_its_model(tmp_path: Path) -> None:
    acoustic = user_model(tmp_path)
    path = tmp_path / "t.toml"
    body = '[[turns]]\nsay = "hi"\n'
    path.write_text(f'stt_model = "{acoustic.relative_to(tmp_path)}"\n{body}')
    assert load_test(path).stt_model == "my-model/acoustic"
    path.write_text(f'stt_model = "nowhere"\n{body}')
    with pytest.raises(TestFileError, match=r"t\.toml:1: stt_model: no such model: "):
        load_test(path)
    if importlib.util.find_spec("faster_whisper") is None:
        (tmp_path / "whisper").mkdir()
        (tmp_path / "whisper" / "model.bin").write_bytes(b"")
        (tmp_path / "whisper" / "config.json").write_text("{}")
        path.write_text(f'stt_model = "whisper"\n{body}')
        with pytest.raises(SpeechUnavailableError, match=r"fishtalk\[whisper\]"):
            load_test(path)
