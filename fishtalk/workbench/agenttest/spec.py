"""Test files for ``fishtalk test``: the TOML format, parsed and checked.

A test file holds one conversation to run against an agent and what to expect of it::

    name = "greets and answers"     # optional; defaults to the file name
    agent = "my-agent-id"           # optional; --agent wins
    timeout = 30                    # seconds each turn may take [30]
    text_only = true                # typed turns get text replies [true]
    greets = true                   # the agent speaks first; unless the first turn is
                                    # `listen`, its first line is taken before turn 1 [true]

    config_tools = false            # true: client tools without a fixture run through
                                    # your fishtalk config's tools [false]

    [tools.lookup_order]            # a client tool answered from a fixture:
    result = { status = "shipped" } # ... a result (any TOML value)
    # error = "no such order"       # ... or an error

    [[turns]]
    listen = true                   # wait for the agent's next line (its greeting)
    expect.contains = "hello"

    [[turns]]
    say = "Where is order 42?"      # a typed turn; waits for the agent's reply
    expect.tool_called = { name = "lookup_order", params = { id = "42" } }
    expect.regex = "shipped|on its way"

    [[turns]]
    speak = "question.wav"          # a spoken turn: the WAV file (16-bit PCM) is the mic
    lines = 1                       # how many agent lines make the reply [1]

    [[turns]]
    speak = "What is my balance?"   # text (anything not ending in .wav): spoken offline
    voice = "en-gb"                 # by this espeak-ng voice (the file's `voice`, else
                                    # espeak-ng's default), cached by text and voice

    [[turns]]
    wait = 1.5                      # or wait_for_state = "listening",
                                    # or wait_for_event = "tool_card_added"
    [[turns]]
    hangup = true

    [expect]                        # over the whole session
    no_errors = true
    end_reason = "user_hangup"
    judge = { command = ["my-judge"], criteria = "polite and on topic" }

A simulated caller (``caller = ["my-caller", "--persona", "impatient"]``, at most
``caller_turns`` lines, each within ``caller_timeout`` seconds) answers after the turns
(``turns`` may then be empty); it and the judge are the user's commands
(:mod:`~fishtalk.workbench.agenttest.external` gives their contract).

Expectations (per turn under ``expect``, or for the session under ``[expect]``) are listed
in :class:`~fishtalk.workbench.agenttest.expect.Expect`. Texts compare case- and
punctuation-insensitively unless ``case_sensitive`` / ``exact_punctuation`` say otherwise.

A file that does not follow the format raises :class:`TestFileError` naming the file, the
line and the key.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import (
    Field,
    JsonValue,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from fishtalk.core.errors import TestFileError
from fishtalk.core.validation import plain_message
from fishtalk.workbench.agenttest.expect import (
    MAX_COMMAND_TIMEOUT,
    Expect,
    _is_wav,
    _Model,
)

DEFAULT_TIMEOUT: Final = 30.0
"""Seconds each turn may take unless the file says otherwise."""


class Interrupt(_Model):
    """``interrupt = { after = "first_text", delay = 0.3 }``: interrupt the agent ``delay``
    seconds after its reply's first text, first audible audio, or ``speaking`` state."""

    after: Literal["first_text", "first_audio", "speaking"] = "first_text"
    delay: float = Field(default=0.0, ge=0, le=60)


