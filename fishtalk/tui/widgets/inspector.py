"""The protocol inspector: the session's journal records, live, in a pane.

The app hands every session observation (:mod:`fishtalk.engine.observe`) to :meth:`Inspector.
collect` on the loop (an append to a bounded deque, nothing more). While the pane is shown
it turns what was collected into journal records (:class:`~fishtalk.engine.journal.records.
Recorder`) a few times a second and lists them, colour-coded by direction and kind:
packets in, packets out, inputs, state changes, tool runs. A filter (substring of the
topic, the type or the text) narrows the list; the highlighted record is shown
pretty-printed below it (beside it in a wide terminal). The list always keeps rows to
move through: the detail only takes what the list leaves. Showing the pane takes no
focus (the user goes on typing where they were; Tab reaches the list and the filter).
Times are the journal's: seconds since the journal's header, when the app is given its
origin (:meth:`Inspector.set_origin`). Remote text is shown literally: every line is a
:class:`rich.text.Text` with control characters made visible, never markup.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import deque
from typing import Any, ClassVar, Final

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.events import Resize
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from fishtalk.core.text import make_visible, strip
from fishtalk.engine.journal.records import Recorder
from fishtalk.engine.observe import AudioFrame, Observation

KEEP: Final = 2_000
"""Records the pane keeps (the oldest go first)."""
PENDING: Final = 5_000
"""Observations kept while the pane is hidden."""
SUMMARY_CHARS: Final = 160
"""Characters of a record's preview in its list line (cut with a visible ``…``)."""
SIDE_BY_SIDE: Final = 140
"""From this many columns on, the detail is beside the list instead of under it."""

STYLES: Final = {
    "packet_in": "green",
    "packet_out": "cyan",
    "input": "yellow",
    "change": "dim",
    "tool_run": "magenta",
    "approval": "magenta",
    "grant": "blue",
    "end": "bold red",
    "levels": "dim",
}
ARROWS: Final = {"packet_in": "<-", "packet_out": "->"}


def summary_line(record: dict[str, Any]) -> Text:
    """One list line for ``record``: time, direction, type, topic or kind, and a preview."""
    kind = str(record.get("type", "?"))
    what = record.get("topic") or record.get("kind") or record.get("tool_name") or ""
    body = record.get("raw") or record.get("preview") or record.get("text") or ""
    if not body and kind == "change":
        segment = record.get("segment")
        if isinstance(segment, dict):
            body = segment.get("text") or ""
    if not body:
        rest = {k: v for k, v in record.items() if k not in ("type", "t", "wall", "kind")}
        body = json.dumps(rest, ensure_ascii=False, separators=(",", ":"))
    preview = clip(strip(str(body)), SUMMARY_CHARS)
    t = record.get("t")
    stamp = f"{t:9.3f}" if isinstance(t, int | float) else " " * 9
    line = Text(f"{stamp} {ARROWS.get(kind, '  ')} ", style="dim")
    line.append(f"{kind:<10} ", style=STYLES.get(kind, ""))
    line.append(f"{strip(str(what))} ", style="bold")
    line.append(preview)
    # One row per record: a long preview ends in "…" at the pane's edge, never wraps.
    line.no_wrap = True
    line.overflow = "ellipsis"
    return line


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with ``…`` at the right end when cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def detail_text(record: dict[str, Any]) -> Text:
    """``record`` pretty-printed (its raw JSON parsed and indented too), shown literally."""
    shown = dict(record)
    raw = shown.get("raw")
    if isinstance(raw, str):
        with contextlib.suppress(ValueError):
            shown["raw"] = json.loads(raw)
    return Text(make_visible(json.dumps(shown, ensure_ascii=False, indent=2)))


class RecordList(OptionList):
    """The record list: reached with nothing picked, it picks the newest record (the one
    in view while the list follows), so Up goes back in time from there."""

    def on_focus(self) -> None:
        """Pick the newest record when nothing is picked yet."""
        if self.highlighted is None and self.option_count:
            self.highlighted = self.option_count - 1


