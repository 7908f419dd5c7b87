"""The transcript pane: a virtualised, bounded, follow-mode scroll view.

Only items whose source object changed are re-wrapped; each item's wrapped lines are
cached as strips, and ``render_line`` only looks lines up. The view keeps the newest
``max_items`` items (older ones collapse into a one-line note), so a session with
thousands of turns costs the same per frame as a short one.

Items have absolute positions (counting what was dropped before them), so when old items
drop off the front nothing that stays is re-wrapped. A change re-lays out only from the
first changed item to the end (the last item, when a reply streams in), and
:class:`Transcript` finds what changed by identity in the reducer's block log, so one frame
costs what changed, not the length of the conversation.

Follow mode: new content scrolls the view to the bottom only when it was already at the
bottom; a person reading scrollback is never yanked down.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import ClassVar, Generic, TypeAlias, TypeVar

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment as RichSegment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.events import Resize
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from fishtalk.core.conversation import LOG_CHUNK, ErrorEntry, Log, Segment, State
from fishtalk.tui.safe import safe_text
from fishtalk.tui.widgets.latency import Badges

T = TypeVar("T")
K = TypeVar("K")

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
        self._ends: list[int] = []
        """Each held item's last line + 1, in absolute lines (valid below ``_stale``)."""
        self._line0 = 0
        """The absolute line where the first held item starts."""
        self._stale = 0
        """Held items from this index on need laying out (and wrapping, if unwrapped)."""
        self._origin = 0
        """The absolute position of the first held item (``set_items``)."""
        self._hidden = 0
        self._drawn_hidden = 0
        self._total = 0
        self._wrap_width = 0
        self.renders = 0
        """How many items have been (re-)wrapped; the benchmark and tests read it."""
        self.layouts = 0
        """How many items have been laid out (placed after a change); tests read it."""

    # --- public ------------------------------------------------------------------------

    @property
    def item_count(self) -> int:
        """Items currently held (at most ``max_items``)."""
        return len(self._sources)

    @property
    def hidden_count(self) -> int:
        """Older items not shown: dropped before they reached the view, or by its bound."""
        return self._hidden

    @property
    def line_count(self) -> int:
        """Total wrapped lines (the virtual height)."""
        return self._total

    def set_items(self, items: Sequence[T], *, offset: int = 0) -> None:
        """Show ``items``; only the ones whose identity/value changed are re-rendered.

        ``offset``: the absolute position of ``items[0]`` (how many older items were
        dropped before them and are only counted). Held items keep their position, so when
        older items drop off the front nothing that stays is re-wrapped.
        """
        follow = self._at_bottom()
        first = offset + max(0, len(items) - self.max_items)
        visible = items[first - offset :]
        if first >= self._origin and first - self._origin <= len(self._sources):
            self._trim(first - self._origin)
        else:
            self._clear()
        self._origin = first
        self._hidden = first
        held = len(self._sources)
        for index, item in enumerate(visible):
            if index < held:
                self._put(index, item)
            else:
                self._insert(index, item)
        if held > len(visible):
            self._cut(len(visible))
        self._update(follow)

    def invalidate(self, predicate: Callable[[T], bool]) -> None:
        """Re-render the held items matching ``predicate`` (their look changed, not them)."""
        for index, item in enumerate(self._sources):
            if predicate(item):
                self._strips[index] = None
                self._stale = min(self._stale, index)
        if self._stale < len(self._sources):
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

    # --- editing the held items (subclasses; then ``_update``) -------------------------

    def _put(self, index: int, item: T) -> None:
        """Item ``index`` is now ``item`` (nothing happens when it is the same)."""
        old = self._sources[index]
        if old is item or old == item:
            return
        self._sources[index] = item
        self._strips[index] = None
        self._stale = min(self._stale, index)

    def _insert(self, index: int, item: T) -> None:
        self._sources.insert(index, item)
        self._strips.insert(index, None)
        self._ends.insert(index, 0)
        self._stale = min(self._stale, index)

    def _trim(self, count: int) -> None:
        """Drop the ``count`` oldest held items; what stays keeps its wrapped lines."""
        if count <= 0:
            return
        if count >= len(self._sources):
            self._origin += count
            self._clear()
            return
        if self._stale >= count:
            self._line0 = self._ends[count - 1]
            self._stale -= count
        else:
            self._stale = 0
        del self._sources[:count]
        del self._strips[:count]
        del self._ends[:count]
        self._origin += count

    def _cut(self, count: int) -> None:
        """Keep only the first ``count`` held items."""
        del self._sources[count:]
        del self._strips[count:]
        del self._ends[count:]
        self._stale = min(self._stale, count)

    def _clear(self) -> None:
        self._sources.clear()
        self._strips.clear()
        self._ends.clear()
        self._stale = 0
        self._line0 = 0

    def _update(self, follow: bool) -> None:
        """Lay out what changed and keep following the bottom if we were."""
        if (
            self._stale < len(self._sources)
            or self._hidden != self._drawn_hidden
            or self._header_lines() + self._body_lines() != self._total
        ):
            self._relayout()
            if follow:
                self.scroll_end(animate=False, immediate=True, x_axis=False)

    # --- internals ---------------------------------------------------------------------

    def _at_bottom(self) -> bool:
        if not self.is_mounted or self.is_vertical_scrollbar_grabbed:
            return not self.is_mounted
        return self.scroll_offset.y >= self.max_scroll_y

    def _width(self) -> int:
        return max(self.scrollable_content_region.width, 10)

    def _header_lines(self) -> int:
        return 1 if self._hidden or (not self._sources and self._empty is not None) else 0

    def _body_lines(self) -> int:
        return self._ends[-1] - self._line0 if self._ends else 0

    def _relayout(self) -> None:
        if not self.is_mounted:
            return
        width = self._width()
        if width != self._wrap_width:
            self._wrap_width = width
            self._strips = [None] * len(self._sources)
            self._stale = 0
        strips, ends = self._strips, self._ends
        start = self._stale
        if start < len(strips):
            console = self.app.console
            options = console.options.update(width=width, highlight=False, markup=False)
            line = ends[start - 1] if start else self._line0
            for index in range(start, len(strips)):
                cached = strips[index]
                if cached is None:
                    text = self._render_item(self._sources[index])
                    lines = console.render_lines(text, options, pad=False)
                    cached = strips[index] = [Strip(line) for line in lines] or [Strip([])]
                    self.renders += 1
                line += len(cached)
                ends[index] = line
            self.layouts += len(strips) - start
            self._stale = len(strips)
        body = ends[-1] - self._line0 if ends else 0
        self._drawn_hidden = self._hidden
        self._total = self._header_lines() + body
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
        header = self._header_lines()
        if y < header:
            return self._header_strip()
        if self._stale < len(self._sources):
            return None  # laid out at the next update
        line = y - header + self._line0
        index = bisect_right(self._ends, line)
        if index >= len(self._strips):
            return None
        lines = self._strips[index]
        if lines is None:
            return None
        offset = line - (self._ends[index - 1] if index else self._line0)
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


