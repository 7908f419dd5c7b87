"""What a ``fishtalk test`` file expects: the ``expect`` tables (of a turn, or of the whole
session under ``[expect]``), the judge, and the pieces of the format they share."""

from __future__ import annotations

import re
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolCall(_Model):
    """A tool call to look for: its name, and params that must be a subset of the call's."""

    name: str = Field(min_length=1)
    params: dict[str, JsonValue] | None = None


def _as_calls(value: Any) -> Any:
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    return [{"name": item} if isinstance(item, str) else item for item in items]


def _is_wav(speak: str | None) -> bool:
    from fishtalk.workbench.agenttest.speaking import is_wav_path

    return speak is not None and is_wav_path(speak)


def _as_list(value: Any) -> Any:
    if isinstance(value, str):
        return [value]
    return value


MAX_COMMAND_TIMEOUT: Final = 120.0
"""The longest a caller or judge command may run (the tool runtime's cap)."""


class Judge(_Model):
    """A judge command and what it judges: it gets the transcript, returns a verdict."""

    command: list[str] = Field(min_length=1)
    criteria: str = Field(min_length=1)
    timeout: float = Field(default=60.0, gt=0, le=MAX_COMMAND_TIMEOUT)

    @field_validator("command")
    @classmethod
    def _program(cls, command: list[str]) -> list[str]:
        if not command[0]:
            raise ValueError("the command's program (its first item) is empty")
        return command


class Expect(_Model):
    """What a turn (or the whole session) must show.

    Reply text (a turn: the agent's lines during the turn; the session: all of them):
    ``contains`` (a string or a list, all must occur), ``not_contains``, ``contains_any``
    (a list, one must occur), ``one_of`` (the reply is one of these), ``regex`` (searched).
    Tools: ``tool_called`` / ``tool_not_called`` (a name, ``{name, params}`` with params a
    subset of the call's, or a list); server tools come from ``tool.*`` events, client
    tools from ``client_tool.call``. ``agent_states``: states seen in this order.
    ``interrupted``: an agent line was (true) or was not (false) cut short.
    ``no_errors``: no error event. ``end_reason`` (session). ``max_first_text``: seconds
    from the turn to the agent's first text; ``p95_first_text`` (session): the 95th
    percentile of the turns' first-text latency.
    The agent's audio (each reply's received audio, heard offline; needs
    ``text_only = false`` and the ``speech`` extra; see
    :mod:`~fishtalk.workbench.agenttest.listening`): ``spoken_contains`` (a string or a
    list: the audio says these words), ``audio_matches_text`` (0..1: the share of each
    reply's transcript the audio says, by alignment), ``no_silent_replies`` (no reply has
    a transcript but no speech). ``judge`` (session):
    ``{ command = [...], criteria = "..." }``, the judge's verdict on the transcript.
    Heard latency (the end of the user's turn to the agent heard, measured at the client;
    only ``say`` and ``speak`` turns have one): ``max_heard``: seconds, for the turn (or,
    under ``[expect]``, for every ``say``/``speak`` turn); ``p95_heard`` (session only):
    the 95th percentile over the ``say``/``speak`` turns, across all runs with
    ``--repeat``. A turn without a heard figure (e.g. a text-only reply) fails a heard
    budget, naming why.
    How replies sound (measured on the audio received; needs ``text_only = false``; see
    :mod:`fishtalk.core.conversation.reply_audio`), for the turn's replies or, under
    ``[expect]``, every reply: ``max_leading_silence``, ``max_gap`` (seconds),
    ``max_clipping`` (a share, 0..1), ``loudness_range`` (``[low, high]`` LUFS),
    ``max_talk_over`` (seconds), ``no_silent_replies`` (a reply with text has audible
    audio: the signal, not speech recognition), ``no_mismatch`` (no audio without a
    transcript, no transcript without audio); with a turn's ``interrupt``:
    ``stops_within`` (seconds from the interrupt to the agent's last audible frame) and
    ``transcript_cut`` (the cut reply's transcript holds only what its audio said, by
    alignment, with :data:`~fishtalk.workbench.agenttest.audiochecks.CUT_SLACK` words of
    slack for the word the cut fell in and the next; needs the ``speech`` extra).
    """

    contains: list[str] | None = None
    not_contains: list[str] | None = None
    contains_any: list[str] | None = None
    one_of: list[str] | None = None
    regex: str | None = None
    case_sensitive: bool = False
    exact_punctuation: bool = False
    tool_called: list[ToolCall] | None = None
    tool_not_called: list[ToolCall] | None = None
    agent_states: list[str] | None = None
    no_errors: bool = False
    interrupted: bool | None = None
    end_reason: str | None = None
    max_first_text: float | None = Field(default=None, gt=0)
    p95_first_text: float | None = Field(default=None, gt=0)
    max_heard: float | None = Field(default=None, gt=0)
    p95_heard: float | None = Field(default=None, gt=0)
    max_leading_silence: float | None = Field(default=None, ge=0)
    max_gap: float | None = Field(default=None, gt=0)
    max_clipping: float | None = Field(default=None, ge=0, le=1)
    loudness_range: tuple[float, float] | None = None
    max_talk_over: float | None = Field(default=None, ge=0)
    no_silent_replies: bool = False
    no_mismatch: bool = False
    stops_within: float | None = Field(default=None, gt=0)
    transcript_cut: bool = False
    judge: Judge | None = None
    spoken_contains: list[str] | None = None
    audio_matches_text: float | None = Field(default=None, gt=0, le=1)

    @model_validator(mode="before")
    @classmethod
    def _shapes(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for key in ("contains", "not_contains", "spoken_contains"):
                if key in data:
                    data[key] = _as_list(data[key])
            for key in ("tool_called", "tool_not_called"):
                if key in data:
                    data[key] = _as_calls(data[key])
        return data

    @model_validator(mode="after")
    def _regex_compiles(self) -> Expect:
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"regex does not compile: {exc}") from None
        span = self.loudness_range
        if span is not None and span[0] > span[1]:
            raise ValueError("loudness_range is [low, high] (LUFS), low first")
        return self

    @property
    def checks_sound(self) -> bool:
        """Whether any expectation is about how the replies sound (measured on the signal,
        :mod:`fishtalk.engine.replyaudio`)."""
        return (
            self.no_silent_replies
            or self.no_mismatch
            or any(
                v is not None
                for v in (
                    self.max_leading_silence,
                    self.max_gap,
                    self.max_clipping,
                    self.loudness_range,
                    self.max_talk_over,
                    self.stops_within,
                )
            )
        )

    @property
    def checks_speech(self) -> bool:
        """Whether any expectation is about what the agent's audio says (heard offline,
        :mod:`fishtalk.workbench.agenttest.listening`)."""
        return bool(
            self.spoken_contains
            or self.audio_matches_text is not None
            or self.no_silent_replies
            or self.transcript_cut
        )

    @property
    def checks_audio(self) -> bool:
        """Whether any expectation needs the replies' audio."""
        return self.checks_sound or self.checks_speech

    @property
    def checks_reply(self) -> bool:
        """Whether any expectation is about the reply text."""
        return any(
            v is not None
            for v in (self.contains, self.not_contains, self.contains_any, self.one_of, self.regex)
        )


__all__ = ["MAX_COMMAND_TIMEOUT", "Expect", "Judge", "ToolCall"]
