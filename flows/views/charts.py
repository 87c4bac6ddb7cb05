"""Inline SVG charts of the chain page, computed server-side (numbers only, so nothing to escape).

Two charts over the chain's history (x = raw seq, i.e. how far the agent had got):
- bytes: raw chain size vs the view's size. Every summarization adds a point at the size before and one at the
  size after for the same seq, which draws the vertical drops of the compaction saw-tooth;
- tokens: the view's tokens vs the model window and the window minus the reserved output.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CHART_WIDTH", "CHART_HEIGHT", "MAX_POINTS", "Chart", "bytes_chart", "tokens_chart"]

CHART_WIDTH = 640
CHART_HEIGHT = 150
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 56, 8, 10, 22
MAX_POINTS = 400  # per series; more only costs page weight


@dataclass
class Chart:
    title: str
    unit: str
    series: list[dict[str, Any]] = field(default_factory=list)  # {"name", "css", "points": "x,y x,y", "last"}
    lines: list[dict[str, Any]] = field(default_factory=list)   # horizontal reference lines {"name","css","y","value"}
    y_max: int = 0
    x_max: int = 0
    empty: bool = True
    width: int = CHART_WIDTH
    height: int = CHART_HEIGHT

    @property
    def plot_bottom(self) -> int:
        return self.height - PAD_BOTTOM

    @property
    def plot_right(self) -> int:
        return self.width - PAD_RIGHT

    @property
    def pad_left(self) -> int:
        return PAD_LEFT

    @property
    def pad_top(self) -> int:
        return PAD_TOP


def _thin(points: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Keep at most MAX_POINTS, always keeping both ends and every drop (before/after pairs share an x)."""
    if len(points) <= MAX_POINTS:
        return points
    stride = -(-len(points) // MAX_POINTS)
    keep = [p for i, p in enumerate(points) if i % stride == 0 or (i and points[i - 1][0] == p[0])
            or (i + 1 < len(points) and points[i + 1][0] == p[0])]
    if keep[-1] != points[-1]:
        keep.append(points[-1])
    return keep


def _scale(chart: Chart, points: list[tuple[int, int]]) -> str:
    w = chart.plot_right - PAD_LEFT
    h = chart.plot_bottom - PAD_TOP
    xs = max(chart.x_max, 1)
    ys = max(chart.y_max, 1)
    return " ".join(f"{PAD_LEFT + w * x / xs:.1f},{chart.plot_bottom - h * y / ys:.1f}" for x, y in _thin(points))


def _view_series(history: dict[str, list[dict[str, Any]]], size_key: str, before_key: str) -> list[tuple[int, int]]:
    """View size per version, with each event's "before" size inserted just before the drop."""
    keyed: list[tuple[int, int, int]] = []
    for e in history["events"]:
        if e[before_key]:
            keyed.append((e["raw_seq_to"], 0, e[before_key]))
    for v in history["views"]:
        keyed.append((v["raw_seq_to"], 1, v[size_key]))
    keyed.sort()
    return [(x, y) for x, _, y in keyed]


def bytes_chart(*, history: dict[str, list[dict[str, Any]]], prefix: list[int]) -> Chart:
    last_seq = len(prefix) - 1
    chart = Chart(title="Raw chain vs model view", unit="bytes", x_max=last_seq)
    view = _view_series(history, "byte_size", "bytes_before")
    xs = sorted({x for x, _ in view if 0 <= x <= last_seq} | {last_seq})
    raw = [(x, prefix[x]) for x in xs]
    chart.y_max = max([y for _, y in raw + view] or [0])
    chart.empty = last_seq == 0
    chart.series = [
        {"name": "raw chain", "css": "raw", "points": _scale(chart, raw), "last": raw[-1][1] if raw else 0},
        {"name": "model view", "css": "view", "points": _scale(chart, view), "last": view[-1][1] if view else 0},
    ]
    return chart


def tokens_chart(*, history: dict[str, list[dict[str, Any]]], last_seq: int, window: int | None,
                 reserve: int) -> Chart:
    chart = Chart(title="View tokens vs window", unit="tokens", x_max=last_seq)
    view = _view_series(history, "token_count", "tokens_before")
    chart.y_max = max([y for _, y in view] + [window or 0])
    chart.empty = not view
    chart.series = [{"name": "view tokens", "css": "view", "points": _scale(chart, view),
                     "last": view[-1][1] if view else 0}]
    if window:
        h = chart.plot_bottom - PAD_TOP
        lines = (("window", "window", window), ("window − reserved output", "budget", window - reserve))
        for name, css, value in lines:
            y = chart.plot_bottom - h * value / max(chart.y_max, 1)
            chart.lines.append({"name": name, "css": css, "y": f"{y:.1f}", "value": value})
    return chart
