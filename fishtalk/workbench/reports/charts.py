"""SVG charts drawn from numbers: a turn's latency waterfall, a latency histogram with p50
and p95 marked, and the waveform strip of a call's two channels.

Inputs may come from a hostile journal: every figure is coerced with :func:`num` and every
word that is not ours goes through :func:`~fishtalk.workbench.reports.page.esc`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from fishtalk.workbench.reports.page import esc, ms

WIDTH: Final = 640
"""The user-unit width of a chart (it scales to the page)."""
LABEL: Final = 120
"""Width of the label column of a waterfall."""
FIGURE: Final = 70
"""Width of the figure column of a waterfall."""
ROW: Final = 18

STAGES: Final = (
    ("user_ended_at", "user turn end"),
    ("thinking_at", "thinking"),
    ("first_text_at", "first text"),
    ("audio_received_at", "audio received"),
)
"""The waterfall's marks in order (``heard`` comes from ``heard_ms``)."""


def num(value: object) -> float | None:
    """A finite number from journal data, else None (booleans and strings are not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if number == number and abs(number) != float("inf") else None


def marks(waterfall: Mapping[str, object]) -> list[tuple[str, float]]:
    """(stage, milliseconds after the user's turn ended) for each mark the turn has."""
    origin = num(waterfall.get("user_ended_at"))
    if origin is None:
        origin = num(waterfall.get("user_final_at"))
    if origin is None:
        return []
    out: list[tuple[str, float]] = []
    for key, label in STAGES:
        at = num(waterfall.get(key))
        if at is not None:
            out.append((label, max(0.0, (at - origin) * 1000.0)))
    heard = num(waterfall.get("heard_ms"))
    if heard is not None:
        out.append(("heard", max(0.0, heard)))
    return out


def span(waterfall: Mapping[str, object]) -> float:
    """The longest offset of the turn's marks (ms), for a common scale."""
    return max((at for _, at in marks(waterfall)), default=0.0)


def _boxed(parts: list[str]) -> str:
    """A chart in a box that scrolls sideways on a narrow screen, so its text keeps a
    readable size instead of shrinking with the width."""
    return '<div class="chart-box">' + "".join(parts) + "</div>"


def waterfall_svg(waterfall: Mapping[str, object], scale_ms: float) -> str:
    """One turn's waterfall: a row per mark, its bar from the previous mark to this one."""
    rows = marks(waterfall)
    if len(rows) < 2:
        why = waterfall.get("incomplete") or "too few marks"
        return f'<p class="label">No waterfall: {esc(why)}.</p>'
    scale = max(scale_ms, 1.0)
    plot = WIDTH - LABEL - FIGURE
    height = ROW * len(rows) + 18
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="latency waterfall">'
    ]
    for tick in _ticks(scale):
        x = LABEL + tick / scale * plot
        parts.append(
            f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height - 14}"/>'
            f'<text class="dim" x="{x:.1f}" y="{height - 3}" text-anchor="middle">'
            f"{esc(ms(tick))}</text>"
        )
    previous = 0.0
    for i, (label, at) in enumerate(rows):
        y = i * ROW + 2
        x0 = LABEL + min(previous, at) / scale * plot
        w = max(2.0, abs(at - previous) / scale * plot)
        parts.append(
            f'<text x="{LABEL - 6}" y="{y + 12}" text-anchor="end">{esc(label)}</text>'
            f'<rect class="bar s{min(i, 4)}" x="{x0:.1f}" y="{y + 2}" width="{w:.1f}" '
            f'height="{ROW - 6}" rx="2"><title>{esc(label)}: {esc(ms(at))}</title></rect>'
            f'<text x="{WIDTH - 4}" y="{y + 12}" text-anchor="end">{esc(ms(at))}</text>'
        )
        previous = at
    parts.append("</svg>")
    return _boxed(parts)


def _ticks(scale: float) -> list[float]:
    for step in (10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 30000, 60000):
        if scale / step <= 6:
            return [step * i for i in range(int(scale // step) + 1)]
    return [0.0, scale]


def histogram_svg(values_ms: Sequence[float], p50: float | None, p95: float | None) -> str:
    """A histogram of latencies (ms) with the p50 and p95 lines marked."""
    if not values_ms:
        return '<p class="label">No measured latency.</p>'
    top = max(max(values_ms), p95 or 0.0, 1.0)
    bins = max(5, min(30, len(values_ms)))
    width = top / bins
    counts = [0] * bins
    for value in values_ms:
        counts[min(bins - 1, int(value / width))] += 1
    plot_w, plot_h, left, bottom = WIDTH - 70, 120.0, 30, 150
    most = max(counts)
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} 175" role="img" aria-label="latency histogram">',
        f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{bottom}" y2="{bottom}"/>',
        f'<text class="dim" x="{left - 4}" y="{bottom - plot_h + 8}" '
        f'text-anchor="end">{most}</text>',
    ]
    for i, count in enumerate(counts):
        h = count / most * plot_h
        x = left + i * plot_w / bins
        lo, hi = ms(i * width), ms((i + 1) * width)
        parts.append(
            f'<rect class="bar" x="{x + 1:.1f}" y="{bottom - h:.1f}" '
            f'width="{plot_w / bins - 2:.1f}" height="{h:.1f}">'
            f"<title>{esc(lo)} – {esc(hi)}: {count}</title></rect>"
        )
    for tick in _ticks(top):
        x = left + tick / top * plot_w
        parts.append(
            f'<text class="dim" x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">'
            f"{esc(ms(tick))}</text>"
        )
    for name, mark, y in (("p50", p50, 12), ("p95", p95, 26)):
        if mark is not None:
            value = mark
            x = left + value / top * plot_w
            anchor = "end" if x > WIDTH - 120 else "start"
            dx = -4 if anchor == "end" else 4
            parts.append(
                f'<line class="{name}" x1="{x:.1f}" x2="{x:.1f}" y1="4" y2="{bottom}"/>'
                f'<text x="{x + dx:.1f}" y="{y}" text-anchor="{anchor}">'
                f"{name} {esc(ms(value))}</text>"
            )
    parts.append("</svg>")
    return _boxed(parts)


def waveform_svg(mic: Sequence[float], agent: Sequence[float], duration: float) -> str:
    """The call's two channels as one strip (microphone up, agent down) with a playhead;
    ``mic``/``agent`` are peaks in 0..1, one per column."""
    columns = max(len(mic), len(agent), 1)
    step = 1000 / columns

    def path(peaks: Sequence[float], sign: int) -> str:
        return "".join(
            f"M{i * step:.1f} 40v{sign * max(0.5, min(1.0, p) * 38):.1f}"
            for i, p in enumerate(peaks)
            if p > 0.002
        )

    return (
        f'<svg id="strip" class="strip" viewBox="0 0 1000 80" preserveAspectRatio="none" '
        f'data-duration="{duration:.3f}" role="img" aria-label="waveform: microphone above, '
        f'agent below; click to seek">'
        f'<line class="axis" x1="0" x2="1000" y1="40" y2="40"/>'
        f'<path class="mic" vector-effect="non-scaling-stroke" d="{path(mic, -1)}"/>'
        f'<path class="agent" vector-effect="non-scaling-stroke" d="{path(agent, 1)}"/>'
        f'<rect id="playhead" class="head" x="0" y="0" width="2" height="80"/></svg>'
    )


__all__ = ["histogram_svg", "marks", "num", "span", "waterfall_svg", "waveform_svg"]
