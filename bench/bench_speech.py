"""Offline speech speed: real-time factors of speech-to-text and text-to-speech on one core.

For short utterances (espeak-ng, en-us, 165 words a minute) it measures, pinned to one CPU
where the platform allows it:

* STT: CPU seconds per second of audio for grammar decoding (the sim's commands),
  alignment of the true text, and free decoding (goal: at most 0.5x real time);
* TTS: wall seconds (espeak-ng runs as a child process) per second of audio produced, at
  16 and 48 kHz (goal: at most 0.2x);
* the sim's speech-to-text CPU per spoken turn: the interims (grammar decoding of the
  growing utterance every 0.5 s) plus the final decoding, as
  :mod:`fishtalk.sim.fish.hearing` does them. WebRTC receive and Opus decoding are not in
  it (bench_sim.py measures the sim's transport).

Prints one markdown section. Needs espeak-ng and the ``speech`` extra.
"""

from __future__ import annotations

import os
import resource
import statistics
import time

from fishtalk.sim.fish.hearing import SPOKEN_COMMANDS, Ears
from fishtalk.speech import stt
from fishtalk.speech.pcm import STT_RATE
from fishtalk.speech.tts import Espeak

UTTERANCES = (
    "call get time",
    "goodbye",
    "what is my balance",
    "hello there how are you",
    "please book a table for two at seven tonight",
)
RUNS = 5
INTERIM_EVERY = 0.5


def _pin_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned (no sched_setaffinity here)"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    pinned = _pin_one_core()
    voice = Espeak.find(voice="en-us")
    load_start = time.process_time()
    recognizer = stt.load()
    load_cpu = time.process_time() - load_start
    phrases = list(SPOKEN_COMMANDS)
    rows: list[tuple[str, float, float, float, float, float, float]] = []
    for text in UTTERANCES:
        audio = voice.synthesize(text, STT_RATE)
        seconds = audio.size / STT_RATE
        kinds = ("grammar", "align", "free", "tts16", "tts48")
        cost: dict[str, list[float]] = {k: [] for k in kinds}
        for _ in range(RUNS):
            for name in ("grammar", "align", "free"):
                start = time.process_time()
                if name == "grammar":
                    recognizer.grammar(audio, STT_RATE, phrases)
                elif name == "align":
                    recognizer.align(audio, STT_RATE, text)
                else:
                    recognizer.free(audio, STT_RATE)
                cost[name].append((time.process_time() - start) / seconds)
            for name, rate in (("tts16", 16_000), ("tts48", 48_000)):
                start = time.perf_counter()
                out = voice.synthesize(text, rate)
                cost[name].append((time.perf_counter() - start) / (out.size / rate))
        g, a, f, t16, t48 = (statistics.median(cost[k]) for k in kinds)
        rows.append((text, seconds, g, a, f, t16, t48))

    ears = Ears()
    ears._understand(voice.synthesize("goodbye", 48_000), 48_000, True)  # load once
    turn_audio = voice.synthesize("call get time", 48_000)
    turn_cpu: list[float] = []
    for _ in range(RUNS):
        start = time.process_time()
        step = int(INTERIM_EVERY * 48_000)
        for end in range(step, turn_audio.size, step):
            ears._understand(turn_audio[:end], 48_000, False)
        ears._understand(turn_audio, 48_000, True)
        turn_cpu.append(time.process_time() - start)
    tts_child = _children_cpu()

    print("## Offline speech")
    print(
        "<!-- lead: Real-time factors of offline STT (pocketsphinx grammar, alignment, free "
        "decoding) and TTS (espeak-ng) on one core, and the sim's CPU per spoken turn. -->"
    )
    worst = {k: max(row[i] for row in rows) for i, k in enumerate(("g", "a", "f", "t16"), 2)}
    for label, key, goal in (
        ("STT grammar search, worst utterance (CPU per audio second)", "g", "≤0.5x"),
        ("STT alignment of a known text, worst utterance", "a", "≤0.5x"),
        ("STT free decoding, worst utterance", "f", "≤0.5x"),
        ("TTS espeak-ng 16 kHz, worst utterance (wall per audio second)", "t16", "≤0.2x"),
    ):
        print(f"<!-- summary: {label} | {worst[key]:.3f}x | real time 1x | – | {goal} -->")
    print(
        f"<!-- summary: sim CPU per spoken turn (1.3 s) | "
        f"{statistics.median(turn_cpu) * 1000:.0f} ms | – | – | – -->\n"
    )
    print(f"One core ({pinned}); espeak-ng en-us at 165 wpm; medians of {RUNS} runs.")
    print(f"pocketsphinx model load: {load_cpu:.2f} s CPU, once per process.\n")
    print("| utterance | audio s | STT grammar | STT align | STT free | TTS 16k | TTS 48k |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for text, seconds, *rtf in rows:
        cells = " | ".join(f"{x:.3f}x" for x in rtf)
        print(f"| {text} | {seconds:.2f} | {cells} |")
    print(
        f"\nSTT is CPU time per audio second (goal ≤0.5x); TTS is wall time per audio second"
        f" of the espeak-ng child (goal ≤0.2x; its children used {tts_child:.2f} s CPU in all)."
    )
    print(
        f'\nSim speech-to-text CPU per spoken turn ("call get time", '
        f"{turn_audio.size / 48_000:.2f} s, interims every {INTERIM_EVERY} s + final): "
        f"{statistics.median(turn_cpu) * 1000:.0f} ms."
    )


if __name__ == "__main__":
    main()
