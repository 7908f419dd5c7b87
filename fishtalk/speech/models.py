"""A user's own speech model, by path: what it is, and whether this fishtalk can use it.

fishtalk never downloads a model. Besides the ones its packages ship (pocketsphinx's
bundled en-US model, espeak-ng's voices) a user may point at one they already have:

* a **pocketsphinx model directory**: an acoustic model (a folder with ``mdef``), with a
  pronunciation dictionary (``*.dict``) and optionally a language model (``*.lm.bin`` /
  ``*.lm``) in it or in its parent folder (the layout of pocketsphinx's own ``model/``);
  used for hearing, like the bundled one;
* a **faster-whisper model directory** (CTranslate2: ``model.bin`` and ``config.json``)
  or a **piper voice** (``*.onnx`` with its ``*.onnx.json``): recognised, and usable only
  with their package installed; without it, :class:`SpeechUnavailableError` names what
  to install, in one line (exit 2).

Anything else is a :class:`ModelPathError` that says what was expected.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from fishtalk.core.errors import SpeechUnavailableError

ModelKind = Literal["pocketsphinx", "faster-whisper", "piper"]

_PACKAGES: Final[dict[ModelKind, tuple[str, str, str]]] = {
    # kind: (module, package name, how to install)
    "pocketsphinx": ("pocketsphinx", "pocketsphinx", "pip install 'fishtalk[speech]'"),
    "faster-whisper": ("faster_whisper", "faster-whisper", "pip install 'fishtalk[whisper]'"),
    "piper": ("piper", "piper-tts", "pip install 'fishtalk[piper]'"),
}


class ModelPathError(ValueError):
    """A model path that is missing or holds no model fishtalk knows (the message says
    what it expected)."""


@dataclass(frozen=True)
class UserModel:
    """A local model the user pointed at."""

    kind: ModelKind
    path: Path
    """The model: the acoustic model folder, the faster-whisper folder or the voice file."""
    dictionary: Path | None = None
    """pocketsphinx: the pronunciation dictionary."""
    language_model: Path | None = None
    """pocketsphinx: the language model (free decoding), if there is one."""

    def require(self) -> None:
        """Raise :class:`SpeechUnavailableError` unless the model's package is installed."""
        module, package, how = _PACKAGES[self.kind]
        if importlib.util.find_spec(module) is None:
            raise SpeechUnavailableError(package, f"{how} (for the model at {self.path})")


def _first(folders: tuple[Path, ...], *patterns: str) -> Path | None:
    for folder in folders:
        for pattern in patterns:
            # A phone-loop model (en-us-phone.lm.bin) is not a word language model.
            found = sorted(p for p in folder.glob(pattern) if "phone" not in p.name)
            if found:
                return found[0]
    return None


def identify(path: Path) -> UserModel:
    """What the model at ``path`` is; raises :class:`ModelPathError`."""
    path = path.expanduser()
    if not path.exists():
        raise ModelPathError(f"no such model: {path}")
    if path.is_file():
        if path.suffix == ".onnx":
            return UserModel("piper", path)
        raise ModelPathError(f"{path}: not a model fishtalk knows (a piper voice is a .onnx file)")
    if (path / "mdef").is_file():
        folders = (path, path.parent)
        dictionary = _first(folders, "*.dict")
        if dictionary is None:
            raise ModelPathError(
                f"{path}: a pocketsphinx acoustic model, but no pronunciation dictionary "
                "(*.dict) in it or beside it"
            )
        return UserModel("pocketsphinx", path, dictionary, _first(folders, "*.lm.bin", "*.lm"))
    if (path / "model.bin").is_file() and (path / "config.json").is_file():
        return UserModel("faster-whisper", path)
    raise ModelPathError(
        f"{path}: not a model fishtalk knows (a pocketsphinx acoustic model folder holds "
        "mdef; a faster-whisper folder holds model.bin and config.json)"
    )


__all__ = ["ModelKind", "ModelPathError", "UserModel", "identify"]
