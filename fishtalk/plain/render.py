"""Line mode's renderer: conversation states become plain text lines.

:class:`PlainRenderer` prints what :func:`fishtalk.core.conversation.changes` reports, one
line per fact. On a terminal the agent's text streams onto its line as it is spoken;
through a pipe only finished lines are printed, so the output is stable and scriptable.
Every piece of remote text is stripped of control characters and escape sequences
(:func:`stripped`) before it reaches the terminal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Final, TextIO

from fishtalk.core import conversation as conv
from fishtalk.core.conversation.reply_audio import DEFAULT_BUDGETS, problems, worst_note
from fishtalk.core.text import strip
from fishtalk.engine.metrics import settled


def stripped(text: str) -> str:
    """Remote text made safe for a terminal line: no escapes, no control or bidi characters."""
    return strip(text)


_SILENT_NOTICES: Final = frozenset(
    {"reconnecting", "reconnected", "agent_joined", "session_ending"}
)
"""Notices plain mode does not print: the status lines say the first three, and the line
saying how the session ended says the last (once)."""


STATE_SETTLE: Final = 0.25
"""Seconds an agent state must hold before line mode prints it: the agent's quick
speaking/listening/speaking between two lines of one answer is no news to a reader."""


def _tool_outcome(card: conv.ToolCard) -> str | None:
    """What a finished card says (its error or result, from either side); None while it
    runs. The agent's completion after the client's own result says the same thing."""
    if card.display_status == "running":
        return None
    detail = card.error or card.output
    if card.client is not None and detail is None:
        detail = card.client.error or card.client.result_preview
    return detail or ""


def _tool_line(card: conv.ToolCard) -> str:
    status = card.display_status
    name = stripped(card.tool_name)
    source = stripped(card.source)
    if status == "running":
        line = f"[tool] {name} ({source}) running"
        if card.input:
            line += f": {stripped(card.input)[:200]}"
        return line
    took = card.duration
    if took is None and card.client is not None:
        took = card.client.duration
    timing = f" in {took:.1f} s" if took is not None else ""
    line = f"[tool] {name} ({source}) {status}{timing}"
    detail = card.error or card.output
    if card.client is not None and detail is None:
        detail = card.client.error or card.client.result_preview
    if detail:
        cut = "…" if card.output_truncated and detail == card.output else ""
        line += f": {stripped(detail)[:300]}{cut}"
    return line


def _agent_busy(state: conv.State) -> bool:
    """The agent is speaking (a line is open, or it said so and its line has not started)."""
    return state.speaking_segment is not None or state.agent_state == "speaking"


class PlainRenderer:
    """Turns successive :class:`~fishtalk.core.conversation.State` snapshots into lines.

    It prints what :func:`fishtalk.core.conversation.changes` reports, one line per fact:
    status and agent state changes, finished transcript lines, tool cards when their line
    changes, notices and errors. A typed message is printed when it is sent (so never
    before ``* connected``), and a line from the user's side waits while the agent is
    speaking, so the transcript reads in the order things were said. An error that is
    also why the session ended is left to the caller's closing line. With ``latency``,
    each interrupt gets its latency note, and each reply to a user turn its note right
    under the line that answers the turn (the waterfall's ``segment_id``, bound by the
    reducer's one rule), held until that line is printed; the greeting gets none.

    Agent states: ``* connected`` always comes first, and with ``settle`` (seconds) a state
    is printed only once it has held that long (or another line is due first): a flicker
    that returns to the state on screen prints nothing. The hold runs on the event loop
    when there is one, else on the states' own clock (replay). A tool card prints when it
    starts and once when its outcome is known (the client's result and the agent's
    completion that repeats it are one outcome).

    A closed output (a reader that went away, as with ``| head``) is not an error: the
    renderer stops writing, sets :attr:`closed` and calls ``on_closed`` once.
    """

    def __init__(
        self,
        out: TextIO,
        *,
        stream_agent: bool,
        on_closed: Callable[[], None] | None = None,
        latency: bool = False,
        settle: float = 0.0,
    ) -> None:
        self._out = out
        self._settle = settle
        self._connected = False
        """``* connected`` is on screen: agent states may follow it."""
        self._shown_state: str | None = None
        self._pending_state: tuple[str, float] | None = None
        """An agent state not printed yet, and when (session clock) it began."""
        self._timer: asyncio.TimerHandle | None = None
        self._outcomes: dict[str, str] = {}
        """Tool cards whose outcome is printed (call id -> what it said)."""
        self._stream = stream_agent
        self._latency = latency
        self._on_closed = on_closed
        self._streaming: str | None = None
        """The agent segment whose text is streaming onto the current line (terminal)."""
        self._streamed = 0
        """How many characters of it are on screen."""
        self._held: list[str] = []
        """User-side lines waiting for the agent to finish speaking."""
        self.closed = False
        """The output was closed by its reader; nothing more is written."""
        self.last_sent_at: float | None = None
        """When the last typed message left (session clock)."""
        self._notes: dict[str, conv.Waterfall] = {}
        """Latency of turns whose answering line (the key) is not printed yet."""

    def render(self, state: conv.State, events: Sequence[conv.Change] = ()) -> None:
        """Write ``events`` (what the reduction that made ``state`` changed: a session
        listener), and what waited for ``state``; with no events, only the latter."""
        self._settle_due(state.clock.now)
        for event in events:
            self._show(event, state)
        if state.ended:
            self._emit_state()
        if self._held and (state.ended or not _agent_busy(state)):
            held, self._held = self._held, []
            for text in held:
                self.line(text)
        if state.ended and self._notes:
            for segment_id in list(self._notes):
                self._note_for(segment_id, state)
        self.flush()

    def _turn_latency(self, w: conv.Waterfall, state: conv.State) -> None:
        if w.kind == "unprompted":
            return  # the greeting (or an unprompted line) answers no turn of the user's
        line = state.segment(w.segment_id) if w.segment_id else None
        if line is not None and not line.final and not line.interrupted and not state.ended:
            self._notes[line.segment_id] = w  # printed under its line, once that is
            return
        self._latency_line(w, line)

    def _note_for(self, segment_id: str, state: conv.State) -> None:
        w = self._notes.pop(segment_id, None)
        if w is not None:
            self._latency_line(w, state.segment(segment_id))

    def _latency_line(self, w: conv.Waterfall, line: conv.Segment | None) -> None:
        note = conv.note(settled(w, line)).removeprefix("latency: ")
        self.line(f"* latency (your turn {w.turn}): {note}")

    def _show(self, event: conv.Change, state: conv.State) -> None:
        if isinstance(event, conv.StatusChanged):
            if event.status in ("connected", "reconnecting"):
                self.line(f"* {event.status}")
                self._connected = self._connected or event.status == "connected"
                self._hold_state(state.clock.now)
        elif isinstance(event, conv.AgentStateChanged):
            self._pending_state = (stripped(event.agent_state), state.clock.now)
            self._hold_state(state.clock.now)
        elif isinstance(event, conv.NoticeAdded):
            if event.notice.kind not in _SILENT_NOTICES:
                self.line(f"* {stripped(event.notice.text)}")
        elif isinstance(event, conv.MessageSent):
            self.last_sent_at = state.clock.now
            self._user_line(f"you> {stripped(event.segment.text)}", state)
        elif isinstance(event, conv.SegmentOpened | conv.SegmentGrew):
            seg = event.segment
            if self._stream and seg.role == "agent" and not seg.final:
                self._stream_agent(seg)
        elif isinstance(event, conv.SegmentFinalised):
            self._finished(event.segment, state)
            self._note_for(event.segment.segment_id, state)
        elif isinstance(event, conv.SegmentInterrupted):
            self._note_for(event.segment.segment_id, state)
        elif isinstance(event, conv.ToolCardAdded | conv.ToolCardChanged):
            card = event.card
            outcome = _tool_outcome(card)
            said = self._outcomes.get(card.call_id)
            if said is not None and outcome in (None, said):
                return  # its outcome is on screen already
            if isinstance(event, conv.ToolCardChanged) and _tool_line(card) == _tool_line(
                event.previous
            ):
                return
            if outcome is not None:
                self._outcomes[card.call_id] = outcome
            self.line(_tool_line(card))
        elif isinstance(event, conv.ErrorAdded):
            error = event.error
            if state.ended and error.code == state.end_reason:
                return  # why the session ended: the closing line says it, once
            detail = f" ({stripped(error.detail)})" if error.detail else ""
            self.line(f"! {stripped(error.message)}{detail}")
        elif isinstance(event, conv.ReplyAudio) and self._latency:
            found = problems(event.report, DEFAULT_BUDGETS)
            what = "; ".join(p.text.split(": ", 1)[1] for p in found) or "sounded fine"
            self.line(f"* audio (reply {event.report.reply}): {what}")
        elif isinstance(event, conv.TurnLatency | conv.InterruptLatency) and self._latency:
            if isinstance(event, conv.TurnLatency):
                self._turn_latency(event.waterfall, state)
            else:
                self.line(f"* {conv.interrupt_note(event.interrupt)}")

    def _user_line(self, text: str, state: conv.State) -> None:
        if self._held or (_agent_busy(state) and not state.ended):
            self._held.append(text)
        else:
            self.line(text)

    def _stream_agent(self, seg: conv.Segment) -> None:
        if not seg.text:
            return
        if self._streaming is None:
            self._write(f"agent: {stripped(seg.text)}")
            self._streaming, self._streamed = seg.segment_id, len(seg.text)
        elif self._streaming == seg.segment_id and len(seg.text) > self._streamed:
            self._write(stripped(seg.text[self._streamed :]))
            self._streamed = len(seg.text)

    def _finished(self, seg: conv.Segment, state: conv.State) -> None:
        if seg.typed:
            return
        if seg.role == "user":
            if seg.text.strip():
                self._user_line(f"you: {stripped(seg.text)}", state)
            return
        mark = " [interrupted]" if seg.interrupted else ""
        if self._streaming == seg.segment_id:
            self._write(stripped(seg.text[self._streamed :]) + mark + "\n")
            self._streaming, self._streamed = None, 0
        elif seg.text.strip():
            self.line(f"agent: {stripped(seg.text)}{mark}")

    # --- agent states: printed once settled ----------------------------------------------

    def _hold_state(self, now: float) -> None:
        """Print the pending state now (no settle time), or once it has held."""
        if self._pending_state is None or not self._connected:
            return
        if self._settle <= 0:
            self._emit_state()
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (replay): the states' clock settles it, in _settle_due
        self._timer = loop.call_later(self._settle, self._settled)

    def _settled(self) -> None:
        self._timer = None
        self._emit_state()
        self.flush()

    def _settle_due(self, now: float) -> None:
        pending = self._pending_state
        if pending is not None and now - pending[1] >= self._settle:
            self._emit_state()

    def _emit_state(self) -> None:
        """Print the pending agent state, unless it is the one on screen already."""
        pending, self._pending_state = self._pending_state, None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if pending is None:
            return
        if not self._connected:
            self._pending_state = pending  # `* connected` comes first
            return
        if pending[0] != self._shown_state:
            self._shown_state = pending[0]
            self._put(f"* agent {pending[0]}")

    def line(self, text: str) -> None:
        """Write one line (after any agent state that is due first), first ending a reply
        that is streaming on the current line."""
        if self._connected:
            self._emit_state()
        self._put(text)

    def _put(self, text: str) -> None:
        if self._streaming is not None:
            # Another line interrupts a streaming reply: finish the line; the whole reply
            # is printed again when it is done.
            self._write(" …\n")
            self._streaming, self._streamed = None, 0
        self._write(text + "\n")

    def flush(self) -> None:
        """Flush the output (a closed output is noted, not raised)."""
        if self.closed:
            return
        try:
            self._out.flush()
        except (OSError, ValueError):
            self._mark_closed()

    def _write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self._out.write(text)
        except (OSError, ValueError):
            # BrokenPipeError (EPIPE) or a closed file: the reader has gone away.
            self._mark_closed()

    def _mark_closed(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._on_closed is not None:
            self._on_closed()


def closing_notes(state: conv.State, *, latency: bool = False) -> list[str]:
    """What line mode prints once a call is over, before how it ended, live and replayed
    alike: the heard-latency summary (with ``--latency``, or when any turn has a figure)
    and the worst audio problem, if any."""
    notes: list[str] = []
    summary = conv.summarize(state.latency.turns)
    if latency or summary.measured:
        notes.append(f"* {conv.summary_text(summary)}")
    problem = worst_note(state.reply_audio)
    if problem is not None:
        notes.append(f"* audio: {stripped(problem)}")
    return notes


__all__ = ["STATE_SETTLE", "PlainRenderer", "closing_notes", "stripped"]
