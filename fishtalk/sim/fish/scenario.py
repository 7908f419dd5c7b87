"""Scenario files: what the simulated Fish agent does, step by step.

A scenario is a TOML file (stdlib ``tomllib``; no code runs from it). Top level::

    name = "my-test"                  # optional; defaults to the file name
    description = "What this shows"   # optional
    then = "converse"                 # after the last step: "converse" (default) keeps
                                      # answering the user; "listen" stays silent until
                                      # the user hangs up; "end" ends the session
                                      # (session.ended {reason: agent_hangup})

    [agent]                           # all optional
    greeting = "Hi there!"            # said once the user joins ("" for none); a
                                      # session's overrides.first_message wins
    greeting_audio = true             # false: the greeting is text-only
    voice = "auto"                    # "auto" (espeak-ng when installed), "tones", "espeak"
    idle_seconds = 20.0               # quiet time before the agent re-engages (0: never);
                                      # user.activity and user turns reset it
    max_duration_seconds = 1800       # the grant's max duration; at it the agent sends
                                      # session.ended {reason: conversation_timeout}
    tool_deadline_seconds = 30.0      # server-side wait for a client_tool.result
    answer_during_steps = false       # true: a user turn that arrives while steps run
                                      # is answered before the next step (then the
                                      # steps carry on)
    listen = "sound"                  # "speech": offline speech-to-text of the mic (the
                                      # `speech` extra; without it, as "sound": the sound
                                      # is described, "heard 1.2 s of sound ...")

    # Timings (what the heard-latency tests and benchmarks inject):
    think_seconds = 0.4               # a reply to a user turn: `thinking` is shown this
                                      # long before its first transcript chunk (0-60)
    first_audio_delay_seconds = 0.0   # every spoken line: its first transcript chunk is
                                      # written, then this long passes before its first
                                      # audio frame (0-60)
    audio_chunk_ms = 20               # audio is fed to the voice track in chunks of this
                                      # many ms (10-200, a multiple of 10)
    audio_realtime_factor = 1.0       # wall seconds taken to feed one second of audio:
                                      # 1.0 real time; 2.0 a chunk every twice its length
                                      # (a voice that cannot keep up: the listener hears
                                      # gaps) (1-10)
    # Audio defects (what the audio checks of `fishtalk test` are tested against):
    voice_gain_db = 0.0               # every spoken line's gain, clipped to 16 bits
                                      # (-30: a quiet voice; +20: clipping) (-60-40)
    gap_seconds = 0.0                 # silence in the middle of every spoken line (0-30)
    ignore_interrupt_seconds = 0.0    # the voice goes on this long after an interrupt
    talk_over_seconds = 0.0           # the agent talks over the user this long after
                                      # they start speaking (0: never)
    transcript_uncut = false          # true: each spoken line's whole text is written as
                                      # its audio starts, so a cut line's segment keeps
                                      # words its voice never said

    [[steps]]                         # run in order; each has a `do` key
    do = "say"
    text = "Hello."

Steps (``do = ...`` and their fields, defaults in brackets):

``say``              ``text``; ``audio`` [true] (false: transcript only, no speech);
                     ``sound``: what the audio says instead of ``text``, word for word
                     beside it (a voice drifting from its transcript, to test audio
                     checks).
``state``            ``value``: any ``lk.agent.state`` string (set as is).
``client_tool``      ``name``; ``params`` [{}]; ``expects_response`` [true];
                     ``timeout`` [agent deadline] seconds; ``call_id`` [generated];
                     ``announce`` [true]: say what came back (or that nothing did).
``tool``             the agent's own tool, as tool.started then, after ``duration``
                     [0.3] s, tool.completed (or tool.failed when ``error`` is set):
                     ``name``; ``source`` ["webhook"]; ``input`` / ``output`` (any TOML
                     value; strings are sent as is, others JSON-serialised);
                     ``pad_input_bytes`` / ``pad_output_bytes`` [0] grow the payload to
                     that size (over 4096 it is truncated and flagged); ``node_id``.
``raw``              one agent-event data packet sent as is: exactly one of
                     ``payload`` (text), ``payload_hex`` (bytes, e.g. invalid UTF-8) or
                     ``json`` (a table: unknown types, missing fields); ``topic``
                     ["agent-event"].
``user_transcript``  a user segment under the user's identity: each of ``interim``
                     [[]] replaces the text, ``interval`` [0.3] s apart, then
                     ``final`` (optional).
``error``            an ``error`` event: ``code`` ["provider_error"], ``message``.
``wait_for``         wait for a client event of type ``event`` (e.g. "user.message",
                     "user.activity", "client_tool.result") for ``timeout`` [30] s;
                     ``on_timeout`` ["continue"] or "end".
``drop_signalling``  close the user's signalling socket (the SDK resumes on its own, and
                     reports ``reconnected`` about 3 s later: follow with a ``sleep``).
``reconnect``        make the user's SDK rejoin in full (Leave action=RECONNECT); the step
                     ends once the user is back (or after 20 s).
``end``              session.ended {``reason`` ["agent_hangup"]}, then the agent leaves.
``sleep``            ``seconds``.

The timings of the ``[agent]`` table can also be set for any scenario, the built-in ones
included, without editing it: :meth:`Scenario.with_agent` (or ``run_sim(agent_overrides=...)``,
which applies them to every scenario the sim plays; ``fishtalk sim serve --agent-setting
KEY=VALUE``). Bad values fail as bad TOML does: one line naming the setting.

Texts of ``say`` steps and the greeting may hold ``{{name}}`` placeholders, filled from the
session's ``dynamic_variables`` (left as is when unset).

While steps run, ``user.interrupt``, ``user.hangup`` and ``client_tool.result`` are
always honoured; typed user turns not consumed by ``wait_for`` are answered once the
steps are done (with ``then = "converse"``), or between two steps with
``answer_during_steps = true``.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from fishtalk.core.errors import ScenarioError
from fishtalk.core.validation import plain_message


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AgentSettings(_Model):
    """The ``[agent]`` table: how the agent behaves outside the steps."""

    greeting: str = (
        "Hi! I'm the fishtalk simulated agent. Say something, or type a message, and I'll answer."
    )
    greeting_audio: bool = True
    voice: Literal["auto", "tones", "espeak"] = "auto"
    idle_seconds: float = Field(default=20.0, ge=0)
    max_duration_seconds: int | None = Field(default=None, ge=1, le=3600)
    tool_deadline_seconds: float = Field(default=30.0, gt=0, le=120)
    answer_during_steps: bool = False
    """Answer user turns between steps instead of after the last one."""
    listen: Literal["sound", "speech"] = "sound"
    """``speech``: transcribe the user's mic offline (:mod:`~fishtalk.sim.fish.hearing`)."""
    think_seconds: float = Field(default=0.4, ge=0, le=60)
    """How long ``thinking`` is shown before a reply's first transcript chunk."""
    first_audio_delay_seconds: float = Field(default=0.0, ge=0, le=60)
    """Between a spoken line's first transcript chunk and its first audio frame."""
    audio_chunk_ms: int = Field(default=20, ge=10, le=200, multiple_of=10)
    """Length of the audio chunks fed to the voice track."""
    audio_realtime_factor: float = Field(default=1.0, ge=1, le=10)
    """Wall seconds taken to feed one second of audio (1.0: real time)."""
    # Audio defects (issue 29's checks are tested against them):
    voice_gain_db: float = Field(default=0.0, ge=-60, le=40)
    """Every spoken line's gain, hard-clipped to 16 bits (-30: quiet; +20: clipping)."""
    gap_seconds: float = Field(default=0.0, ge=0, le=30)
    """Silence fed in the middle of every spoken line (after its middle word): a stall."""
    ignore_interrupt_seconds: float = Field(default=0.0, ge=0, le=30)
    """After an interrupt, the voice goes on this long before it stops."""
    talk_over_seconds: float = Field(default=0.0, ge=0, le=30)
    """This long after the user starts speaking, the agent talks over them (0: never)."""
    transcript_uncut: bool = False
    """Each spoken line's whole text is written as its audio starts (text ahead of the
    voice): an interrupted line's segment keeps words its voice never said, breaking the
    protocol's promise that it holds only what was spoken."""


