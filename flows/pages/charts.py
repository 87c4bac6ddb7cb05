"""Inline SVG charts of the chain page, computed server-side (numbers only, so nothing to escape).

Two charts over the chain's history (x = raw seq, i.e. how far the agent had got):
- bytes: raw chain size vs the view's size. Every summarization adds a point at the size before and one at the
  size after for the same seq, which draws the vertical drops of the compaction saw-tooth;
- tokens: the view's tokens vs the model window and the window minus the reserved output.

A third chart draws each compaction's retention score (issue 23): the share of the replaced messages' findings
and identifiers the new view still carried, in percent, at the seq it ran; a point whose compaction lost a
credential or hash says so in its tooltip.

Every point carries a tooltip (an SVG <title>), the seq axis has a tick every quarter, and the model view is
drawn as equal to the raw chain up to the first summarization, so an imported chain summarized once shows the
raw growth and then one drop rather than a lone vertical line.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CHART_WIDTH", "CHART_HEIGHT", "MAX_POINTS", "RAW_SAMPLES", "Chart", "bytes_chart", "tokens_chart",
           "retention_chart"]

CHART_WIDTH = 640
CHART_HEIGHT = 150
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 56, 8, 10, 22
MAX_POINTS = 400  # per series; more only costs page weight
RAW_SAMPLES = 60  # raw-growth points drawn between summarizations
MAX_TOOLTIPS = 120  # hover targets per series
X_TICKS = 4


@dataclass
class Chart:
    title: str
    unit: str
    series: list[dict[str, Any]] = field(default_factory=list)  # {"name", "css", "points", "last", "marks"}
    lines: list[dict[str, Any]] = field(default_factory=list)   # horizontal reference lines {"name","css","y","value"}
    y_max: int = 0
    x_max: int = 0
    empty: bool = True
    note: str = ""
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

    @property
    def x_ticks(self) -> list[dict[str, Any]]:
        """Seq labels along the x axis: 1, each quarter, and the last seq (no repeats on short chains)."""
        if self.x_max <= 0:
            return []
        seqs = sorted({1, self.x_max} | {round(self.x_max * i / X_TICKS) for i in range(1, X_TICKS)} - {0})
        w = self.plot_right - PAD_LEFT
        out = []
        for i, seq in enumerate(seqs):
            anchor = "start" if i == 0 else "end" if i == len(seqs) - 1 else "middle"
            out.append({"x": f"{PAD_LEFT + w * seq / self.x_max:.1f}", "label": f"{seq:,}", "anchor": anchor})
        return out


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


def _xy(chart: Chart, x: int, y: int) -> tuple[float, float]:
    w = chart.plot_right - PAD_LEFT
    h = chart.plot_bottom - PAD_TOP
    return PAD_LEFT + w * x / max(chart.x_max, 1), chart.plot_bottom - h * y / max(chart.y_max, 1)


def _scale(chart: Chart, points: list[tuple[int, int]]) -> str:
    return " ".join("{:.1f},{:.1f}".format(*_xy(chart, x, y)) for x, y in _thin(points))


def _marks(chart: Chart, points: list[tuple[int, int]], name: str) -> list[dict[str, str]]:
    """Hover targets with a tooltip ("model view at seq 120: 14.2 KB"); values are numbers, nothing to escape."""
    stride = max(1, -(-len(points) // MAX_TOOLTIPS))
    out = []
    for i, (x, y) in enumerate(points):
        if i % stride and i != len(points) - 1:
            continue
        cx, cy = _xy(chart, x, y)
        value = _kb(y) if chart.unit == "bytes" else f"{y}% kept" if chart.unit == "percent" else f"{y:,} tokens"
        out.append({"cx": f"{cx:.1f}", "cy": f"{cy:.1f}", "title": f"{name} at seq {x:,}: {value}"})
    return out


def _kb(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1048576:.1f} MB"


def _raw_samples(prefix: list[int], upto: int) -> list[int]:
    """Seqs 1..upto sampled evenly (RAW_SAMPLES of them), so growth draws as a curve at any chain length."""
    if upto <= 0:
        return []
    step = max(1, upto // RAW_SAMPLES)
    return sorted(set(range(step, upto + 1, step)) | {upto})


def _view_series(history: dict[str, list[dict[str, Any]]], size_key: str, before_key: str) -> list[tuple[int, int]]:
    """View size per version, with each event's "before" size inserted just before the drop it led to.

    Ordered by seq, then version, then before/after: two versions at one seq (a compaction right after a
    summarization) keep their order, so the line ends at the newest version, the size the stat card shows."""
    keyed: list[tuple[int, int, int, int]] = []
    for e in history["events"]:
        if e[before_key]:
            keyed.append((e["raw_seq_to"], e.get("view__version") or 0, 0, e[before_key]))
    for v in history["views"]:
        keyed.append((v["raw_seq_to"], v.get("version", 0), 1, v[size_key]))
    keyed.sort()
    return [(x, y) for x, _, _, y in keyed]


def _grown(view: list[tuple[int, int]], prefix: list[int]) -> list[tuple[int, int]]:
    """Between two versions the model receives the older view plus the raw messages appended since."""
    if not view:
        return []
    end = len(prefix)
    samples = _raw_samples(prefix, end - 1)
    out: list[tuple[int, int]] = []
    for (x, y), nx in zip(view, [x for x, _ in view[1:]] + [end], strict=True):
        out.append((x, y))
        if nx < end:  # after the newest version the chart stops: that is the view the model gets next
            out += [(s, y + prefix[s] - prefix[x]) for s in samples if x < s < nx]
    return out


def _newest(history: dict[str, list[dict[str, Any]]], size_key: str, line: list[tuple[int, int]]) -> int:
    """The legend's figure: the newest view version's, as on the stat card (the raw chain's before any view)."""
    if history["views"]:
        return int(history["views"][-1][size_key])
    return line[-1][1] if line else 0


def bytes_chart(*, history: dict[str, list[dict[str, Any]]], prefix: list[int]) -> Chart:
    last_seq = len(prefix) - 1
    chart = Chart(title="Raw chain vs model view", unit="bytes", x_max=last_seq)
    view = [(x, y) for x, y in _view_series(history, "byte_size", "bytes_before") if 0 <= x <= last_seq]
    first_summary = view[0][0] if view else last_seq
    # Before the first summarization the model received the raw chain itself.
    view = _grown([(x, prefix[x]) for x in _raw_samples(prefix, first_summary - 1)] + view, prefix)
    xs = sorted(set(_raw_samples(prefix, last_seq)) | {x for x, _ in view})
    raw = [(x, prefix[x]) for x in xs]
    chart.y_max = max([y for _, y in raw + view] or [0])
    chart.empty = last_seq == 0
    chart.series = [
        {"name": "raw chain", "css": "raw", "points": _scale(chart, raw), "last": raw[-1][1] if raw else 0,
         "marks": _marks(chart, raw, "raw chain")},
        {"name": "model view", "css": "view", "points": _scale(chart, view),
         "last": _newest(history, "byte_size", view), "marks": _marks(chart, view, "model view")},
    ]
    return chart


def tokens_chart(*, history: dict[str, list[dict[str, Any]]], last_seq: int, window: int | None,
                 reserve: int) -> Chart:
    chart = Chart(title="View tokens vs window", unit="tokens", x_max=last_seq)
    view = _view_series(history, "token_count", "tokens_before")
    chart.y_max = max([y for _, y in view] + [window or 0])
    chart.empty = not view
    chart.series = [{"name": "view tokens", "css": "view", "points": _scale(chart, view),
                     "last": _newest(history, "token_count", view), "marks": _marks(chart, view, "view tokens")}]
    chart.note = ("The view compacts before a call would not fit: when its tokens plus the reserved output pass "
                  "the window, i.e. when the line crosses the dashed “window − reserved output” line."
                  if window else "The model's window is unknown, so no limit is drawn.")
    if window:
        h = chart.plot_bottom - PAD_TOP
        limits = (("window", "window", window), ("window − reserved output", "budget", window - reserve))
        for name, css, value in limits:
            y = chart.plot_bottom - h * value / max(chart.y_max, 1)
            chart.lines.append({"name": name, "css": css, "y": f"{y:.1f}", "value": value})
    return chart


def retention_chart(*, history: dict[str, list[dict[str, Any]]], last_seq: int) -> Chart:
    """Retention score per compaction over the chain (events without a score replaced nothing: not drawn)."""
    chart = Chart(title="Findings and identifiers kept per compaction", unit="percent", x_max=last_seq, y_max=100)
    scored = [e for e in history["events"] if isinstance(e.get("retention"), dict)]
    points = [(e["raw_seq_to"], round(100 * float(e["retention"].get("score", 1.0)))) for e in scored]
    chart.empty = not points
    marks = _marks(chart, points, "compaction")
    for mark, event in zip(marks if len(marks) == len(points) else [], scored, strict=False):
        mark["title"] = f"event #{event['id']} ({event['trigger']}): {mark['title']}"
        if event["retention"].get("lost_secret"):
            mark["title"] += " — lost a credential or hash"
    chart.series = [{"name": "kept", "css": "view", "points": _scale(chart, points),
                     "last": points[-1][1] if points else 0, "marks": marks}]
    lost = sum(1 for e in scored if e["retention"].get("lost_secret"))
    chart.note = (f"{lost} compaction{'s' if lost != 1 else ''} lost a credential or hash: see the events table."
                  if lost else "No compaction lost a credential or hash.")
    return chart