def log_changes(previous: Log[K] | None, current: Log[K]) -> Iterator[tuple[int, K]]:
    """``(absolute position, item)`` for each item of ``current`` that is not the very same
    object at that position in ``previous`` (None: every item is new).

    Blocks both logs share are skipped whole, so this costs one identity check per block
    plus the changed blocks' items, however long the conversation.
    """
    if previous is current:
        return
    new_blocks = current.blocks
    old_blocks = previous.blocks if previous is not None else ()
    base = current.dropped
    shift = (base - previous.dropped) // LOG_CHUNK if previous is not None else 0
    for k, block in enumerate(new_blocks):
        j = k + shift
        old = old_blocks[j] if 0 <= j < len(old_blocks) else ()
        if old is block:
            continue
        start = base + k * LOG_CHUNK
        for i, item in enumerate(block):
            if i < len(old) and old[i] is item:
                continue
            yield start + i, item


def render_segment(
    seg: Segment, *, ended: bool = False, no_color: bool = False, badge: str | None = None
) -> Text:
    """One transcript segment as inert text: who, what, and its live/interim/cut marks.

    ``ended``: the session is over, so a typed turn still queued was never sent.
    ``no_color``: ``NO_COLOR`` is set; who speaks is told by weight, reverse video and
    glyphs (the monochrome filter would turn a coloured label into grey on grey).
    ``badge``: an agent turn's latency badge (plain text, shown dim at the end).
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
    if badge and seg.role == "agent":
        text.append_text(badge_piece(badge))
    return text


BADGE_GLYPH = "◷"
"""Marks a turn's latency badge (the words are ``latency.badge``'s)."""
_AGENT_INDENT = cell_len("agent ▸ ")


def badge_piece(badge: str) -> Text:
    """An agent turn's latency badge as it follows the text: dim, literal."""
    return Text(f"  {BADGE_GLYPH} {badge}", style="dim", no_wrap=True)