class Say(_Model):
    """Speak (or, with ``audio = false``, only write) a line."""

    do: Literal["say"]
    text: str = Field(min_length=1)
    audio: bool = True
    sound: str | None = Field(default=None, min_length=1)
    """What the audio says instead of ``text`` (a voice that drifts from its transcript)."""


class SetState(_Model):
    """Set the ``lk.agent.state`` attribute."""

    do: Literal["state"]
    value: str = Field(min_length=1)


class CallClientTool(_Model):
    """Send ``client_tool.call`` and (maybe) wait for the result."""

    do: Literal["client_tool"]
    name: str = Field(min_length=1)
    params: dict[str, JsonValue] = Field(default_factory=dict)
    expects_response: bool = True
    timeout: float | None = Field(default=None, gt=0, le=120)
    call_id: str | None = None
    announce: bool = True


class ToolRun(_Model):
    """One of the agent's own tools: tool.started, then tool.completed or tool.failed."""

    do: Literal["tool"]
    name: str = Field(min_length=1)
    source: str = "webhook"
    input: JsonValue = None
    output: JsonValue = None
    error: str | None = None
    duration: float = Field(default=0.3, ge=0)
    pad_input_bytes: int = Field(default=0, ge=0, le=1_000_000)
    pad_output_bytes: int = Field(default=0, ge=0, le=1_000_000)
    node_id: str | None = None


