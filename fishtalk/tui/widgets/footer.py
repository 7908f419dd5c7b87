"""The footer: the keys that work now, always in one order (:data:`FOOTER_ORDER`).

Textual's own footer lists the bindings of the focused widget first, so the same keys
moved about as the focus went from the message box to the inspector's filter, or a
screen opened. Here the keys keep their places whatever has the focus.
"""

from __future__ import annotations

from typing import Final

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

FOOTER_ORDER: Final = (
    "hangup",
    "quit",
    "interrupt",
    "toggle_mute",
    "talk",
    "toggle_spoken",
    "replay_pause",
    "replay_step",
    "replay_seek",
    "replay_speed",
    "help",
)
"""Actions in the order the footer shows them; any other action follows, as bound."""


def _rank(action: str) -> int:
    name = action.split("(", 1)[0].rsplit(".", 1)[-1]
    return FOOTER_ORDER.index(name) if name in FOOTER_ORDER else len(FOOTER_ORDER)


class KeyFooter(Footer):
    """A :class:`~textual.widgets.Footer` whose keys keep one order on every screen."""

    def compose(self) -> ComposeResult:
        """Textual's keys, sorted by :data:`FOOTER_ORDER` (stable: ties keep theirs)."""
        widgets = list(super().compose())
        keys = [w for w in widgets if isinstance(w, FooterKey)]
        keys.sort(key=lambda key: _rank(key.action))
        ordered = iter(keys)
        # Anything that is not a key (a group label) stays where it was.
        yield from (next(ordered) if isinstance(w, FooterKey) else w for w in widgets)


__all__ = ["FOOTER_ORDER", "KeyFooter"]