class Inspector(Vertical):
    """The inspector pane (hidden until toggled)."""

    # The filter is one borderless row; the list takes at least half of what is left
    # (the detail scrolls in the rest), so Up/Down always move a selection one can see.
    DEFAULT_CSS: ClassVar[str] = """
    Inspector {
        display: none;
        height: 45%;
        min-height: 8;
        border: round $secondary;
    }
    Inspector.-shown { display: block; }
    Inspector #inspector-filter { height: 1; border: none; padding: 0 1; }
    Inspector #inspector-body { height: 1fr; }
    Inspector #inspector-list {
        height: 1fr;
        min-height: 3;
        border: none;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    Inspector #inspector-detail {
        height: auto;
        max-height: 50%;
        overflow-y: auto;
        border-top: solid $secondary 50%;
    }
    Inspector #inspector-body.-side { layout: horizontal; }
    Inspector #inspector-body.-side #inspector-list { width: 1fr; height: 1fr; }
    Inspector #inspector-body.-side #inspector-detail {
        width: 1fr;
        height: 1fr;
        max-height: 100%;
        border-top: none;
        border-left: solid $secondary 50%;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "inspector"
        self._pending: deque[Observation] = deque(maxlen=PENDING)
        self._recorder = Recorder(time.monotonic(), time.time())
        self._body = Vertical(id="inspector-body")
        self.records: deque[dict[str, Any]] = deque(maxlen=KEEP)
        """Every record converted so far (filtered or not)."""
        self._filter = ""
        self._shown: list[dict[str, Any]] = []
        self._list = RecordList(id="inspector-list")
        self._detail = Static(id="inspector-detail")
        self._input = Input(placeholder="filter: topic, type or text", id="inspector-filter")

    def compose(self) -> ComposeResult:
        """Filter, then the list with the detail under it (or beside it)."""
        yield self._input
        with self._body:
            yield self._list
            yield self._detail

    def on_resize(self, event: Resize) -> None:
        """Wide: the detail goes beside the list, which then keeps the pane's height."""
        self._body.set_class(event.size.width >= SIDE_BY_SIDE, "-side")

    def set_origin(self, mono0: float, wall0: float) -> None:
        """Time records from ``mono0`` (the session clock) and ``wall0`` (Unix time): the
        journal's header, so a record's time here is the journal's for the same record.
        Only before the first record is converted (times never jump)."""
        if not self.records:
            self._recorder = Recorder(mono0, wall0)

    def on_mount(self) -> None:
        """Convert what was collected a few times a second (only while shown)."""
        self.set_interval(0.25, self.pump)

    @property
    def shown(self) -> bool:
        """Whether the pane is visible."""
        return self.has_class("-shown")

    def toggle(self) -> bool:
        """Show or hide the pane; returns whether it is shown now. The focus stays where
        it is (hiding it from inside the pane is the app's to move)."""
        self.toggle_class("-shown")
        if self.shown:
            self.pump()
        return self.shown

    @property
    def focus_stops(self) -> tuple[RecordList, Input]:
        """Where Tab stops in the pane, in order: the list, then the filter."""
        return (self._list, self._input)

    def collect(self, item: Observation) -> None:
        """The session observer: keep the observation for later (cheap; on the loop)."""
        if not isinstance(item, AudioFrame):
            self._pending.append(item)

    def pump(self) -> None:
        """Turn collected observations into records and list the ones the filter keeps."""
        if not self.shown or not self._pending:
            return
        new: list[dict[str, Any]] = []
        while self._pending:
            item = self._pending.popleft()
            new.extend(self._recorder.records(item))
        self.records.extend(new)
        kept = [r for r in new if self._matches(r)]
        if kept:
            self._append(kept)

    def _matches(self, record: dict[str, Any]) -> bool:
        if not self._filter:
            return True
        text = json.dumps(record, ensure_ascii=False).lower()
        return self._filter in text

    def _append(self, records: list[dict[str, Any]]) -> None:
        options = self._list
        # Like the transcript, the list follows the newest records until one is picked
        # or the list is scrolled up.
        tail = options.highlighted is None and options.scroll_y >= options.max_scroll_y
        self._shown.extend(records)
        options.add_options([Option(summary_line(r)) for r in records])
        overflow = len(self._shown) - KEEP
        if overflow > 0:
            del self._shown[:overflow]
            self._rebuild()
        if tail:
            options.call_after_refresh(options.scroll_end, animate=False, immediate=True)

    def _rebuild(self) -> None:
        self._list.clear_options()
        self._list.add_options([Option(summary_line(r)) for r in self._shown])

    @on(Input.Changed, "#inspector-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._filter = event.value.strip().lower()
        self._shown = [r for r in self.records if self._matches(r)]
        self._rebuild()

    @on(Input.Submitted, "#inspector-filter")
    def _to_list(self, event: Input.Submitted) -> None:
        event.stop()  # Enter here is not a typed turn
        self._list.focus()

    @on(OptionList.OptionHighlighted, "#inspector-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        index = event.option_index
        if 0 <= index < len(self._shown):
            self._detail.update(detail_text(self._shown[index]))

    @property
    def shown_records(self) -> list[dict[str, Any]]:
        """The records the list shows now (after the filter)."""
        return list(self._shown)


__all__ = ["Inspector", "RecordList", "clip", "detail_text", "summary_line"]
