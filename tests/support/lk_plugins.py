"""Local, deterministic livekit-agents plugins for the interop suite (the ``interop`` extra).

A livekit-agents ``AgentSession`` needs an STT, an LLM and a TTS; these answer the same
way every run and reach no network:

* :class:`ScriptedLLM`: answers from a table (the first key found in the user's last
  turn, lower case), calls a function tool when the table says so, and after a tool's
  output says what came back. Replies stream one word per chunk, as real LLMs do.
* :class:`EspeakTTS`: espeak-ng through :mod:`fishtalk.speech.tts` (one process a line).
* :class:`EnergySTT`: a streaming STT that hears sound, not words: while the user's audio is
  louder than -40 dBFS it sends an interim transcript every 0.5 s of sound ("hearing 0.5 s
  of sound"), and after 0.4 s of quiet a final one ("heard 1.2 s of sound"): interim then
  final, as a cloud STT does.

Silero VAD comes from ``livekit-plugins-silero``, whose wheel ships the model.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from livekit import rtc
from livekit.agents import APIConnectOptions, llm, stt, tts
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, NOT_GIVEN, NotGivenOr

from fishtalk.speech.tts import Espeak

SAMPLE_RATE = 24000


@dataclass(frozen=True)
class ToolCall:
    """A table entry that calls a function tool instead of answering."""

    name: str
    arguments: Mapping[str, Any]


Answer = str | ToolCall


class ScriptedLLM(llm.LLM):
    """An LLM that answers from ``table`` (see the module docs); ``default`` otherwise."""

    def __init__(self, table: Mapping[str, Answer], *, default: str = "I heard you.") -> None:
        super().__init__()
        self.table = dict(table)
        self.default = default

    @property
    def model(self) -> str:
        return "scripted"

    def chat(
        self,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[llm.Tool] | None = None,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
        parallel_tool_calls: NotGivenOr[bool] = NOT_GIVEN,
        tool_choice: NotGivenOr[llm.ToolChoice] = NOT_GIVEN,
        extra_kwargs: NotGivenOr[dict[str, Any]] = NOT_GIVEN,
    ) -> llm.LLMStream:
        return _ScriptedStream(
            self, chat_ctx=chat_ctx, tools=tools or [], conn_options=conn_options
        )

    def answer(self, chat_ctx: llm.ChatContext) -> Answer:
        """What to do for the conversation so far."""
        items = chat_ctx.items
        if items and items[-1].type == "function_call_output":
            return f"The {items[-1].name} tool said {items[-1].output}."
        said = ""
        for item in reversed(items):
            if item.type == "message" and item.role == "user":
                said = (item.text_content or "").lower()
                break
        for key, answer in self.table.items():
            if key in said:
                return answer
        return self.default


class _ScriptedStream(llm.LLMStream):
    async def _run(self) -> None:
        assert isinstance(self._llm, ScriptedLLM)
        answer = self._llm.answer(self._chat_ctx)
        request = "scripted-" + uuid.uuid4().hex[:8]
        if isinstance(answer, ToolCall):
            call = llm.FunctionToolCall(
                name=answer.name,
                arguments=json.dumps(dict(answer.arguments)),
                call_id="call_" + uuid.uuid4().hex[:8],
            )
            delta = llm.ChoiceDelta(role="assistant", tool_calls=[call])
            self._event_ch.send_nowait(llm.ChatChunk(id=request, delta=delta))
            return
        words = answer.split(" ")
        for i, word in enumerate(words):
            piece = word if i == len(words) - 1 else word + " "
            delta = llm.ChoiceDelta(role="assistant", content=piece)
            self._event_ch.send_nowait(llm.ChatChunk(id=request, delta=delta))


class EspeakTTS(tts.TTS):
    """espeak-ng at :data:`SAMPLE_RATE`, mono (whole lines: not streaming)."""

    def __init__(self, voice: Espeak | None = None) -> None:
        super().__init__(
            capabilities=tts.TTSCapabilities(streaming=False),
            sample_rate=SAMPLE_RATE,
            num_channels=1,
        )
        self.voice = voice or Espeak.find(words_per_minute=200)

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> tts.ChunkedStream:
        return _EspeakStream(tts=self, input_text=text, conn_options=conn_options)


class _EspeakStream(tts.ChunkedStream):
    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        assert isinstance(self._tts, EspeakTTS)
        pcm = await self._tts.voice.synthesize_async(self._input_text, SAMPLE_RATE)
        output_emitter.initialize(
            request_id=uuid.uuid4().hex[:8],
            sample_rate=SAMPLE_RATE,
            num_channels=1,
            mime_type="audio/pcm",
        )
        output_emitter.push(pcm.tobytes())
        output_emitter.flush()


SOUND_DBFS = -40.0
INTERIM_EVERY = 0.5
QUIET_AFTER = 0.4


class EnergySTT(stt.STT):
    """Hears sound, not words (see the module docs)."""

    def __init__(self) -> None:
        super().__init__(capabilities=stt.STTCapabilities(streaming=True, interim_results=True))

    async def _recognize_impl(
        self,
        buffer: Any,
        *,
        language: NotGivenOr[str] = NOT_GIVEN,
        conn_options: APIConnectOptions,
    ) -> stt.SpeechEvent:
        raise NotImplementedError("EnergySTT only streams")

    def stream(
        self,
        *,
        language: NotGivenOr[str] = NOT_GIVEN,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
    ) -> stt.RecognizeStream:
        return _EnergyStream(stt=self, conn_options=conn_options, sample_rate=16000)


def _dbfs(frame: rtc.AudioFrame) -> float:
    samples = np.frombuffer(bytes(frame.data), dtype=np.int16).astype(np.float64)
    if samples.size == 0:
        return -120.0
    rms = math.sqrt(float(np.mean(samples * samples))) / 32768.0
    return 20.0 * math.log10(max(rms, 1e-6))


class _EnergyStream(stt.RecognizeStream):
    async def _run(self) -> None:
        sound = quiet = 0.0
        next_interim = INTERIM_EVERY
        async for frame in self._input_ch:
            if not isinstance(frame, rtc.AudioFrame):
                continue
            seconds = frame.samples_per_channel / frame.sample_rate
            if _dbfs(frame) > SOUND_DBFS:
                if sound == 0.0:
                    self._send(stt.SpeechEventType.START_OF_SPEECH, "")
                sound += seconds
                quiet = 0.0
                if sound >= next_interim:
                    self._send(
                        stt.SpeechEventType.INTERIM_TRANSCRIPT, f"hearing {sound:.1f} s of sound"
                    )
                    next_interim += INTERIM_EVERY
            elif sound > 0.0:
                quiet += seconds
                if quiet >= QUIET_AFTER:
                    self._send(
                        stt.SpeechEventType.FINAL_TRANSCRIPT, f"heard {sound:.1f} s of sound"
                    )
                    self._send(stt.SpeechEventType.END_OF_SPEECH, "")
                    sound = quiet = 0.0
                    next_interim = INTERIM_EVERY

    def _send(self, kind: stt.SpeechEventType, text: str) -> None:
        data = [stt.SpeechData(language="en", text=text, confidence=1.0)] if text else []
        self._event_ch.send_nowait(stt.SpeechEvent(type=kind, alternatives=data))


__all__ = ["SAMPLE_RATE", "EnergySTT", "EspeakTTS", "ScriptedLLM", "ToolCall"]
