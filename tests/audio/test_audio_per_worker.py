"""Every test process (pytest-xdist worker) has a PulseAudio server of its own."""

from __future__ import annotations

import os

import pytest
from support.virtual_audio import MIC, SPEAKER, VirtualAudio

pytestmark = [pytest.mark.audio, pytest.mark.timeout(60)]


def test_this_process_reaches_its_own_server(vaudio: VirtualAudio) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    assert vaudio.root.name.startswith(f"fishtalk-pulse-{worker}-")
    # What sounddevice (through ALSA's pulse plugin) and the CLI's children read:
    assert os.environ["PULSE_SERVER"] == f"unix:{vaudio.socket}"
    assert os.environ["ALSA_CONFIG_PATH"].endswith(str(vaudio.root / "asound.conf"))
    assert vaudio.socket.is_socket()
    info = vaudio.pactl("info")
    assert f"Default Sink: {SPEAKER}" in info
    assert f"Default Source: {MIC}" in info


def test_audio_tests_share_one_worker(request: pytest.FixtureRequest) -> None:
    group = request.node.get_closest_marker("xdist_group")
    assert group is not None
    assert group.args == ("audio",)
