"""What measuring each reply's audio costs (issue 29): CPU per second of call.

A call of :data:`CALL_SECONDS` is replayed as fast as it goes, on one thread, through
exactly what the session does with reply audio: every 10 ms agent frame (48 kHz mono,
a 5 s reply of tones with pauses every 8 s, silence between) into
:class:`~fishtalk.engine.replyaudio.ReplyAudio` (its level, its reply), every mic frame's
level, the reducer's states as the agent's lines open and close, and the
:class:`~fishtalk.engine.replyaudio.ReplyReporter`'s look every quarter second with each
reply's measures (gaps, clipping, BS.1770 loudness by pyloudnorm when installed) once it
is over; in the CLI's ``measure`` mode (audio let go once measured). The figure is that
CPU time over the call's length: the share of one core the measurement takes during a
call. The goal is at most 2 %. Nothing of it runs in a PortAudio callback.
"""

from __future__ import annotations

import math
import time

import numpy as np

from fishtalk.core import conversation as conv
from fishtalk.core import protocol as p
from fishtalk.engine.replyaudio import ReplyAudio, ReplyReporter
from fishtalk.engine.replyaudio.measure import warm_up

CALL_SECONDS = 120
FRAME = 480
RUNS = 5


def _frames() -> tuple[bytes, bytes]:
    t = np.arange(FRAME) / 48_000
    voiced = (np.sin(2 * math.pi * 300 * t) * 8000).astype(np.int16).tobytes()
    return voiced, np.zeros(FRAME, np.int16).tobytes()


def one_call() -> tuple[float, int]:
    """CPU seconds for one call, and the replies measured."""
    voiced, silent = _frames()
    capture = ReplyAudio(keep_audio=False)
    reporter = ReplyReporter(capture)
    state = conv.initial_state(spoken=True)
    state, _ = conv.reduce(state, conv.Connected(local_identity="me", at=0.0))
    state, _ = conv.reduce(
        state,
        conv.ParticipantJoined(identity="agent", at=0.0, attributes={p.ATTR_AGENT_STATE: "idle"}),
    )
    capture.state(state)
    reported = 0
    started = time.process_time()
    for i in range(CALL_SECONDS * 100):
        now = i / 100
        phase = now % 8.0
        if phase == 0.0 or phase == 5.0:
            n = int(now // 8)
            speaking = phase == 0.0
            sid = f"s-{n}"
            inputs: list[conv.Input] = [
                conv.AttributesChanged(
                    "agent",
                    {p.ATTR_AGENT_STATE: "speaking" if speaking else "listening"},
                    at=now,
                )
            ]
            if speaking:
                inputs += [
                    conv.TranscriptStreamOpened(sid, f"a-{n}", "agent", final=False, at=now),
                    conv.TranscriptStreamChunk(sid, f"a-{n}", "Some words here.", at=now),
                ]
            else:
                inputs.append(conv.TranscriptStreamClosed(sid, f"a-{n}", at=now, final=True))
            for inp in inputs:
                state, _ = conv.reduce(state, inp)
            capture.state(state)
        audible = phase < 5.0 and (phase % 0.5) < 0.4
        capture.agent_frame(now, voiced if audible else silent, 48_000, 1, played=True)
        capture.mic_frame(now, silent)
        for report in reporter.tick(state, now):
            state, _ = conv.reduce(state, conv.ReplyAudioMeasured(report, now))
            capture.state(state)
            reported += 1
    return time.process_time() - started, reported


def main() -> None:
    warm_up()
    cpu = []
    replies = 0
    for _ in range(RUNS):
        seconds, replies = one_call()
        cpu.append(seconds)
    best, median = min(cpu), sorted(cpu)[len(cpu) // 2]
    share = median / CALL_SECONDS
    try:
        import pyloudnorm  # noqa: F401

        loudness = "with pyloudnorm"
    except ImportError:
        loudness = "without pyloudnorm (loudness not measured)"
    print("## Reply audio measurement")
    print(
        "<!-- lead: The CPU share of one core that measuring each reply's audio costs during "
        "a call (goal ≤2%). -->"
    )
    print()
    print(
        f"<!-- summary: reply audio measurement, CPU share of one core | {share:.2%} | "
        f"goal | | ≤2% -->"
    )
    print()
    print(__doc__.split("\n\n")[1].replace("\n", " "))
    print()
    print("| call | replies measured | CPU median s | CPU best s | share of one core |")
    print("|---|---:|---:|---:|---:|")
    print(f"| {CALL_SECONDS} s, {loudness} | {replies} | {median:.3f} | {best:.3f} | {share:.2%} |")


if __name__ == "__main__":
    main()