class Turn(_Model):
    """One step of the conversation: exactly one of ``say``, ``speak``, ``listen``, ``wait``,
    ``wait_for_state``, ``wait_for_event``, ``hangup``."""

    say: str | None = Field(default=None, min_length=1)
    speak: str | None = Field(default=None, min_length=1)
    """Published as the microphone: a WAV file (relative to the test file) when it ends in
    ``.wav``, otherwise text spoken offline (:mod:`~fishtalk.workbench.agenttest.speaking`)."""
    voice: str | None = Field(default=None, min_length=1)
    """A ``speak`` text's espeak-ng voice (the file's ``voice`` when not set)."""
    listen: bool | None = None
    wait: float | None = Field(default=None, ge=0)
    wait_for_state: str | None = None
    wait_for_event: str | None = None
    hangup: bool | None = None
    interrupt_after: float | None = Field(default=None, ge=0)
    """``say``/``speak``: interrupt the agent this many seconds into its reply (after its
    first text)."""
    interrupt: Interrupt | None = None
    """``say``/``speak``: interrupt the reply, timed to an event (see :class:`Interrupt`)."""
    lines: int = Field(default=1, ge=1)
    """``say``, ``speak`` and ``listen``: how many agent lines make the reply."""
    timeout: float | None = Field(default=None, gt=0)
    expect: Expect = Field(default_factory=Expect)

    @model_validator(mode="after")
    def _one_action(self) -> Turn:
        actions = [
            k
            for k in (
                "say",
                "speak",
                "listen",
                "wait",
                "wait_for_state",
                "wait_for_event",
                "hangup",
            )
            if getattr(self, k) not in (None, False)
        ]
        if len(actions) != 1:
            raise ValueError(
                "a turn needs exactly one of say, speak, listen, wait, wait_for_state, "
                f"wait_for_event, hangup (got {', '.join(actions) or 'none'})"
            )
        if self.voice is not None and (actions[0] != "speak" or _is_wav(self.speak)):
            raise ValueError("voice goes with a speak turn whose value is text, not a WAV file")
        if self.interrupt_after is not None and actions[0] not in ("say", "speak"):
            raise ValueError("interrupt_after goes with a say or speak turn")
        if self.interrupt is not None and actions[0] not in ("say", "speak"):
            raise ValueError("interrupt goes with a say or speak turn")
        if self.interrupt is not None and self.interrupt_after is not None:
            raise ValueError("a turn has interrupt or interrupt_after, not both")
        if self.expect.stops_within is not None and self.interrupt is None:
            raise ValueError("expect.stops_within goes with a turn's interrupt")
        if self.expect.transcript_cut and self.interrupt is None and self.interrupt_after is None:
            raise ValueError("expect.transcript_cut goes with a turn's interrupt")
        if self.expect.max_heard is not None and actions[0] not in ("say", "speak"):
            raise ValueError(
                "expect.max_heard goes with a say or speak turn (only a user turn has a "
                "heard latency)"
            )
        if self.expect.checks_audio and actions[0] not in ("say", "speak", "listen"):
            raise ValueError(
                "spoken expectations go with a say, speak or listen turn (one with a reply)"
            )
        if self.expect.judge is not None:
            raise ValueError("expect.judge goes in the file's [expect]: it judges the session")
        if self.expect.p95_heard is not None:
            raise ValueError(
                "expect.p95_heard goes in the file's [expect]: it is over all the say and "
                "speak turns (and all runs with --repeat)"
            )
        if self.wait_for_event is not None:
            from fishtalk.core.events import KINDS

            if self.wait_for_event not in KINDS:
                raise ValueError(
                    f"unknown event kind {self.wait_for_event!r}; known: {', '.join(sorted(KINDS))}"
                )
        return self

    @property
    def action(self) -> str:
        """Which action this turn is."""
        for key in ("say", "speak", "listen", "wait", "wait_for_state", "wait_for_event", "hangup"):
            if getattr(self, key) not in (None, False):
                return key
        raise AssertionError("validated")

    def describe(self) -> str:
        """The turn in a few words, for reports."""
        action = self.action
        if action in ("say", "speak"):
            return f"{action} {getattr(self, action)!r}"
        if action in ("listen", "hangup"):
            return action
        return f"{action} {getattr(self, action)!r}"


