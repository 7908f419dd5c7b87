"""One reduction in progress: the state being built, copied once, and the small writes
every handler shares (errors, notices, sequence numbers, the mode)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from fishtalk.core.conversation.effects import (
    Effect,
)
from fishtalk.core.conversation.reasons import (
    describe_error,
)
from fishtalk.core.conversation.state import (
    MAX_ERRORS,
    MAX_NOTICES,
    PREVIEW_CHARS,
    ErrorEntry,
    Internal,
    Mode,
    Notice,
    NoticeKind,
    State,
)

_T = TypeVar("_T")


_COPIERS: dict[type, Callable[[Any], Any]] = {}


def _copier(cls: type) -> Callable[[Any], Any]:
    """A function that copies an instance of the slotted class ``cls`` field by field,
    written out once per class: each slot's descriptor is called directly, with no loop
    over names and no ``getattr``/``object.__setattr__`` lookups per field (a copy of the
    21-slot state takes about 40% of the time of the loop). Frozen dataclasses refuse
    ``setattr``, but not their slots' descriptors."""
    names: tuple[str, ...] = cls.__slots__  # type: ignore[attr-defined]  # a slotted dataclass
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    lines = ["def copy(obj):", "    new = _new(_cls)"]
    for i, name in enumerate(names):
        if not name.isidentifier():  # not expected of a dataclass; keep the plain path
            return _copy_slots
        scope[f"_set{i}"] = getattr(cls, name).__set__
        lines.append(f"    _set{i}(new, obj.{name})")
    lines.append("    return new")
    exec("\n".join(lines), scope)  # noqa: S102  # built from the class's own slot names
    copy: Callable[[Any], Any] = scope["copy"]
    return copy


def _copy_slots(obj: _T) -> _T:
    new = object.__new__(type(obj))
    for name in type(obj).__slots__:  # type: ignore[attr-defined]  # a slotted dataclass
        object.__setattr__(new, name, getattr(obj, name))
    return new


def _copy(obj: _T) -> _T:
    """A shallow copy of a slotted dataclass (cheaper than ``dataclasses.replace``)."""
    cls = type(obj)
    copier = _COPIERS.get(cls)
    if copier is None:
        copier = _COPIERS[cls] = _copier(cls)
    new: _T = copier(obj)
    return new


class _Step:
    """One reduction: the state being built and the effects so far.

    The first write copies the state (and, separately, its clock or bookkeeping) once;
    later writes in the same step change that private copy in place. Nothing outside sees
    the copy before :func:`reduce` returns it, so every published state stays immutable.
    """

    __slots__ = ("_own_book", "_own_clock", "_own_state", "fx", "s")

    def __init__(self, state: State) -> None:
        self.s = state
        self.fx: list[Effect] = []
        self._own_state = False
        self._own_book = False
        self._own_clock = False

    def set(self, **changes: Any) -> None:
        if not self._own_state:
            self.s = _copy(self.s)
            self._own_state = True
        for name, value in changes.items():
            object.__setattr__(self.s, name, value)

    def book(self, **changes: Any) -> None:
        """Change the reducer's bookkeeping (:class:`Internal`)."""
        if not self._own_book:
            self.set(_internal=_copy(self.s._internal))
            self._own_book = True
        internal = self.s._internal
        for name, value in changes.items():
            object.__setattr__(internal, name, value)

    def clock(self, **changes: Any) -> None:
        if not self._own_clock:
            self.set(clock=_copy(self.s.clock))
            self._own_clock = True
        clock = self.s.clock
        for name, value in changes.items():
            object.__setattr__(clock, name, value)

    @property
    def internal(self) -> Internal:
        return self.s._internal


def _with(obj: _T, **changes: Any) -> _T:
    """``obj`` with ``changes``: a fresh copy (cheaper than ``dataclasses.replace``, which
    matters on the reducer's common path); the values are the reducer's own."""
    new = _copy(obj)
    for name, value in changes.items():
        object.__setattr__(new, name, value)
    return new


def _ignored(r: _Step) -> None:
    debug = r.internal.debug
    r.book(debug=replace(debug, ignored_inputs=debug.ignored_inputs + 1))


def _bounded(items: tuple[object, ...], limit: int) -> int:
    return max(0, len(items) - limit)


def _add_error(
    r: _Step, code: str, at: float, detail: str | None = None, call_id: str | None = None
) -> None:
    entry = ErrorEntry(
        code=code, message=describe_error(code), at=at, detail=detail, call_id=call_id
    )
    errors = (*r.s.errors, entry)
    r.set(errors=errors[_bounded(errors, MAX_ERRORS) :])


def _add_notice(r: _Step, text: str, at: float, kind: NoticeKind) -> None:
    notices = (*r.s.notices, Notice(text=text, at=at, kind=kind))
    r.set(notices=notices[_bounded(notices, MAX_NOTICES) :])


def _preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _next_seq(r: _Step) -> int:
    seq = r.internal.next_seq
    r.book(next_seq=seq + 1)
    return seq


def _derive_mode(state: State, previous: Mode) -> Mode:
    """Speaking while an agent segment is open; thinking from the agent state; else listening.

    Like the web SDK, thinking persists while the agent reports ``speaking`` but no
    transcript has started yet (speech is paced to playout, so nothing is audible). Unlike
    the web SDK, a return to ``listening``/``idle`` without a reply clears thinking.
    """
    if state.speaking_segment is not None:
        return "speaking"
    if state.agent_state == "thinking":
        return "thinking"
    if state.agent_state == "speaking" and previous == "thinking":
        return "thinking"
    return "listening"


def _with_mode(r: _Step) -> None:
    mode = _derive_mode(r.s, r.s.mode)
    if mode != r.s.mode:
        r.set(mode=mode)