def with_badge(text: Text, badge: str, console: Console, width: int) -> Text:
    """``text`` (an agent segment) with its badge at the end, kept in one piece: when it
    does not fit on the last line at ``width`` it goes on a line of its own, indented."""
    piece = badge_piece(badge)
    plain = text.plain
    if width <= 0 or ("\n" not in plain and cell_len(plain) + piece.cell_len <= width):
        text.append_text(piece)
        return text
    last = text.wrap(console, width)[-1]
    if last.cell_len + piece.cell_len <= width:
        text.append_text(piece)
    else:
        text.append("\n" + " " * _AGENT_INDENT)
        text.append_text(piece[2:])
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
    """The conversation transcript (``State.transcript``, with ``State.errors`` in place).

    It follows the state by what changed: segments are found by identity in the reducer's
    block log (:func:`log_changes`), errors by what was appended since the last frame. An
    error stays shown (until the view's bound drops it) after the reducer's own bound on
    errors has let it go.
    """

    def __init__(self, *, id: str | None = None, max_items: int = DEFAULT_MAX_ITEMS) -> None:
        self._ended = False
        self._seg_log: Log[Segment] | None = None
        self._seen_error: ErrorEntry | None = None
        self._at: dict[int, int] = {}
        """Absolute segment position -> absolute view position, for held segments."""
        self._first_seg = -1
        """Absolute position of the oldest held segment (-1: none held)."""
        self._last_seg = -1
        """Absolute position of the newest held segment (-1: none yet)."""
        self._dropped_segments = 0
        """Segments the reducer dropped (``State.earlier_segments``) at the last update."""
        self._live_segments = 0
        self._badges = Badges()
        """Agent segment id -> its latency badge (from ``State.latency``)."""
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
        text = render_segment(item, ended=self._ended, no_color=no_color)
        badge = self._badges.by_segment.get(item.segment_id) if item.role == "agent" else None
        if badge is None:
            return text
        if not self.is_attached:
            text.append_text(badge_piece(badge))
            return text
        return with_badge(text, badge, self.app.console, self._wrap_width)

    def show(self, state: State) -> None:
        """Show the state's transcript, its errors in place (costs what changed)."""
        self.set_ended(state.ended)
        log = state.segment_log
        previous = self._seg_log
        if previous is not None and log.dropped < previous.dropped:
            previous = None  # another conversation: start again
            self._restart()
        badged = self._badges.update(state.latency)
        if (
            log is previous
            and not badged
            and (not state.errors or state.errors[-1] is self._seen_error)
        ):
            return
        follow = self._at_bottom()
        if badged:
            self._rebadge(badged)
        self._seg_log = log
        self._dropped_segments = log.dropped
        self._live_segments = len(log)
        new: list[tuple[int, Segment]] = []
        for position, segment in log_changes(previous, log):
            view = self._at.get(position)
            if view is not None:
                self._put(view - self._origin, segment)
            elif position > self._last_seg:
                new.append((position, segment))
            # else: a change to a segment the view's bound already dropped
        if len(new) > self.max_items:
            new = new[-self.max_items :]
        errors = _since(state.errors, self._seen_error)
        if state.errors:
            self._seen_error = state.errors[-1]
        for error in errors:
            self._insert(len(self._sources), error)
        for position, segment in new:
            self._add_segment(position, segment)
        excess = len(self._sources) - self.max_items
        if excess > 0:
            self._drop_front(excess)
        self._hidden = self._hidden_segments()
        self._update(follow)

    def _rebadge(self, segment_ids: list[str]) -> None:
        """Re-render the held agent segments whose badge changed (newest first: a badge
        nearly always belongs to one of the last few segments)."""
        wanted = set(segment_ids)
        sources = self._sources
        for index in range(len(sources) - 1, -1, -1):
            item = sources[index]
            if isinstance(item, Segment) and item.role == "agent" and item.segment_id in wanted:
                self._strips[index] = None
                self._stale = min(self._stale, index)
                wanted.discard(item.segment_id)
                if not wanted:
                    return

    def _add_segment(self, position: int, segment: Segment) -> None:
        """A new segment goes after the newest one, and after the errors since then that
        happened before it started (as :func:`merge_errors` places it)."""
        sources = self._sources
        index = self._at[self._last_seg] - self._origin + 1 if self._last_seg in self._at else 0
        while index < len(sources):
            item = sources[index]
            if not isinstance(item, ErrorEntry) or item.at >= segment.started_at:
                break
            index += 1
        self._insert(index, segment)
        self._at[position] = self._origin + index
        if self._first_seg < 0:
            self._first_seg = position
        self._last_seg = position

    def _drop_front(self, count: int) -> None:
        """Drop the oldest ``count`` held items (segments and errors)."""
        segments = sum(1 for item in self._sources[:count] if isinstance(item, Segment))
        for position in range(self._first_seg, self._first_seg + segments):
            self._at.pop(position, None)
        self._first_seg = self._first_seg + segments if self._at else -1
        self._trim(count)

    def _hidden_segments(self) -> int:
        """Segments not shown: all before the oldest held one."""
        if self._first_seg >= 0:
            return self._first_seg
        return self._dropped_segments + self._live_segments

    def restart(self) -> None:
        """Forget what is shown; the next :meth:`show` draws its state afresh (a replay
        that went back in time)."""
        self._seg_log = None
        self._restart()

    def _restart(self) -> None:
        self._clear()
        self._origin = 0
        self._at.clear()
        self._first_seg = self._last_seg = -1
        self._seen_error = None
        self._badges.clear()

    def set_ended(self, ended: bool) -> None:
        """The session ended: queued typed turns now read as not sent."""
        if ended != self._ended:
            self._ended = ended
            self.invalidate(lambda item: isinstance(item, Segment) and item.typed and item.queued)


def _since(items: tuple[ErrorEntry, ...], seen: ErrorEntry | None) -> tuple[ErrorEntry, ...]:
    """The entries after ``seen`` in a bounded tuple (older ones may have dropped off)."""
    if not items or items[-1] is seen:
        return ()
    if seen is not None:
        for index in range(len(items) - 1, -1, -1):
            if items[index] is seen:
                return items[index + 1 :]
    return items


__all__ = [
    "BADGE_GLYPH",
    "DEFAULT_MAX_ITEMS",
    "Transcript",
    "TranscriptItem",
    "TranscriptView",
    "badge_piece",
    "log_changes",
    "merge_errors",
    "render_error",
    "render_segment",
    "with_badge",
]
