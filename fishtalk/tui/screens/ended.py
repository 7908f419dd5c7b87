"""The ended screen: why the session ended, a short summary and how to see the session's
page, then exit."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import PurePath
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.events import Click
from textual.screen import ModalScreen
from textual.widgets import Static

from fishtalk.core.conversation import State, describe_end_reason
from fishtalk.core.conversation.latency import (
    LatencySummary,
    summarize,
    summary_parts,
    summary_text,
)
from fishtalk.core.conversation.reply_audio import audio_note, worst_note
from fishtalk.tui.safe import visible
from fishtalk.tui.widgets.status import format_duration


@dataclass(frozen=True, slots=True)
class CallSummary:
    """What the ended screen reports."""

    reason: str
    reason_text: str
    turns: int
    user_turns: int
    agent_turns: int
    tools: int
    tool_failures: int
    errors: int
    duration: float
    ended_well: bool
    """Whether the call went as it should (else its line goes to stderr)."""
    connected: bool = True
    """Whether the session ever connected (else there is nothing to count)."""
    latency: LatencySummary | None = None
    """Heard latency over the call's turns (None: no user turn to measure from)."""
    audio: str | None = None
    """How the replies sounded (:func:`~fishtalk.core.conversation.reply_audio.audio_note`:
    the worst problem, or that there was none; None: no reply was measured)."""
    audio_worst: str | None = None
    """The worst audio problem, if any (the exit line names it)."""

    @classmethod
    def from_state(cls, state: State, *, reason: str | None, ended_well: bool) -> CallSummary:
        """Summarise a (normally ended) state."""
        final_reason = reason or state.end_reason or "ended"
        # The live logs, plus what dropped off their front (the reducer counted it).
        said = [s for s in state.transcript if s.text.strip()]
        live_user = sum(1 for s in said if s.role == "user")
        user = live_user + state.earlier_user_turns
        agent = len(said) - live_user + state.earlier_agent_turns
        turns = state.latency.turns
        last = state.latency.open
        if last is not None and last.heard is not None:
            turns = (*turns, last)
        ok = ("completed", "ok", "running")
        failures = sum(1 for c in state.tools if c.display_status not in ok)
        return cls(
            reason=final_reason,
            reason_text=describe_end_reason(final_reason),
            turns=user + agent,
            user_turns=user,
            agent_turns=agent,
            tools=len(state.tools) + state.earlier_tools,
            tool_failures=failures + state.earlier_failed_tools,
            errors=len(state.errors),
            duration=state.clock.elapsed(),
            ended_well=ended_well,
            connected=state.clock.connected_at is not None,
            latency=summarize(turns) if any(t.kind != "unprompted" for t in turns) else None,
            audio=audio_note(state.reply_audio),
            audio_worst=worst_note(state.reply_audio),
        )

    def stats(self) -> str:
        """Duration and counts on one line: ``0:47 · 3 turns · 2 tools``."""
        parts = [format_duration(self.duration), _count(self.turns, "turn")]
        tools = _count(self.tools, "tool")
        if self.tool_failures:
            tools += f" ({self.tool_failures} failed)"
        parts.append(tools)
        if self.errors:
            parts.append(_count(self.errors, "error"))
        return " · ".join(parts)

    def latency_line(self) -> str | None:
        """Heard latency over the call in words (``latency: p50 0.82 s, p95 1.20 s, worst
        1.31 s (your turn 4); ...``, or that no turn was measured), or None when the call had
        no user turn to measure from."""
        if self.latency is None:
            return None
        return visible(summary_text(self.latency))

    def line(self) -> str:
        """The summary as one plain line for the normal screen after the app exits, e.g.
        ``call ended — you hung up · 0:47 · 3 turns · 2 tools``, then the heard latency
        when a turn was measured (``· latency: p50 0.82 s, p95 1.20 s, worst ...``) and the
        worst audio problem, if any (``· audio: worst: reply 2: gap of 0.84 s ...``).

        A session that never connected had no call to speak of: just its sentence.
        """
        sentence = visible(" ".join(self.reason_text.split()))
        if not self.connected:
            return sentence or "call ended"
        reason = sentence.rstrip(".")
        if reason[:1].isupper() and not reason[1:2].isupper():
            reason = reason[0].lower() + reason[1:]
        head = f"call ended — {reason}" if reason else "call ended"
        # The one line carries figures only: "no measured turns" stays on the ended screen.
        heard = self.latency_line() if self.latency and self.latency.measured else None
        tail = f" · {heard}" if heard else ""
        if self.audio_worst is not None:
            tail += f" · audio: {visible(self.audio_worst)}"
        return f"{head} · {self.stats()}{tail}"


def page_command(ref: str) -> str:
    """The command that writes the session's HTML page, for a journal id or path:
    ``fishtalk export 20261202-… --format html -o 20261202-….html``."""
    name = PurePath(ref).stem or "session"
    return f"fishtalk export {shlex.quote(ref)} --format html -o {shlex.quote(name + '.html')}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class EndedScreen(ModalScreen[None]):
    """Shows the summary; any key (or the linger timer) dismisses it and the app exits."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,space,q", "close", "Exit", show=True),
    ]

    def __init__(
        self, summary: CallSummary, *, linger: float | None, journal: str | None = None
    ) -> None:
        """``journal``: the session's journal id or path (the screen says how to open its
        page), None when no journal was written."""
        super().__init__()
        self.summary = summary
        self._linger = linger
        self._journal = journal

    def compose(self) -> ComposeResult:
        """Reason, numbers, and how to leave."""
        s = self.summary
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        table.add_row("duration", format_duration(s.duration))
        table.add_row("turns", f"{s.turns} ({s.user_turns} you, {s.agent_turns} agent)")
        tools = f"{s.tools}" + (f" ({s.tool_failures} failed)" if s.tool_failures else "")
        table.add_row("tools", tools)
        if s.errors:
            table.add_row("errors", str(s.errors))
        if s.latency is not None:
            for label, value in summary_parts(s.latency):
                table.add_row(label, Text(visible(value)))
        if s.audio is not None:
            table.add_row("audio", Text(visible(s.audio)))
        with Vertical(id="ended-box"):
            yield Static(Text("■ Session ended", style="bold"), id="ended-title")
            yield Static(Text(visible(s.reason_text)), id="ended-reason")
            yield Static(table, id="ended-table")
            if self._journal is not None:
                page = Text("The session as a web page: ", style="dim")
                page.append(visible(page_command(self._journal)), style="bold")
                yield Static(page, id="ended-page")
            hint = "Press any key to exit."
            if self._linger is not None:
                hint = f"Leaving in {self._linger:g} s; any key leaves now."
            yield Static(Text(hint, style="dim"), id="ended-hint")

    def on_mount(self) -> None:
        """Exit by itself after the linger time (if any)."""
        if self._linger is not None:
            self.set_timer(self._linger, self.action_close)

    def on_key(self) -> None:
        """Any key exits."""
        self.action_close()

    def on_click(self, event: Click) -> None:
        """A click exits too."""
        del event
        self.action_close()

    def action_close(self) -> None:
        """Dismiss; the app exits with the session's exit code."""
        if self.is_active:
            self.dismiss(None)
