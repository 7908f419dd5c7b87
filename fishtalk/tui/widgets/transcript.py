"""The transcript pane: what was said (and the errors between), rendered as inert text.

:class:`Transcript` is a :class:`~fishtalk.tui.widgets.bounded_view.TranscriptView` (the
virtualised, bounded, follow-mode scroll view) that finds what changed by identity in the
reducer's block log, so one frame costs what changed, not the length of the conversation.
:func:`render_segment` and :func:`render_error` draw one item each.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeAlias, TypeVar

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from fishtalk.core.conversation import LOG_CHUNK, ErrorEntry, Log, Segment, State
from fishtalk.tui.safe import safe_text
from fishtalk.tui.widgets.bounded_view import DEFAULT_MAX_ITEMS, TranscriptView
from fishtalk.tui.widgets.latency import Badges

K = TypeVar("K")


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
    if badge and seg.role == "agent" and not (seg.interrupted and badge == INTERRUPTED):
        text.append_text(badge_piece(badge))
    return text


INTERRUPTED = "interrupted"
"""The badge of a reply cut before it was heard (the segment's own mark says so)."""
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
        if badge == INTERRUPTED and item.interrupted:
            badge = None  # "⏹ interrupted" says it already: one mark, not two
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
        badged = self._badges.update(state.latency, state.segment)
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
    "Transcript",
    "TranscriptItem",
    "badge_piece",
    "log_changes",
    "merge_errors",
    "render_error",
    "render_segment",
    "with_badge",
]
