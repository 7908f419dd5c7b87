"""A virtualised, bounded, follow-mode scroll view of rendered items: :class:`TranscriptView`.

Only items whose source object changed are re-wrapped; each item's wrapped lines are
cached as strips, and ``render_line`` only looks lines up. The view keeps the newest
``max_items`` items (older ones collapse into a one-line note), so a session with
thousands of turns costs the same per frame as a short one.

Items have absolute positions (counting what was dropped before them), so when old items
drop off the front nothing that stays is re-wrapped. A change re-lays out only from the
first changed item to the end (the last item, when a reply streams in).

Follow mode: new content scrolls the view to the bottom only when it was already at the
bottom; a person reading scrollback is never yanked down. Whether the view follows is
remembered when the view scrolls (by the user or to follow), not worked out from the
geometry when content arrives: a pane that got shorter (the inspector opened, the window
shrank) is still following, though its bottom line is now below the fold.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import ClassVar, Generic, TypeVar

from rich.segment import Segment as RichSegment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.events import Resize
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

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
        self._following = True
        """Whether the view sticks to the bottom (it was there when it last scrolled)."""
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
        return self._following

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Scrolled (by the user, or to follow): follow from now on only at the bottom."""
        super().watch_scroll_y(old_value, new_value)
        self._following = round(new_value) >= self.max_scroll_y

    @property
    def following(self) -> bool:
        """Whether new content scrolls into view (the view was at the bottom)."""
        return self._following

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
        """Re-wrap everything for the new size, keeping follow mode (a pane that got
        shorter still shows its newest line)."""
        del event
        follow = self._at_bottom()
        self._relayout()
        if follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
            self._following = True

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


__all__ = ["DEFAULT_MAX_ITEMS", "TranscriptView"]