class ToolFixture(_Model):
    """A client tool's canned answer: ``result`` or ``error``."""

    result: JsonValue = None
    error: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _one(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("result" in data) == ("error" in data):
            raise ValueError("a tool fixture needs exactly one of result, error")
        return data


class TestFile(_Model):
    """A whole test file."""

    __test__ = False  # not a pytest class

    name: str = ""
    agent: str | None = None
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0)
    text_only: bool = True
    voice: str = ""
    """The espeak-ng voice of ``speak`` texts (empty: espeak-ng's default); a ``.onnx``
    path is a piper voice (needs the ``piper`` extra)."""
    stt_model: str | None = Field(default=None, min_length=1)
    """Your own pocketsphinx model folder (relative to the test file) for hearing the
    agent's replies, instead of the bundled one (:mod:`fishtalk.speech.models`)."""
    greets: bool = True
    """The agent says something first: when the first turn is not ``listen``, the runner
    takes that line before it (so a ``say`` turn's reply is never the greeting)."""
    config_tools: bool = False
    """Client tools without a fixture run through the tools of the user's fishtalk config
    (tools with ``approve = "ask"`` are declined: nobody is there to answer)."""
    tools: dict[str, ToolFixture] = Field(default_factory=dict)
    caller: list[str] | None = Field(default=None, min_length=1)
    """A command answering each next user line after the turns (see the module doc)."""
    caller_turns: int = Field(default=10, ge=1, le=100)
    caller_timeout: float = Field(default=30.0, gt=0, le=MAX_COMMAND_TIMEOUT)
    turns: list[Turn] = Field(default_factory=list)
    expect: Expect = Field(default_factory=Expect)
    path: str = ""

    @model_validator(mode="after")
    def _something_to_do(self) -> TestFile:
        if not self.turns and self.caller is None:
            raise ValueError("a test needs [[turns]], a caller, or both")
        if self.text_only and (
            self.expect.checks_audio or any(t.expect.checks_audio for t in self.turns)
        ):
            raise ValueError(
                "audio checks and spoken expectations need text_only = false: text-only "
                "replies have no audio"
            )
        if self.caller is not None and not self.caller[0]:
            raise ValueError("caller: the command's program (its first item) is empty")
        if self.expect.transcript_cut:
            raise ValueError("expect.transcript_cut goes with a turn's interrupt, not [expect]")
        return self

    @field_validator("expect")
    @classmethod
    def _heard_needs_a_user_turn(cls, expect: Expect, info: ValidationInfo) -> Expect:
        turns = info.data.get("turns")
        if turns is None or (expect.max_heard is None and expect.p95_heard is None):
            return expect
        if not any(t.action in ("say", "speak") for t in turns):
            key = "max_heard" if expect.max_heard is not None else "p95_heard"
            raise ValueError(f"{key} needs a say or speak turn to measure")
        return expect

    @property
    def checks_sound(self) -> bool:
        """Whether the replies' audio is measured (a sound check, or an ``interrupt``)."""
        return self.expect.checks_sound or any(
            t.expect.checks_sound or t.interrupt is not None for t in self.turns
        )

    @property
    def checks_speech(self) -> bool:
        """Whether the replies' audio is heard offline (a check of what it says)."""
        return self.expect.checks_speech or any(t.expect.checks_speech for t in self.turns)

    @property
    def checks_audio(self) -> bool:
        """Whether the replies' audio is kept: measured, heard, or both."""
        return self.checks_sound or self.checks_speech

    def voice_of(self, turn: Turn) -> str:
        """The voice a ``speak`` text of ``turn`` is spoken in."""
        return turn.voice or self.voice

    @property
    def heard_budget(self) -> bool:
        """Whether any expectation is a heard-latency budget."""
        return (
            self.expect.max_heard is not None
            or self.expect.p95_heard is not None
            or any(t.expect.max_heard is not None for t in self.turns)
        )


_SYNTAX_LINE = re.compile(r"\(at line (\d+), column \d+\)")


def _line_of(text: str, loc: tuple[int | str, ...]) -> int | None:
    """Best effort: the line a validation error's location points at."""
    lines = text.splitlines()
    start = 0
    in_turn = False
    path = [p for p in loc if isinstance(p, str | int)]
    # Walk the array-of-tables headers ([[turns]] number N), then find the key after it.
    if len(path) >= 2 and path[0] == "turns" and isinstance(path[1], int):
        seen = -1
        for i, line in enumerate(lines):
            if line.strip() == "[[turns]]":
                seen += 1
                if seen == path[1]:
                    start, in_turn = i, True
                    break
        else:
            return None
        keys = [p for p in path[2:] if isinstance(p, str)]
    else:
        keys = [p for p in path if isinstance(p, str)]
    for key in reversed(keys):
        pattern = re.compile(rf"^\s*(\[+\s*)?([\w.\"-]*\.)?\"?{re.escape(key)}\"?\s*[=\].]")
        for i in range(start, len(lines)):
            if pattern.search(lines[i]):
                return i + 1
    return start + 1 if in_turn else None


