"""The page's audio is small (issue 26, outcome 5): Ogg Opus, not the recording's PCM.

The 30-minute figures (page size against the journal, open time in Chromium) are in
bench/bench_report.py; this checks the mechanism on a short recording, with no timing.
"""

from __future__ import annotations

import base64
import io
import wave
from pathlib import Path

import av
import numpy as np

from fishtalk.workbench.reports.audio import CODEC, load_audio

from .hostile import write_recording


def test_the_page_carries_ogg_opus_a_tiny_fraction_of_the_pcm(tmp_path: Path) -> None:
    wav = write_recording(tmp_path / "call.wav", seconds=20.0)
    audio = load_audio(wav)
    assert audio is not None
    assert audio.codec == CODEC
    prefix = "data:audio/ogg;codecs=opus;base64,"
    assert audio.data_url.startswith(prefix)
    opus = base64.b64decode(audio.data_url[len(prefix) :])
    pcm_16k = 20 * 16_000 * 2 * 2  # what the page carried before: 16 kHz stereo WAV
    assert len(opus) < pcm_16k / 20
    # It decodes to the same call: 20 s, stereo, the tone on the left first.
    with av.open(io.BytesIO(opus)) as container:
        decoded = np.concatenate(
            [
                frame.to_ndarray().T
                if frame.format.is_planar
                else frame.to_ndarray().reshape(-1, 2)
                for frame in container.decode(audio=0)
            ]
        )
        rate = container.streams.audio[0].rate
    assert abs(decoded.shape[0] / rate - 20.0) < 0.1
    early = decoded[int(0.8 * rate) : int(1.5 * rate)]
    assert np.abs(early[:, 0]).mean() > 10 * max(np.abs(early[:, 1]).mean(), 1e-6)
    assert audio.duration == 20.0


def test_an_unreadable_recording_leaves_the_page_without_audio(tmp_path: Path) -> None:
    bad = tmp_path / "bad.wav"
    with wave.open(str(bad), "wb") as out:
        out.setnchannels(2)
        out.setsampwidth(1)  # 8-bit: not what --record-audio writes
        out.setframerate(8000)
        out.writeframes(b"\x80" * 1600)
    assert load_audio(bad) is None


def test_the_start_time_reads_as_a_date_and_a_time() -> None:
    from fishtalk.workbench.reports.session import when

    assert when("2026-12-02T02:22:02.826+00:00") == "2026-12-02 02:22:02 +00:00"
    assert when("2026-12-02T18:36:00+05:30") == "2026-12-02 18:36:00 +05:30"
    assert when("not a time <b>") == "not a time <b>"  # escaped by the page, shown as is
    assert when(None) == "?"
