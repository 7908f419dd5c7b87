"""``--record-audio``: one stereo WAV, microphone left, agent right, on the session clock."""

from __future__ import annotations

import asyncio
import os
import stat
import wave
from pathlib import Path

import numpy as np
import pytest
from support.child import start_fishtalk

from fishtalk.engine.journal.audio import AudioRecorder
from fishtalk.engine.observe import AudioFrame
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import run_sim

FRAME = 480  # 10 ms at 48 kHz


def frame(channel: str, value: int, at: float) -> AudioFrame:
    data = np.full(FRAME, value, np.int16).tobytes()
    return AudioFrame(channel, data, 48_000, 1, at)  # type: ignore[arg-type]


def read_stereo(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as wav:
        assert wav.getnchannels() == 2
        assert wav.getsampwidth() == 2
        assert wav.getframerate() == 48_000
        data = wav.readframes(wav.getnframes())
    return np.frombuffer(data, np.int16).reshape(-1, 2)


def test_frames_land_on_their_side_at_their_time(tmp_path: Path) -> None:
    path = tmp_path / "call.wav"
    recorder = AudioRecorder(path, clock=lambda: 100.0)  # start = 100.0
    for i in range(10):  # mic: 0.00-0.10 s
        recorder.observe(frame("mic", 1000, 100.0 + 0.01 * (i + 1)))
    for i in range(10):  # agent: 0.50-0.60 s
        recorder.observe(frame("agent", -2000, 100.5 + 0.01 * (i + 1)))
    recorder.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    audio = read_stereo(path)
    assert len(audio) == int(0.6 * 48_000)
    left, right = audio[:, 0], audio[:, 1]
    assert (left[:4800] == 1000).all()
    assert (left[4800:] == 0).all()
    assert (right[:24_000] == 0).all()
    assert (right[24_000:28_800] == -2000).all()


def test_a_burst_is_laid_end_to_end_not_on_top(tmp_path: Path) -> None:
    path = tmp_path / "burst.wav"
    recorder = AudioRecorder(path, clock=lambda: 0.0)
    for value in (1, 2, 3):  # three frames handed over at the same moment
        recorder.observe(frame("agent", value, 0.01))
    recorder.close()
    right = read_stereo(path)[:, 1]
    assert list(right[::FRAME]) == [1, 2, 3]


SPEAKS = parse_scenario(
    """
    name = "speaks"
    then = "end"
    [agent]
    greeting = ""
    voice = "tones"
    [[steps]]
    do = "say"
    text = "Listen to these tones for a moment."
    [[steps]]
    do = "end"
    """,
    name="speaks",
)


@pytest.mark.webrtc
async def test_a_real_call_records_the_agent_on_the_right(tmp_path: Path) -> None:
    async with run_sim(scenarios={"speaks": SPEAKS}) as sim:
        env = dict(os.environ)
        env["FISH_API_KEY"] = sim.dev_key
        env["FISHTALK_CONFIG"] = str(tmp_path / "absent.toml")
        env["XDG_STATE_HOME"] = str(tmp_path / "state")
        proc = await start_fishtalk(
            "chat",
            "--agent",
            "speaks",
            "--api-url",
            sim.api_url,
            "--no-audio",
            "--plain",
            "--record-audio",
            env=env,
        )
        out, err = await asyncio.wait_for(proc.communicate(b""), 90)
        assert proc.returncode == 0, err.decode() + out.decode()
    directory = tmp_path / "state" / "fishtalk" / "journal"
    (journal,) = directory.glob("*.jsonl")
    wav = journal.with_suffix(".wav")
    audio = read_stereo(wav)
    assert len(audio) > 48_000 // 2  # the agent spoke for a while
    left, right = audio[:, 0], audio[:, 1]
    assert (left == 0).all()  # no microphone in this call
    assert np.abs(right.astype(np.int32)).max() > 1000  # the agent's tones
