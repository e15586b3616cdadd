"""The one widget that wraps plotext: draws a `ChartSpec`, downsampled to its own width."""

from __future__ import annotations

import functools
import itertools
import math
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from rich.color import Color
from rich.style import Style
from rich.text import Span, Text
from textual.app import RenderResult
from textual.binding import Binding
from textual.timer import Timer
from textual_plotext import PlotextPlot

from fontaine_tui.core.charts.chart import (
    Band,
    ChartSpec,
    Curve,
    downsample,
    linear_ticks,
    log_ticks,
    thin,
)
from fontaine_tui.core.text import literal

# faint (dim) variants of the chart colours, for a curve drawn beneath the others
FAINT = {
    "cyan": (0, 105, 105),
    "magenta": (110, 0, 110),
    "green": (0, 105, 0),
    "orange": (130, 75, 0),
    "blue": (30, 30, 140),
    "yellow": (110, 110, 0),
    "red": (120, 0, 0),
    "white": (100, 100, 100),
    "gray": (90, 90, 90),
}


# a line's marker, by its order among the chart's lines: told apart without colour (NO_COLOR,
# a monochrome terminal), and each shown beside its label in the legend
LINE_MARKERS = ("•", "+", "x", "o", "*", "#")

_SGR = re.compile(r"\x1b\[([0-9;]*)m")
_STYLES: dict[tuple[str | None, str | None, bool], Style] = {}


def _style(fg: str | None, bg: str | None, bold: bool) -> Style:
    key = (fg, bg, bold)
    style = _STYLES.get(key)
    if style is None:
        style = _STYLES[key] = Style(
            color=Color.parse(fg) if fg else None,
            bgcolor=Color.parse(bg) if bg else None,
            bold=bold or None,
        )
    return style


def _color_end(codes: list[str], j: int) -> int:
    """Past the colour that codes[j] (38 or 48) starts: 5;N or 2;R;G;B; 0 when incomplete."""
    kind = codes[j + 1] if j + 1 < len(codes) else ""
    end = j + (3 if kind == "5" else 5 if kind == "2" else len(codes) + 1)
    return end if end <= len(codes) else 0


class _Pen(NamedTuple):
    """What the text is drawn with: foreground, background, bold."""

    fg: str | None = None
    bg: str | None = None
    bold: bool = False


_PLAIN = _Pen()
# the one-code SGRs plotext writes, by what each does to the pen; any other is ignored
_CODES: dict[str, Callable[[_Pen], _Pen]] = {
    "": lambda pen: _PLAIN,
    "0": lambda pen: _PLAIN,
    "1": lambda pen: pen._replace(bold=True),
    "22": lambda pen: pen._replace(bold=False),
    "39": lambda pen: pen._replace(fg=None),
    "49": lambda pen: pen._replace(bg=None),
}


@functools.lru_cache(maxsize=1024)  # a figure repeats a few sequences from a few pens
def _sgr(pen: _Pen, part: str) -> _Pen:
    """The pen after one SGR sequence: 38 and 48 set a colour, the rest are in _CODES."""
    codes = part.split(";") if part else ["0"]
    j = 0
    while j < len(codes):
        c = codes[j]
        if c in ("38", "48") and (color_end := _color_end(codes, j)):
            args = codes[j + 2 : color_end]  # 5;N (256 colours) or 2;R;G;B (truecolour)
            color = f"color({args[0]})" if len(args) == 1 else f"rgb({','.join(args)})"
            pen = pen._replace(fg=color) if c == "38" else pen._replace(bg=color)
            j = color_end
        else:
            pen = _CODES.get(c, _same)(pen)
            j += 1
    return pen


def _same(pen: _Pen) -> _Pen:
    return pen


def ansi_text(ansi: str) -> Text:
    """plotext's output as a rich Text: the same characters in the same colours.

    Only the few SGR codes plotext writes (reset, bold, 256-colour and truecolour foreground
    and background) are read, by one split instead of rich's general ANSI decoder
    (tests/console/test_chart_text.py).
    """
    parts = _SGR.split(ansi)
    plain: list[str] = []
    spans: list[Span] = []
    pos = 0
    pen = _PLAIN
    for i, part in enumerate(parts):
        if i % 2:  # an SGR sequence's codes
            pen = _sgr(pen, part)
        elif part:  # text
            if any(pen):
                spans.append(Span(pos, pos + len(part), _style(*pen)))
            plain.append(part)
            pos += len(part)
    text = Text("".join(plain))
    text.spans = spans
    return text


