"""The transcript pane: a virtualised, bounded, follow-mode scroll view.

Only segments whose source object changed are re-wrapped; each segment's wrapped lines are
cached as strips, and ``render_line`` only looks lines up. The view keeps the newest
``max_items`` segments (older ones collapse into a one-line note), so a session with
thousands of turns costs the same per frame as a short one.

Follow mode: new content scrolls the view to the bottom only when it was already at the
bottom; a person reading scrollback is never yanked down.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import ClassVar, Generic, TypeAlias, TypeVar

from rich.cells import cell_len
from rich.segment import Segment as RichSegment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.events import Resize
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from fishtalk.conversation import ErrorEntry, Segment, State
from fishtalk.tui.safe import safe_text

T = TypeVar("T")

DEFAULT_MAX_ITEMS = 2000


class TranscriptView(ScrollView, Generic[T], can_focus=True):
    """Shows a sequence of items, each rendered to wrapped ``Text`` by a callback."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll_up", "Up", show=False),
        Binding("down", "scroll_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("end", "scroll_end", "Bottom (follow)", show=False),
    ]

    DEFAULT_CSS = """
    TranscriptView { overflow-y: scroll; overflow-x: hidden; scrollbar-gutter: stable; }
    """

    def __init__(
        self,
        render_item: Callable[[T], Text],
        *,
        max_items: int = DEFAULT_MAX_ITEMS,
        empty_text: Text | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._render_item = render_item
        self.max_items = max_items
        self._empty = empty_text
        self._sources: list[T] = []
        self._strips: list[list[Strip] | None] = []
        self._starts: list[int] = []
        self._total = 0
        self._hidden = 0
        self._wrap_width = 0
        self.renders = 0
        """How many items have been (re-)wrapped; the benchmark and tests read it."""

    # --- public ------------------------------------------------------------------------

    @property
    def item_count(self) -> int:
        """Items currently held (at most ``max_items``)."""
        return len(self._sources)

    @property
    def hidden_count(self) -> int:
        """Older items dropped from the view because of the bound."""
        return self._hidden

    @property
    def line_count(self) -> int:
        """Total wrapped lines (the virtual height)."""
        return self._total

    def set_items(self, items: Sequence[T]) -> None:
        """Show ``items``; only the ones whose identity/value changed are re-rendered."""
        follow = self._at_bottom()
        hidden = max(0, len(items) - self.max_items)
        visible = items[hidden:]
        if hidden != self._hidden:
            # Items only ever drop from the front, so the old tail lines up after a shift.
            shift = hidden - self._hidden
            if 0 < shift <= len(self._sources):
                del self._sources[:shift]
                del self._strips[:shift]
            else:
                self._sources.clear()
                self._strips.clear()
            self._hidden = hidden
        changed = False
        sources, strips = self._sources, self._strips
        for index, item in enumerate(visible):
            if index < len(sources):
                old = sources[index]
                if old is item or old == item:
                    continue
                sources[index] = item
                strips[index] = None
            else:
                sources.append(item)
                strips.append(None)
            changed = True
        if len(sources) > len(visible):
            del sources[len(visible) :]
            del strips[len(visible) :]
            changed = True
        if changed or hidden:
            self._relayout()
            if follow:
                self.scroll_end(animate=False, immediate=True, x_axis=False)

    def invalidate(self, predicate: Callable[[T], bool]) -> None:
        """Re-render the held items matching ``predicate`` (their look changed, not them)."""
        hit = False
        for index, item in enumerate(self._sources):
            if predicate(item):
                self._strips[index] = None
                hit = True
        if hit:
            self._relayout()

    def text_lines(self) -> list[str]:
        """The plain text of every wrapped line (for tests and debugging)."""
        self._relayout()
        lines: list[str] = []
        for y in range(self._total):
            strip = self._strip_at(y)
            lines.append(strip.text.rstrip() if strip is not None else "")
        return lines

    def plain_items(self) -> list[str]:
        """The plain text of every held item, unwrapped (for tests)."""
        return [self._render_item(item).plain for item in self._sources]

    # --- internals ---------------------------------------------------------------------

    def _at_bottom(self) -> bool:
        if not self.is_mounted or self.is_vertical_scrollbar_grabbed:
            return not self.is_mounted
        return self.scroll_offset.y >= self.max_scroll_y

    def _width(self) -> int:
        return max(self.scrollable_content_region.width, 10)

    def _header_lines(self) -> int:
        return 1 if self._hidden or (not self._sources and self._empty is not None) else 0

    def _relayout(self) -> None:
        if not self.is_mounted:
            return
        width = self._width()
        if width != self._wrap_width:
            self._wrap_width = width
            self._strips = [None] * len(self._sources)
        console = self.app.console
        options = console.options.update(width=width, highlight=False, markup=False)
        for index, cached in enumerate(self._strips):
            if cached is None:
                text = self._render_item(self._sources[index])
                lines = console.render_lines(text, options, pad=False)
                self._strips[index] = [Strip(line) for line in lines] or [Strip([])]
                self.renders += 1
        heights = [len(s) if s is not None else 0 for s in self._strips]
        header = self._header_lines()
        self._starts = [header + start for start in accumulate(heights, initial=0)][:-1]
        self._total = header + sum(heights)
        self.virtual_size = Size(width, self._total)
        self.refresh()

    def _header_strip(self) -> Strip:
        if self._hidden:
            note = f"… {self._hidden} earlier segment{'s' if self._hidden != 1 else ''} not shown"
            return Strip([RichSegment(note, Style(dim=True, italic=True))])
        if self._empty is not None:
            return Strip(list(self._empty.render(self.app.console)))
        return Strip([])

    def _strip_at(self, y: int) -> Strip | None:
        if y < 0 or y >= self._total:
            return None
        if y < self._header_lines():
            return self._header_strip()
        index = bisect_right(self._starts, y) - 1
        lines = self._strips[index]
        if lines is None:
            return None
        offset = y - self._starts[index]
        return lines[offset] if offset < len(lines) else None

    def on_resize(self, event: Resize) -> None:
        """Re-wrap everything for the new width, keeping follow mode."""
        del event
        follow = self._at_bottom()
        self._relayout()
        if follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def on_mount(self) -> None:
        """Lay out whatever arrived before mounting."""
        self._relayout()

    def render_line(self, y: int) -> Strip:
        """Look up one cached line; nothing is wrapped here."""
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        style = self.rich_style
        strip = self._strip_at(scroll_y + y)
        if strip is None:
            return Strip.blank(width, style)
        return strip.crop_extend(scroll_x, scroll_x + width, style).apply_style(style)


def render_segment(seg: Segment, *, ended: bool = False, no_color: bool = False) -> Text:
    """One transcript segment as inert text: who, what, and its live/interim/cut marks.

    ``ended``: the session is over, so a typed turn still queued was never sent.
    ``no_color``: ``NO_COLOR`` is set; who speaks is told by weight, reverse video and
    glyphs (the monochrome filter would turn a coloured label into grey on grey).
    """
    text = Text(overflow="fold")
    if seg.role == "user":
        label = "you ⌨ " if seg.typed else "you ▸ "
        label_style = "bold" if no_color else "bold cyan"
    else:
        label = "agent ▸ "
        label_style = "bold reverse" if no_color else "bold magenta"
    if no_color and seg.role == "agent":
        text.append(label.rstrip(), style=label_style)
        text.append(" ")
    else:
        text.append(label, style=label_style)
    interim = seg.role == "user" and not seg.final
    body = seg.text
    if not body and seg.role == "agent" and seg.open:
        body = "…"
    if "\n" in body:
        # A multi-line turn (a paste): later lines line up under the first.
        body = body.replace("\n", "\n" + " " * cell_len(label))
    text.append_text(safe_text(body, "italic dim" if interim else ""))
    if interim:
        text.append(" …", style="dim")
    if seg.role == "agent" and seg.open and not seg.interrupted:
        text.append(" ▍", style="bold" if no_color else "bold magenta")
    if seg.interrupted:
        text.append("  ⏹ interrupted", style="bold" if no_color else "bold yellow")
    if seg.typed and seg.queued:
        text.append("  (not sent)" if ended else "  (queued)", style="dim italic")
    if seg.typed and seg.audio is False:
        text.append("  ·text reply", style="dim")
    return text


def render_error(error: ErrorEntry) -> Text:
    """An error, kept in the transcript after its toast fades: dim, marked, literal."""
    text = Text(overflow="fold", style="dim")
    text.append("⚠ error: ", style="bold")
    text.append_text(safe_text(error.message))
    if error.detail and error.detail != error.message:
        text.append(" — ")
        text.append_text(safe_text(error.detail))
    return text


TranscriptItem: TypeAlias = Segment | ErrorEntry
"""What the transcript shows: what was said, and the errors between."""


def merge_errors(
    segments: Sequence[Segment], errors: Sequence[ErrorEntry]
) -> Sequence[TranscriptItem]:
    """The segments with each error placed by its time (after what started before it)."""
    if not errors:
        return segments
    items: list[TranscriptItem] = []
    index = 0
    for error in errors:
        while index < len(segments) and segments[index].started_at <= error.at:
            items.append(segments[index])
            index += 1
        items.append(error)
    items.extend(segments[index:])
    return items


class Transcript(TranscriptView[TranscriptItem]):
    """The conversation transcript (``State.transcript``, with ``State.errors`` in place)."""

    def __init__(self, *, id: str | None = None, max_items: int = DEFAULT_MAX_ITEMS) -> None:
        self._ended = False
        super().__init__(
            self._item_text,
            max_items=max_items,
            empty_text=Text("Nothing said yet. Type below, or speak.", style="dim"),
            id=id,
        )

    def _item_text(self, item: TranscriptItem) -> Text:
        if isinstance(item, ErrorEntry):
            return render_error(item)
        no_color = self.is_attached and self.app.no_color
        return render_segment(item, ended=self._ended, no_color=no_color)

    def show(self, state: State) -> None:
        """Show the state's transcript, its errors in place."""
        self.set_ended(state.ended)
        self.set_items(merge_errors(state.transcript, state.errors))

    def set_ended(self, ended: bool) -> None:
        """The session ended: queued typed turns now read as not sent."""
        if ended != self._ended:
            self._ended = ended
            self.invalidate(lambda item: isinstance(item, Segment) and item.typed and item.queued)


__all__ = [
    "DEFAULT_MAX_ITEMS",
    "Transcript",
    "TranscriptItem",
    "TranscriptView",
    "merge_errors",
    "render_error",
    "render_segment",
]