def _key_of(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for p in loc:
        if isinstance(p, int):
            parts[-1:] = [f"{parts[-1]}[{p + 1}]"] if parts else [f"[{p + 1}]"]
        elif p in ("list[ToolCall]", "str", "list[str]") or ("[" in p and "(" in p):
            continue
        else:
            parts.append(p)
    return ".".join(parts) or "(top level)"


def parse_test(text: str, *, source: str = "<test>", name: str | None = None) -> TestFile:
    """A test from TOML text; raises :class:`TestFileError` (file, line, key) when bad."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _SYNTAX_LINE.search(str(exc))
        where = f"{source}:{found.group(1)}" if found else source
        message = _SYNTAX_LINE.sub("", str(exc)).strip()
        raise TestFileError(f"{where}: not valid TOML: {message}") from None
    data.setdefault("name", name or Path(source).stem)
    data["path"] = source
    try:
        return TestFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        line = _line_of(text, loc)
        where = f"{source}:{line}" if line else source
        message = plain_message(first)
        if first["type"] == "extra_forbidden":
            message = "unknown key"
        raise TestFileError(f"{where}: {_key_of(loc)}: {message}") from None


def load_test(path: str | Path) -> TestFile:
    """A test from a file."""
    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise TestFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise TestFileError(f"{path}: cannot read: {reason}") from None
    test = parse_test(text, source=str(path), name=path.stem)
    if test.checks_speech:
        from fishtalk.speech import stt

        stt.load_check()
    if test.stt_model is not None:
        _check_model(test, path, text)
    for index, turn in enumerate(test.turns):
        if turn.speak is not None:
            # Read each WAV and synthesise (into the cache) each text now: a bad one is
            # named with its line before any session opens.
            from fishtalk.speech.tts import SynthesisError
            from fishtalk.workbench.agenttest.speaking import clip
            from fishtalk.workbench.agenttest.wavmic import WavError

            try:
                clip(turn.speak, path.parent, test.voice_of(turn))
            except (WavError, SynthesisError) as exc:
                key = "voice" if isinstance(exc, SynthesisError) else "speak"
                line = _line_of(text, ("turns", index, key)) or _line_of(text, (key,))
                where = f"{path}:{line}" if line else str(path)
                detail = (
                    f"espeak-ng voice {test.voice_of(turn)!r}: {exc}" if key == "voice" else exc
                )
                raise TestFileError(f"{where}: turns[{index + 1}].{key}: {detail}") from None
    return test


def _check_model(test: TestFile, path: Path, text: str) -> None:
    """The file's ``stt_model`` is a pocketsphinx model whose package is installed."""
    from fishtalk.speech.models import ModelPathError, identify

    line = _line_of(text, ("stt_model",))
    where = f"{path}:{line}" if line else str(path)
    assert test.stt_model is not None
    try:
        model = identify(path.parent / test.stt_model)
    except ModelPathError as exc:
        raise TestFileError(f"{where}: stt_model: {exc}") from None
    model.require()  # SpeechUnavailableError: one line naming the extra (exit 2)
    if model.kind != "pocketsphinx":
        raise TestFileError(
            f"{where}: stt_model: a {model.kind} model; fishtalk hears with pocketsphinx "
            "models (its forced alignment is what the spoken checks rest on)"
        )


STARTER: Final = """\
# A fishtalk agent test: run it with `fishtalk test THIS_FILE --sim` (offline, against the
# built-in simulated agent) or `fishtalk test THIS_FILE --agent YOUR_AGENT_ID`.
name = "greets and answers"
# agent = "your-agent-id"     # or pass --agent
timeout = 30                  # seconds each turn may take
text_only = true              # typed turns get text replies
greets = true                 # the agent speaks first (false: it waits for the user)

# Client tools the agent may call, answered from fixtures (a result or an error).
# A call to a tool not declared here fails the test.
# [tools.lookup_order]
# result = { status = "shipped", eta = "tomorrow" }
# [tools.cancel_order]
# error = "orders cannot be cancelled once shipped"

[[turns]]
listen = true                 # the agent's greeting
expect.max_first_text = 10    # seconds until its first text

[[turns]]
say = "Hello there"           # a typed turn; waits for the agent's reply
expect.contains = "hello"     # case and punctuation do not matter
# expect.max_heard = 1.5      # seconds until its reply is heard (needs text_only = false)
# expect.regex = "hello|hi"
# expect.one_of = ["You said: hello there", "Hi!"]
# expect.tool_called = { name = "lookup_order", params = { id = "42" } }
# expect.tool_not_called = "cancel_order"

[[turns]]
hangup = true

[expect]                      # over the whole session
no_errors = true
end_reason = "user_hangup"
"""
"""What ``fishtalk test --init`` writes."""
