"""The tool-activity panel: one card per tool call, newest at the bottom.

A card shows the tool's name, where it runs, a live elapsed time, its state, input and
output (one line collapsed, pretty-printed when expanded), truncation badges, errors and,
for client tools, what our local handler returned. The panel is one focus stop: up/down
select a card, enter expands or collapses it.
"""

from __future__ import annotations

from itertools import islice
from typing import ClassVar, Final

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.events import Click, Resize
from textual.message import Message
from textual.widgets import Static

from fishtalk.core.conversation import Log, ToolCard
from fishtalk.tui.safe import pretty_payload, safe_text, visible
from fishtalk.tui.widgets.status import format_duration
from fishtalk.tui.widgets.transcript import log_changes

MAX_CARDS: Final = 100
"""Cards kept mounted; older ones are summarised in a header line."""
_ONE_LINE: Final = 72
"""Characters of a payload shown while a card is collapsed (enter expands it)."""

_STATUS_STYLE: Final = {
    "running": "bold yellow",
    "completed": "bold green",
    "ok": "bold green",
    "failed": "bold red",
    "error": "bold red",
    "timeout": "bold red",
    "declined": "bold magenta",
    "cancelled": "bold magenta",
    "unknown": "bold red",
}

_STATUS_LOOK: Final = {
    "running": ("◔", "running"),
    "completed": ("✓", "completed"),
    "ok": ("✓", "ok"),
    "failed": ("✕", "failed"),
    "error": ("✕", "error"),
    "timeout": ("⌛", "timed out"),
    "declined": ("⊘", "declined"),
    "cancelled": ("⊘", "cancelled: the call ended"),
    "unknown": ("?", "no handler"),
}


def _status(status: str) -> tuple[str, str]:
    return _STATUS_LOOK.get(status, ("?", visible(status)))


def _style(status: str) -> str:
    return _STATUS_STYLE.get(status, "bold")


def _one_line(raw: str) -> str:
    flat = " ".join(raw.split())
    return flat if len(flat) <= _ONE_LINE else flat[: _ONE_LINE - 1] + "…"


def card_elapsed(card: ToolCard, now: float) -> float | None:
    """Seconds the call has run (live while running, fixed once finished)."""
    if card.duration is not None:
        return card.duration
    start = card.started_at
    if start is None and card.client is not None:
        start = card.client.started_at
    if start is None:
        return None
    end = card.ended_at
    if end is None and card.client is not None and card.client.ended_at is not None:
        end = card.client.ended_at
    return max(0.0, (end if end is not None else now) - start)