# the keys of a chart's cursor and x axis, the same in every mode that draws a chart (listed
# once in the help: screens/help.py); hidden from the footers, whose keys stay as they were
CURSOR_KEY = Binding(
    "c",
    "chart_cursor",
    "Cursor",
    id="chart.cursor",
    show=False,
    tooltip="Turn the chart cursor on or off: left/right step it over the steps the series "
    "have, the line under the chart reads each one's value there",
)
WALL_KEY = Binding(
    "w",
    "wall_time",
    "Wall/step",
    id="chart.wall",
    show=False,
    tooltip="Switch the charts' x axis between steps and the wall time since the run's "
    "first record",
)


class Chart(PlotextPlot):
    """A plotext chart that replots only when its spec changed, and not too often.

    `show(spec, key)` replots: not at all when `key` has not changed, and at most once per
    `min_interval` seconds otherwise (the last spec shown wins), since a plotext figure costs
    milliseconds per build and a loss curve needs no more than one redraw a second.
    """

    DEFAULT_CSS = """
    Chart { height: 1fr; min-height: 8; }
    """

    def __init__(
        self, *, id: str | None = None, classes: str | None = None, min_interval: float = 1.0
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._spec: ChartSpec | None = None
        self._key: object = None
        self._width = 0
        self._last = -math.inf
        self._timer: Timer | None = None
        self.min_interval = min_interval
        self._rendered: tuple[object, RenderResult] | None = None
        self.replots = 0
        self.builds = 0  # plotext figures built into text

    @property
    def spec(self) -> ChartSpec | None:
        return self._spec

    def render(self) -> RenderResult:
        """The built figure, cached, so a repaint of the screen does not rebuild the plot.

        As PlotextPlot.render, with plotext's ANSI read by `ansi_text` (rich's general
        decoder took a quarter of a redraw).
        """
        key = (self.replots, self.size, self.app.theme, self.theme)
        if self._rendered is None or self._rendered[0] != key:
            plot = self.plt
            plot.plotsize(self.size.width, self.size.height)
            plot._set_size(self.size.width, self.size.height)  # as PlotextPlot.render does
            plot.theme(self._get_plotext_theme_name(self.app.theme))
            self._rendered = (key, ansi_text(plot.build()))
            self.builds += 1
        return self._rendered[1]

    @property
    def pending(self) -> bool:
        """A spec is waiting for its turn to be drawn."""
        return self._timer is not None

    def show(self, spec: ChartSpec, key: object = None, force: bool = False) -> None:
        """Draw `spec`; `key` (when given) says whether it differs from the one shown."""
        if key is not None and key == self._key and self._spec is not None and not force:
            return
        self._spec, self._key = spec, key
        wait = self._last + self.min_interval - time.monotonic()
        if wait <= 0 or force:
            self.replot()
        elif self._timer is None:
            self._timer = self.set_timer(wait, self._deferred)

    def _deferred(self) -> None:
        self._timer = None
        self.replot()

    def on_resize(self) -> None:
        if self.size.width != self._width:
            self.replot()

    def replot(self) -> None:
        """Rebuild the plotext figure from the spec at the current width."""
        spec = self._spec
        self.plt.clear_data()
        self._width = width = max(20, self.size.width - 10)  # less the y-axis labels
        self._last = time.monotonic()
        self.replots += 1
        if spec is None:
            self.refresh()
            return
        _plot(self.plt, spec, width, rows=max(4, self.size.height - 5))  # less title and x axis
        self.refresh()
        if self.size.area and not self.screen.is_current:
            # replotted off screen (a spec's turn came after its mode was left): its text is
            # built now, so the mode's next key paints it without building nine figures first
            self.render()


class _Series(NamedTuple):
    xs: list[float]
    ys: list[float]
    line: bool  # else scattered points
    label: str | None
    color: str | tuple[int, int, int]
    marker: str
    right: bool = False  # on the right y axis

    @property
    def axis(self) -> str:
        return "right" if self.right else "left"


def _plot(plt: Any, spec: ChartSpec, width: int, rows: int) -> None:
    """Draw `spec` into plotext's figure, `width` columns by `rows` rows for the plot itself."""
    plt.title(literal(spec.title))
    plt.xlabel(literal(spec.xlabel))
    plt.ylabel(literal(spec.ylabel))
    # drawn in this order: the faint curves, the others, then the bands' edges
    series = _curves(spec.curves, width, spec.ylog) + _bands(spec.bands, width)
    ylims = _ylims(spec, series, rows)
    xlim = spec.xlim or _span(series)
    for s in series:
        _draw(plt, s, xlim, ylims.get(s.axis), width, rows)
    _draw_hlines(plt, spec)
    _draw_marks(plt, spec)
    if spec.vline is not None:  # the chart cursor, over everything else
        plt.vline(spec.vline, "white")
    _draw_x_axis(plt, spec, xlim, width)
    _draw_y_axes(plt, ylims, spec.ylog, rows)


def _curves(curves: Sequence[Curve], width: int, log: bool) -> list[_Series]:
    """The curves as series downsampled to `width`, the faint ones first (drawn beneath)."""
    series: list[_Series] = []
    markers = itertools.cycle(LINE_MARKERS)  # each line its own marker (no colour needed)
    for c in sorted(curves, key=lambda c: not c.faint):
        # a faint curve is a background: a min-max pair every other column is enough
        xs, ys = downsample(c.xs, c.ys, width // 2 if c.faint else width, c.stamp)
        xs, ys = _on_axis(xs, ys, log)
        if xs:
            series += _curve_series(c, xs, ys, markers)
    return series


def _on_axis(xs: list[float], ys: list[float], log: bool) -> tuple[list[float], list[float]]:
    """The points as drawn: on a log axis, log10 of the positive ones only."""
    if not log:
        return xs, ys
    kept = [(x, math.log10(y)) for x, y in zip(xs, ys, strict=True) if y > 0]
    return [k[0] for k in kept], [k[1] for k in kept]


def _curve_series(
    c: Curve, xs: list[float], ys: list[float], markers: Iterator[str]
) -> list[_Series]:
    """How one curve is drawn: faint, as points, or as a line taking the next marker."""
    label = literal(c.label)
    if c.faint:
        return [_Series(xs, ys, True, label, FAINT.get(c.color, c.color), "braille", c.right)]
    if c.points:
        return [_Series(xs, ys, False, label, c.color, "●", c.right)]
    marker = next(markers)  # taken either way: the lines after keep their markers
    line = [_Series(xs, ys, True, label, c.color, c.marker or marker, c.right)]
    if len(xs) <= 30:  # few measured points: show where they are, not only the line
        line.append(_Series(xs, ys, False, None, c.color, "●", c.right))
    return line


def _bands(bands: Sequence[Band], width: int) -> list[_Series]:
    """Each envelope's two edges, faint, under the curves."""
    series: list[_Series] = []
    for b in bands:
        bx, low = downsample(b.xs, b.lo, width)
        hx, high = downsample(b.xs, b.hi, width)
        if bx:
            series.append(_Series(bx, low, True, literal(b.label), b.color, "braille"))
            series.append(_Series(hx, high, True, None, b.color, "braille"))
    return series


def _ylims(spec: ChartSpec, series: list[_Series], rows: int) -> dict[str, tuple[float, float]]:
    """Each y axis's limits over what is drawn on it; the lines and marks go on the left."""
    # the legend's rows (top left) above everything drawn, so it hides no curve or bound
    legend = sum(1 for s in series if s.label) + 1
    levels = [h.y for h in spec.hlines] + [m.y for m in spec.marks]
    values: dict[str, list[float]] = {"left": [y for y in levels if math.isfinite(y)], "right": []}
    for s in series:
        values[s.axis] += (min(s.ys), max(s.ys))
    return {name: _ylim(ys, spec.ylog, legend, rows) for name, ys in values.items() if ys}


def _draw(
    plt: Any,
    s: _Series,
    xlim: tuple[float, float] | None,
    ylim: tuple[float, float] | None,
    width: int,
    rows: int,
) -> None:
    """Draw one series; a line is thinned first to a point per cell it crosses."""
    xs, ys = s.xs, s.ys
    if s.line and ylim is not None and xlim is not None:
        # 2 x 4 dots a braille cell; a faint curve is thinned to whole cells
        fine = s.marker == "braille" and s.color not in FAINT.values()
        xs, ys = thin(xs, ys, xlim, ylim, width * (2 if fine else 1), rows * (4 if fine else 1))
    draw = plt.plot if s.line else plt.scatter
    draw(xs, ys, label=s.label, color=s.color, marker=s.marker, yside=s.axis)


def _draw_hlines(plt: Any, spec: ChartSpec) -> None:
    """The horizontal lines, then their labels at the chart's left edge."""
    for h in spec.hlines:
        plt.hline(h.y, color=h.color)
    x0 = spec.xlim[0] if spec.xlim else 0
    for h in spec.hlines:
        plt.text(literal(h.label), x0, h.y, color=h.color, alignment="left")


def _draw_marks(plt: Any, spec: ChartSpec) -> None:
    """The marked points: the marker is the label's end (or start) at the point itself."""
    nudge = (spec.xlim[1] - spec.xlim[0]) * 0.015 if spec.xlim else 0.0
    for m in spec.marks:
        if m.align == "left":  # beside a point the run also has: keep both visible
            plt.text(f"◆ {literal(m.label)}", m.x + nudge, m.y, color=m.color, alignment="left")
        else:
            plt.text(f"{literal(m.label)} ◆", m.x, m.y, color=m.color, alignment="right")


def _draw_x_axis(plt: Any, spec: ChartSpec, xlim: tuple[float, float] | None, width: int) -> None:
    """The x axis's limits and ticks, whole ones (steps, or whole units of wall time).

    On wall time each tick says its unit ("30 min")."""
    if spec.xlim:
        plt.xlim(*spec.xlim)
    if xlim is not None:
        ticks, labels = linear_ticks(*xlim, most=max(2, width // 12), whole=True)
        if spec.xunit:
            labels = [f"{label} {spec.xunit}" for label in labels]
        plt.xticks(ticks, labels)


def _draw_y_axes(plt: Any, ylims: dict[str, tuple[float, float]], log: bool, rows: int) -> None:
    """Each y axis's limits and ticks; a log axis's ticks say the values themselves."""
    for name, ylim in ylims.items():
        yside: Any = name  # plotext types its yside as a number; it takes "left", "right"
        plt.ylim(*ylim, yside=yside)
        # set on every draw, either way: plotext keeps the last ticks set (a log axis's
        # labels stayed on the linear one after it)
        if log:  # drawn as log10(y)
            plt.yticks(*log_ticks(*ylim), yside=yside)
        else:
            plt.yticks(*linear_ticks(*ylim, most=max(2, rows // 3)), yside=yside)


def _ylim(ys: list[float], log: bool, legend: int, rows: int) -> tuple[float, float]:
    """An axis's limits over `ys`, padded, with room at the top for the legend's rows."""
    lo, hi = min(ys), max(ys)
    if hi - lo <= 1e-9 * max(abs(lo), abs(hi)):  # flat but for rounding (an EMA's)
        lo = hi = (lo + hi) / 2
    pad = (hi - lo) * 0.06 or (0.1 if log else abs(hi) * 0.05 or 0.5)
    free = max(1, rows - legend)
    top = (hi - lo + 2 * pad) * legend / free
    # what is never below zero (a loss, a rate) is not drawn as if it could be
    floor = 0.0 if not log and lo >= 0 else -math.inf
    return (max(floor, lo - pad), hi + pad + top)


def _span(series: list[_Series]) -> tuple[float, float] | None:
    xs = [x for s in series for x in (s.xs[0], s.xs[-1])]
    return (min(xs), max(xs)) if xs else None
