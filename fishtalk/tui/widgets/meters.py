"""Microphone and agent level meters, fed from ``Session.audio_levels()``."""

from __future__ import annotations

import math

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from fishtalk.engine.audio.base import AudioLevels

_FLOOR_DB = -60.0
_BLOCKS = " ▏▎▍▌▋▊▉█"

NO_AUDIO = "no audio"
"""What the meters' place shows when the session has no audio devices (and no reason)."""


def no_audio_text(reason: str | None) -> str:
    """The status bar's line without audio: why, in the backend's words (``no audio
    devices found``, ``no audio: audio disabled``), kept for as long as it is true. Not
    "text only": the agent may well be speaking its replies, we just cannot play them."""
    words = (reason or "").strip()
    if words.startswith("text-only"):
        words = words.removeprefix("text-only").lstrip(":").strip()
    if not words:
        return NO_AUDIO
    if words.startswith("no audio"):
        return words
    return f"{NO_AUDIO}: {words}"


def level_fraction(rms: float) -> float:
    """Map a linear RMS level to [0, 1] on a -60..0 dBFS scale (what ears perceive)."""
    if rms <= 0.0 or math.isnan(rms):
        return 0.0
    db = 20.0 * math.log10(min(rms, 1.0))
    return max(0.0, min(1.0, (db - _FLOOR_DB) / -_FLOOR_DB))


def bar(fraction: float, width: int) -> str:
    """A horizontal bar ``width`` cells wide filled to ``fraction`` with eighth blocks."""
    width = max(width, 0)
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_BLOCKS[part] if part and full < width else "")
    return text.ljust(width)


class LevelMeters(Widget):
    """Two one-line meters (mic, agent), or a one-line notice when there is no audio."""

    DEFAULT_CSS = """
    LevelMeters { height: 2; width: 1fr; }
    """

    levels: reactive[AudioLevels] = reactive(AudioLevels, layout=False)
    audio: reactive[bool] = reactive(True)
    """False when the session has no audio devices (text-only)."""
    muted: reactive[bool] = reactive(False)
    reason: reactive[str] = reactive("")
    """Why there is no audio (the backend's description), shown instead of the meters."""

    def watch_audio(self, audio: bool) -> None:
        """Two rows for two meters; the one-line notice gives the other row back."""
        self.styles.height = 2 if audio else 1

    def render(self) -> Text:
        """Draw both meters to fit the current width."""
        if not self.audio:
            # One line that never wraps: the status bar is as narrow as 22 cells at 80x24.
            return Text(no_audio_text(self.reason), style="dim", no_wrap=True, overflow="ellipsis")
        label_width = 6
        width = max(self.size.width - label_width, 4)
        mic_label = "mic ✕ " if self.muted else "mic   "
        mic = bar(0.0 if self.muted else level_fraction(self.levels.mic_rms), width)
        agent = bar(level_fraction(self.levels.agent_rms), width)
        text = Text(no_wrap=True, overflow="crop")
        for label, filled, style in ((mic_label, mic, "green"), ("agent ", agent, "magenta")):
            if text:
                text.append("\n")
            text.append(label, style="bold")
            level = filled.rstrip()
            text.append(level, style=style)
            # A dim track shows the meter's extent even in silence.
            text.append("·" * (width - len(level)), style="dim")
        return text