def _fmt_seconds(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds < 60 else format_duration(seconds)


def _final(status: str, ended: bool) -> str:
    return "cancelled" if ended and status == "running" else status


def render_card(
    card: ToolCard,
    now: float,
    *,
    expanded: bool,
    width: int | None = None,
    ended: bool = False,
) -> Text:
    """The whole card as inert text (remote strings never parsed as markup).

    Collapsed, each payload is one line; with ``width`` (the card's content width in
    cells) that line is cut to fit with an ellipsis instead of wrapping mid-token, so a
    card stays a few lines tall in a narrow panel. ``ended``: the call is over, so a
    call still running will never finish (it shows as cancelled).
    """
    text = _header(card, now, width=width, ended=ended)

    def one_line(line: Text) -> None:
        if width is not None and width > 0:
            line.truncate(width, overflow="ellipsis")
        text.append("\n")
        text.append_text(line)

    def payload(name: str, raw: str | None, truncated: bool) -> None:
        if raw is None:
            return
        line = Text(f"{name} ", style="bold dim")
        if truncated:
            line.append("[truncated]", style="reverse")
            line.append(" ")
        if expanded:
            text.append("\n")
            text.append_text(line)
            text.append("\n")
            text.append_text(safe_text(pretty_payload(raw)))
        else:
            line.append_text(safe_text(_one_line(raw)))
            one_line(line)

    payload("in ", card.input, card.input_truncated)
    payload("out", card.output, card.output_truncated)
    if card.error:
        line = Text("✕ ", style=_style("failed"))
        if expanded:
            text.append("\n")
            text.append_text(line)
            text.append_text(safe_text(card.error, _style("failed")))
        else:
            line.append_text(safe_text(_one_line(card.error), _style("failed")))
            one_line(line)
    client = card.client
    if client is not None:
        client_status = _final(client.status, ended)
        cglyph, clabel = _status(client_status)
        local = Text("local ", style="bold dim")
        local.append(f"{cglyph} {clabel}", style=_style(client_status))
        if client.duration is not None:
            local.append(f" {_fmt_seconds(client.duration)}", style="dim")
        if not client.expects_response:
            local.append(" (no reply expected)", style="dim")
        if expanded:
            text.append("\n")
            text.append_text(local)
        else:
            one_line(local)
        if client.params and expanded:
            text.append("\nparams ", style="bold dim")
            text.append("\n")
            text.append_text(safe_text(pretty_payload(_json(client.params))))
        # The local outcome's text, unless the card said it already (a declined call's
        # message comes back as the agent's error too): a message is shown once.
        shown = client.error or client.result_preview
        if shown and shown.strip() in {x.strip() for x in (card.error, card.output) if x}:
            shown = None
        if shown and expanded:
            text.append("\n→ ", style="dim")
            text.append_text(safe_text(pretty_payload(shown)))
        elif shown:
            one_line(Text("→ ", style="dim").append_text(safe_text(_one_line(shown))))
    return text


def _header(card: ToolCard, now: float, *, width: int | None, ended: bool) -> Text:
    """The card's first line: status glyph and tool name, then where it ran, its time, its
    state (and node). With ``width``, when that does not fit on one line, the details go
    whole onto a line of their own (each line cut with ``…``), never split mid-way."""
    status = _final(card.display_status, ended)
    glyph, label = _status(status)
    head = Text(f"{glyph} ", style=_style(status))
    head.append_text(safe_text(card.tool_name, "bold"))
    meta = safe_text(card.source, "dim")
    elapsed = card_elapsed(card, now)
    if elapsed is not None:
        meta.append(f"  {_fmt_seconds(elapsed)}", style="dim")
    meta.append(f"  {label}", style=_style(status))
    if card.node_id:
        meta.append("  node ", style="dim")
        meta.append_text(safe_text(card.node_id, "dim"))
    text = Text(overflow="fold")
    if width is None or width <= 0 or head.cell_len + 2 + meta.cell_len <= width:
        text.append_text(head)
        text.append("  ")
        text.append_text(meta)
        return text
    head.truncate(width, overflow="ellipsis")
    details = Text("  ").append_text(meta)
    details.truncate(width, overflow="ellipsis")
    text.append_text(head)
    text.append("\n")
    text.append_text(details)
    return text


def _json(value: object) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


class ToolCardView(Static):
    """One card; re-rendered only when its card changed or (while running) each second."""

    DEFAULT_CSS = """
    ToolCardView { height: auto; }
    """

    class Toggled(Message):
        """The card was clicked: expand or collapse it."""

        def __init__(self, card: ToolCardView) -> None:
            super().__init__()
            self.card = card

    def __init__(
        self, card: ToolCard, now: float, *, expanded: bool = False, ended: bool = False
    ) -> None:
        super().__init__(classes="tool-card")
        self.card = card
        self.expanded = expanded
        self.ended = ended
        self._now = now
        self._width = 0
        self._paint()

    @property
    def running(self) -> bool:
        """Whether the live elapsed time still moves."""
        return not self.ended and self.card.display_status == "running"

    def _paint(self) -> None:
        status = _final(self.card.display_status, self.ended)
        for name in ("running", "failed", "error", "timeout", "unknown"):
            self.set_class(status == name, f"-{name}")
        self._width = self.content_size.width
        self.update(
            render_card(
                self.card,
                self._now,
                expanded=self.expanded,
                width=self._width or None,
                ended=self.ended,
            )
        )

    def on_resize(self, event: Resize) -> None:
        """Cut the one-line payloads again for the new width."""
        del event
        if self.content_size.width != self._width:
            # After this layout pass: a new height asked for during it would be lost.
            self.call_after_refresh(self._paint)

    def show(self, card: ToolCard, now: float) -> None:
        """Update to ``card`` at time ``now`` (skipped when nothing visible changed)."""
        if card is self.card and not self.running:
            return
        self.card, self._now = card, now
        self._paint()

    def set_ended(self, now: float) -> None:
        """The call is over: a call still running shows as cancelled, its time stops."""
        if not self.ended:
            running = self.running
            self.ended = True
            if running:
                self._now = now
                self._paint()

    def set_expanded(self, expanded: bool) -> None:
        """Expand or collapse the payloads."""
        if expanded != self.expanded:
            self.expanded = expanded
            self.set_class(expanded, "-expanded")
            self._paint()

    def on_click(self, event: Click) -> None:
        """Clicking a card toggles it."""
        event.stop()
        self.post_message(self.Toggled(self))


class ToolPanel(VerticalScroll, can_focus=True):
    """All tool cards, keyed by call id; one focus stop with its own selection."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "select(-1)", "Previous tool", show=False),
        Binding("down", "select(1)", "Next tool", show=False),
        Binding("enter,space", "toggle_card", "Expand/collapse", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._cards: dict[str, ToolCardView] = {}
        self._tool_log: Log[ToolCard] | None = None
        self._last = -1
        """Absolute position (counting dropped cards) of the newest mounted card."""
        self._live_views: set[ToolCardView] = set()
        self._hidden_count = 0
        self._selected: str | None = None
        self._ended = False
        self._hidden = Static("", classes="tools-note")
        self._empty = Static(Text("no tool calls yet", style="dim"), classes="tools-note")
        self.paints = 0
        """How many card views were created or updated with a new card (tests read it)."""

    def compose(self) -> ComposeResult:
        """Start with the empty note."""
        yield self._empty

    @property
    def card_views(self) -> list[ToolCardView]:
        """Mounted card views, oldest first."""
        return list(self._cards.values())

    @property
    def hidden_count(self) -> int:
        """Older tool calls not shown (dropped by the reducer's bound or the panel's)."""
        return self._hidden_count

    def view(self, call_id: str) -> ToolCardView | None:
        """The card view for a call id, if mounted."""
        return self._cards.get(call_id)

    def show(self, log: Log[ToolCard], now: float, *, ended: bool = False) -> None:
        """Sync the mounted cards with the state's tool log (newest :data:`MAX_CARDS` only).

        Only the cards that changed since the last call are looked at (by identity in the
        log's blocks), plus the running ones, whose elapsed time moves.
        ``ended``: the call is over (calls still running show as cancelled).
        """
        if ended and not self._ended:
            self._ended = True
            for view in self._cards.values():
                view.set_ended(now)
        previous = self._tool_log
        if log is not previous:
            if previous is not None and log.dropped < previous.dropped:
                previous = None  # another conversation: start again
                self._remove_all()
            self._tool_log = log
            self._sync(previous, log, now)
        for view in list(self._live_views):
            view.show(view.card, now)
            if not view.running:
                self._live_views.discard(view)

    def _sync(self, previous: Log[ToolCard] | None, log: Log[ToolCard], now: float) -> None:
        follow = self.scroll_offset.y >= self.max_scroll_y
        new: list[tuple[int, ToolCard]] = []
        for position, card in log_changes(previous, log):
            existing = self._cards.get(card.call_id)
            if existing is not None:
                if card is not existing.card:
                    self.paints += 1
                existing.show(card, now)
                self._track(existing)
            elif position > self._last:
                new.append((position, card))
        views: list[ToolCardView] = []
        for position, card in new[-MAX_CARDS:]:
            view = ToolCardView(card, now, expanded=False, ended=self._ended)
            self.paints += 1
            self._cards[card.call_id] = view
            self._track(view)
            self._last = position
            views.append(view)
        for call_id in list(islice(self._cards, max(0, len(self._cards) - MAX_CARDS))):
            gone = self._cards.pop(call_id)
            self._live_views.discard(gone)
            if gone.is_mounted:
                gone.remove()
        views = [view for view in views if view.card.call_id in self._cards]
        if self._cards and self._empty.is_mounted:
            self._empty.remove()
        hidden = self._last + 1 - len(self._cards)
        if hidden != self._hidden_count:
            self._hidden_count = hidden
            self._hidden.update(Text(f"… {hidden} earlier tool calls not shown", style="dim"))
            if not self._hidden.is_mounted:
                self.mount(self._hidden, before=0)
        if views:
            self.mount_all(views)
        if follow:
            # Also when no card is new: a card that grew (a result, a local reply) must
            # not push the newest one out of view.
            self.call_after_refresh(self.scroll_end, animate=False)

    def _track(self, view: ToolCardView) -> None:
        if view.running:
            self._live_views.add(view)
        else:
            self._live_views.discard(view)

    def restart(self) -> None:
        """Forget the cards; the next :meth:`show` mounts its log's afresh (a replay that
        went back in time)."""
        self._tool_log = None
        self._ended = False
        self._remove_all()

    def _remove_all(self) -> None:
        for view in self._cards.values():
            if view.is_mounted:
                view.remove()
        self._cards.clear()
        self._live_views.clear()
        self._last = -1

    def _ids(self) -> list[str]:
        return list(self._cards)

    def action_select(self, step: int) -> None:
        """Move the selection up or down."""
        ids = self._ids()
        if not ids:
            return
        if self._selected not in self._cards:
            index = len(ids) - 1 if step < 0 else 0
        else:
            index = max(0, min(len(ids) - 1, ids.index(self._selected) + step))
        self._select(ids[index])

    def _select(self, call_id: str) -> None:
        for key, view in self._cards.items():
            view.set_class(key == call_id, "-selected")
        self._selected = call_id
        self._cards[call_id].scroll_visible(animate=False)

    def action_toggle_card(self) -> None:
        """Expand or collapse the selected card (the newest if none is selected)."""
        if not self._cards:
            return
        if self._selected not in self._cards:
            self._select(self._ids()[-1])
        assert self._selected is not None
        view = self._cards[self._selected]
        view.set_expanded(not view.expanded)

    def on_tool_card_view_toggled(self, message: ToolCardView.Toggled) -> None:
        """A click selects and toggles a card."""
        self._select(message.card.card.call_id)
        message.card.set_expanded(not message.card.expanded)


__all__ = ["MAX_CARDS", "ToolCardView", "ToolPanel", "card_elapsed", "render_card"]
