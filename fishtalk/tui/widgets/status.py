"""The status widgets: agent state, connection, session clock, mic and reply mode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final

from rich.text import Text
from textual.widgets import Static

from fishtalk.core.conversation import State, describe_end_reason
from fishtalk.core.protocol import AGENT_STATES
from fishtalk.tui.safe import visible


@dataclass(frozen=True, slots=True)
class StateLook:
    """How one agent state looks: a glyph (so it reads without colour) and a CSS class."""

    glyph: str
    label: str


AGENT_LOOKS: Final[dict[str, StateLook]] = {
    "initializing": StateLook("◌", "initializing"),
    "idle": StateLook("○", "idle"),
    "listening": StateLook("◉", "listening"),
    "thinking": StateLook("◐", "thinking"),
    "speaking": StateLook("◆", "speaking"),
    "unknown": StateLook("?", "unknown"),
    "ended": StateLook("■", "call ended"),
}
"""One distinct glyph per agent state; colours come from app.tcss (``-state-NAME``)."""


def agent_state_key(state: State) -> str:
    """The display key for the agent state: a known state, else ``unknown`` (``ended``
    once the session is over)."""
    raw = state.agent_state
    if state.ended:
        return "ended"
    if state.mode == "speaking" and raw in (None, "listening", "thinking", "idle"):
        # An agent transcript segment is open: it is speaking, whatever the sticky
        # attribute last said (the web SDK derives its mode the same way).
        return "speaking"
    if raw is None:
        return "initializing"
    return raw if raw in AGENT_STATES else "unknown"


def format_duration(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) for a non-negative number of seconds."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


class AgentIndicator(Static):
    """The agent's pipeline state: glyph, label and a colour class per state."""

    STATES: ClassVar[tuple[str, ...]] = tuple(AGENT_LOOKS)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._key = ""
        self._raw: str | None = None

    def show(self, state: State) -> None:
        """Render the state's agent indicator (no-op when unchanged)."""
        key = agent_state_key(state)
        if key == self._key and state.agent_state == self._raw:
            return
        self._key, self._raw = key, state.agent_state
        for name in self.STATES:
            self.set_class(name == key, f"-state-{name}")
        look = AGENT_LOOKS[key]
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{look.glyph} ", style="bold")
        label = look.label if key != "unknown" else f"unknown ({visible(state.agent_state or '')})"
        text.append(label)
        self.update(text)


_STATUS_GLYPHS: Final = {
    "connecting": "⋯",
    "connected": "●",
    "reconnecting": "↻",
    "ended": "■",
}


class ConnectionStatus(Static):
    """Connecting / connected / reconnecting / ended (and why)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[str, str | None] | None = None

    def show(self, state: State) -> None:
        """Render the connection status (no-op when unchanged)."""
        key = (state.status, state.end_reason)
        if key == self._shown:
            return
        self._shown = key
        for name in _STATUS_GLYPHS:
            self.set_class(name == state.status, f"-{name}")
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{_STATUS_GLYPHS[state.status]} {state.status}")
        if state.ended and state.end_reason:
            text.append(f": {visible(describe_end_reason(state.end_reason))}")
        self.update(text)


class SessionClock(Static):
    """Elapsed time against the session's maximum duration."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown = ""

    def show(self, state: State, now: float) -> None:
        """Render the clock for wall time ``now`` (the session's monotonic clock)."""
        clock = state.clock
        if clock.connected_at is None:
            elapsed = 0.0
        elif clock.ended_at is not None:
            elapsed = clock.elapsed()
        else:
            elapsed = max(clock.now, now) - clock.connected_at
        text = f"⏱ {format_duration(elapsed)}"
        if clock.max_duration_seconds:
            text += f" / {format_duration(clock.max_duration_seconds)}"
            remaining = clock.max_duration_seconds - elapsed
            self.set_class(not state.ended and remaining <= 60, "-warning")
        if text != self._shown:
            self._shown = text
            self.update(Text(text, no_wrap=True))


class ModeFlags(Static):
    """Microphone (live / muted / none) and reply mode (spoken / text-only).

    Without any audio device the meters' notice says so once and this widget hides:
    neither "mic: none" nor "replies: spoken" would be true to show then.
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[bool, bool, bool, bool, str | None] | None = None

    def show(
        self, state: State, *, audio: bool, mic: bool | None = None, talk: str | None = None
    ) -> None:
        """Render the flags (no-op when unchanged). ``mic`` defaults to ``audio``.

        ``talk``: in the toggle and push talk modes, the microphone's state as
        :meth:`fishtalk.core.talk.TalkControl.look` words it (``● TALKING`` or how to start).
        """
        has_mic = audio if mic is None else mic
        key = (state.muted, state.spoken, audio, has_mic, talk)
        if key == self._shown:
            return
        self._shown = key
        self.display = audio
        talking = has_mic and talk is not None and not state.muted
        self.set_class(has_mic and state.muted and talk is None, "-muted")
        self.set_class(talking, "-talking")
        self.set_class(talk is not None, "-talk")
        text = Text(no_wrap=True, overflow="ellipsis")
        if not has_mic:
            text.append("mic: none", style="dim")
        elif talk is not None:
            text.append(f" {talk} ", style="bold reverse" if talking else "bold")
        elif state.muted:
            text.append("mic: MUTED", style="bold reverse")
        else:
            text.append("mic: live")
        text.append("  ")
        text.append("replies: spoken" if state.spoken else "replies: text-only")
        self.update(text)


__all__ = [
    "AGENT_LOOKS",
    "AgentIndicator",
    "ConnectionStatus",
    "ModeFlags",
    "SessionClock",
    "StateLook",
    "agent_state_key",
    "format_duration",
]
