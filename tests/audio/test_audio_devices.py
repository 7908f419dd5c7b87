"""Device listing, selection and the text-only fallbacks, on real PortAudio."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from support.virtual_audio import MIC, MIC_FEED, SPEAKER, SPEAKER_MONITOR, VirtualAudio

pytestmark = [pytest.mark.audio, pytest.mark.timeout(60)]


def test_list_devices_shows_the_virtual_chain(vaudio: VirtualAudio) -> None:
    from fishtalk.engine.audio.devices import list_devices

    devices = list_devices()
    names = {d.name for d in devices}
    assert {MIC, MIC_FEED, SPEAKER, SPEAKER_MONITOR} <= names
    mic = next(d for d in devices if d.name == MIC)
    assert mic.max_input_channels > 0
    assert mic.hostapi == "ALSA"
    assert mic.default_samplerate > 0
    assert sum(d.is_default_input for d in devices) == 1
    assert sum(d.is_default_output for d in devices) == 1


def test_resolve_by_index_and_name(vaudio: VirtualAudio) -> None:
    from fishtalk.engine.audio.devices import list_devices, resolve_device

    devices = list_devices()
    index = {d.name: d.index for d in devices}
    assert resolve_device(None, "input") is None
    assert resolve_device(index[MIC], "input") == index[MIC]
    assert resolve_device(str(index[SPEAKER]), "output") == index[SPEAKER]
    # An exact (case-insensitive) name wins over names that merely contain it.
    assert resolve_device("FISHTALK_MIC", "input") == index[MIC]
    assert resolve_device("speaker_mon", "input") == index[SPEAKER_MONITOR]


def test_no_match_lists_the_choices(vaudio: VirtualAudio) -> None:
    from fishtalk.cli.exits import EXIT_USAGE, exit_code_for
    from fishtalk.core.errors import AudioDeviceError
    from fishtalk.engine.audio.devices import resolve_device

    with pytest.raises(AudioDeviceError) as caught:
        resolve_device("no such mic", "input")
    message = str(caught.value)
    assert message.startswith("no input device matching 'no such mic'; choices: ")
    assert f"'{MIC}'" in message
    assert f"'{SPEAKER_MONITOR}'" in message
    assert "\n" not in message
    assert exit_code_for(None, caught.value) == EXIT_USAGE

    with pytest.raises(AudioDeviceError, match="no output device with index 999; choices: "):
        resolve_device(999, "output")
    with pytest.raises(AudioDeviceError, match="is ambiguous; it matches: "):
        resolve_device("fishtalk_m", "input")


def test_format_table_marks_defaults(vaudio: VirtualAudio) -> None:
    from fishtalk.engine.audio.devices import format_device_table, list_devices

    table = format_device_table(list_devices())
    assert MIC in table
    assert "ALSA" in table
    assert any(line.startswith("<") for line in table.splitlines()[1:-1])
    assert format_device_table([]) == "no audio devices found"


def _run_open_backend(prelude: str, env: dict[str, str]) -> str:
    code = textwrap.dedent(prelude) + textwrap.dedent(
        """
        from fishtalk.engine.audio import open_backend
        from fishtalk.engine.audio.base import NullAudio
        from fishtalk.cli.settings import AudioSettings
        backend = open_backend(AudioSettings())
        assert isinstance(backend, NullAudio), backend
        print(backend.description)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _env_without_server(tmp: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULSE_", "ALSA_"))}
    env["PULSE_SERVER"] = f"unix:{tmp}/nowhere"
    env["XDG_RUNTIME_DIR"] = tmp
    return env


def test_no_devices_gives_text_only(tmp_path: object) -> None:
    out = _run_open_backend("", _env_without_server(str(tmp_path)))
    assert out == "text-only: no audio devices found"


def test_missing_sounddevice_gives_text_only(tmp_path: object) -> None:
    # A None entry makes `import sounddevice` raise ImportError, as a missing install does.
    prelude = "import sys\nsys.modules['sounddevice'] = None\n"
    out = _run_open_backend(prelude, _env_without_server(str(tmp_path)))
    assert out == "text-only: the sounddevice package is not installed (pip install sounddevice)"


def test_missing_portaudio_gives_text_only(tmp_path: object) -> None:
    # sounddevice finds libportaudio through ctypes.util.find_library; when that finds
    # nothing its import raises OSError, exactly as on a machine without libportaudio2.
    prelude = """
        import ctypes.util
        _real = ctypes.util.find_library
        ctypes.util.find_library = lambda name: None if name == "portaudio" else _real(name)
    """
    out = _run_open_backend(prelude, _env_without_server(str(tmp_path)))
    assert out == "text-only: PortAudio library not installed (apt install libportaudio2)"


def test_disabled_gives_text_only() -> None:
    from fishtalk.cli.settings import AudioSettings
    from fishtalk.engine.audio import open_backend
    from fishtalk.engine.audio.base import NullAudio

    backend = open_backend(AudioSettings(enabled=False))
    assert isinstance(backend, NullAudio)
    assert backend.description == "text-only: audio disabled"
    assert not backend.has_input


def test_unknown_device_in_settings_gives_text_only_with_choices(vaudio: VirtualAudio) -> None:
    from fishtalk.cli.settings import AudioSettings
    from fishtalk.engine.audio import open_backend
    from fishtalk.engine.audio.base import NullAudio

    backend = open_backend(AudioSettings(input_device="nope"))
    assert isinstance(backend, NullAudio)
    assert backend.description.startswith("text-only: no input device matching 'nope'; choices:")


def test_importing_fishtalk_audio_loads_no_sounddevice() -> None:
    code = (
        "import sys, fishtalk.engine.audio, fishtalk.engine.audio.base\n"
        "bad = {'sounddevice', 'numpy', 'livekit'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_devices_command_lists_the_virtual_chain(vaudio: VirtualAudio) -> None:
    fishtalk = os.path.join(os.path.dirname(sys.executable), "fishtalk")
    done = subprocess.run([fishtalk, "devices"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["idx", "name", "host", "API", "in", "out", "rate"]
    assert any(line.split()[1:3] == [MIC, "ALSA"] for line in lines[1:] if line.strip())
    assert "< default input   > default output" in lines


def test_devices_command_without_devices_or_library(tmp_path: object) -> None:
    fishtalk = os.path.join(os.path.dirname(sys.executable), "fishtalk")
    env = _env_without_server(str(tmp_path))
    done = subprocess.run(
        [fishtalk, "devices"], capture_output=True, text=True, timeout=30, env=env
    )
    assert (done.returncode, done.stdout) == (0, "no audio devices found\n")
    code = (
        "import sys; sys.modules['sounddevice'] = None\n"
        "from fishtalk.cli.app import main; main(['devices'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, env=env
    )
    assert done.returncode == 1
    assert done.stderr == (
        "fishtalk: the sounddevice package is not installed (pip install sounddevice)\n"
    )