class Raw(_Model):
    """A data packet sent exactly as written."""

    do: Literal["raw"]
    payload: str | None = None
    payload_hex: str | None = None
    json_: dict[str, JsonValue] | None = Field(default=None, alias="json")
    topic: str = "agent-event"

    @model_validator(mode="after")
    def _one_payload(self) -> Raw:
        given = [v for v in (self.payload, self.payload_hex, self.json_) if v is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of payload, payload_hex or json")
        if self.payload_hex is not None:
            try:
                bytes.fromhex(self.payload_hex)
            except ValueError:
                raise ValueError("payload_hex is not hexadecimal") from None
        return self

    def data(self) -> bytes:
        """The packet's bytes."""
        import json

        if self.payload is not None:
            return self.payload.encode("utf-8")
        if self.payload_hex is not None:
            return bytes.fromhex(self.payload_hex)
        return json.dumps(self.json_, separators=(",", ":")).encode("utf-8")


class UserTranscript(_Model):
    """A user transcript segment published under the user's identity."""

    do: Literal["user_transcript"]
    interim: list[str] = Field(default_factory=list)
    final: str | None = None
    interval: float = Field(default=0.3, ge=0)

    @model_validator(mode="after")
    def _something(self) -> UserTranscript:
        if not self.interim and self.final is None:
            raise ValueError("give interim texts, a final text, or both")
        return self


class SendError(_Model):
    """An ``error`` agent event."""

    do: Literal["error"]
    code: str = "provider_error"
    message: str | None = None


class WaitFor(_Model):
    """Wait for a client event of a given type."""

    do: Literal["wait_for"]
    event: str = Field(min_length=1)
    timeout: float = Field(default=30.0, gt=0)
    on_timeout: Literal["continue", "end"] = "continue"


class DropSignalling(_Model):
    """Close the user's signalling socket (the SDK resumes)."""

    do: Literal["drop_signalling"]


class ForceReconnect(_Model):
    """Make the user's SDK rejoin in full."""

    do: Literal["reconnect"]


class End(_Model):
    """End the session with ``session.ended``."""

    do: Literal["end"]
    reason: str = "agent_hangup"


class Sleep(_Model):
    """Pause the script."""

    do: Literal["sleep"]
    seconds: float = Field(ge=0)


Step = Annotated[
    Say
    | SetState
    | CallClientTool
    | ToolRun
    | Raw
    | UserTranscript
    | SendError
    | WaitFor
    | DropSignalling
    | ForceReconnect
    | End
    | Sleep,
    Field(discriminator="do"),
]


class Scenario(_Model):
    """A parsed scenario file."""

    name: str = "scenario"
    description: str = ""
    agent: AgentSettings = Field(default_factory=AgentSettings)
    steps: list[Step] = Field(default_factory=list)
    then: Literal["converse", "listen", "end"] = "converse"

    def with_agent(self, overrides: Mapping[str, object]) -> Scenario:
        """This scenario with some ``[agent]`` settings replaced (e.g. the timings).

        Validated like a file: raises :class:`ScenarioError` naming the bad setting.
        """
        if not overrides:
            return self
        merged = {**self.agent.model_dump(exclude_unset=True), **overrides}
        try:
            agent = AgentSettings.model_validate(merged)
        except ValidationError as exc:
            raise ScenarioError(f"scenario {self.name}: agent.{_describe(exc)}") from None
        return self.model_copy(update={"agent": agent})


def check_agent_overrides(overrides: Mapping[str, object]) -> dict[str, object]:
    """Validate ``[agent]`` overrides on their own; returns them as a dict.

    Raises :class:`ScenarioError` (``agent override think_seconds: ...``) for an unknown
    setting or a bad value, before anything is served.
    """
    try:
        AgentSettings.model_validate(dict(overrides))
    except ValidationError as exc:
        raise ScenarioError(f"agent override {_describe(exc)}") from None
    return dict(overrides)


def parse_agent_setting(text: str) -> tuple[str, object]:
    """``"think_seconds=0.8"`` -> ``("think_seconds", 0.8)`` (the value read as TOML, or
    else taken as a string); raises :class:`ScenarioError` without ``=``."""
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key:
        raise ScenarioError(f"agent setting {text!r}: expected KEY=VALUE, e.g. think_seconds=0.8")
    try:
        value: object = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key, value


def _shipped() -> tuple[str, ...]:
    # The registry is the folder: every scenarios/NAME.toml is a built-in. The demo, the
    # one to try first, leads; the others follow by name.
    folder = resources.files("fishtalk.sim.fish").joinpath("scenarios")
    names = {e.name.removesuffix(".toml") for e in folder.iterdir() if e.name.endswith(".toml")}
    return tuple(sorted(names, key=lambda name: (name != "demo", name)))


BUILTIN: Final = _shipped()
"""Names of the scenarios shipped in ``fishtalk/sim/fish/scenarios`` (one TOML file each)."""


def _unknown(name: str) -> str:
    """What to add to "no such scenario": the built-ins, and the closest one if any is."""
    close = difflib.get_close_matches(name, BUILTIN, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{hint} (built-in: {', '.join(BUILTIN)})"


def _describe(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in first["loc"] if not str(p)[0].isupper())
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{loc or 'top level'}: {plain_message(first)}{more}"


def parse_scenario(text: str, *, source: str = "<scenario>", name: str | None = None) -> Scenario:
    """Parse scenario TOML; raises :class:`ScenarioError` with a one-line reason."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"scenario {source}: not valid TOML: {exc}") from None
    if name is not None:
        data.setdefault("name", name)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(f"scenario {source}: {_describe(exc)}") from None


def builtin_scenario(name: str) -> Scenario:
    """One of :data:`BUILTIN`."""
    if name not in BUILTIN:
        raise ScenarioError(f"no built-in scenario {name!r}{_unknown(name)}")
    text = (
        resources.files("fishtalk.sim.fish")
        .joinpath("scenarios", f"{name}.toml")
        .read_text("utf-8")
    )
    return parse_scenario(text, source=f"{name} (built-in)", name=name)


def load_scenario(path_or_name: str | Path) -> Scenario:
    """A scenario from a file path, or a built-in one by name (see :data:`BUILTIN`)."""
    if isinstance(path_or_name, str) and path_or_name in BUILTIN:
        return builtin_scenario(path_or_name)
    path = Path(path_or_name)
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        if isinstance(path_or_name, str) and path.name == path_or_name and not path.suffix:
            # A bare word: meant as a built-in name rather than a file.
            raise ScenarioError(
                f"no built-in scenario or file {path_or_name!r}{_unknown(path_or_name)}"
            ) from None
        raise ScenarioError(
            f"cannot read scenario {path}: no such file{_unknown(path.stem)}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ScenarioError(f"cannot read scenario {path}: {reason}") from None
    return parse_scenario(text, source=str(path), name=path.stem)


__all__ = [
    "BUILTIN",
    "AgentSettings",
    "CallClientTool",
    "DropSignalling",
    "End",
    "ForceReconnect",
    "Raw",
    "Say",
    "Scenario",
    "ScenarioError",
    "SendError",
    "SetState",
    "Sleep",
    "Step",
    "ToolRun",
    "UserTranscript",
    "WaitFor",
    "builtin_scenario",
    "check_agent_overrides",
    "load_scenario",
    "parse_agent_setting",
    "parse_scenario",
]
