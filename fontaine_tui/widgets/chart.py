"""The one widget that wraps plotext: draws a `ChartSpec`, downsampled to its own width."""

from __future__ import annotations

import math
import time

from textual.app import RenderResult
from textual.timer import Timer
from textual_plotext import PlotextPlot

from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.chart import ChartSpec, downsample


class Chart(PlotextPlot):
    """`show(spec, key)` replots: not at all when `key` has not changed, and at most once per
    `min_interval` seconds otherwise (the last spec shown wins), since a plotext figure costs
    milliseconds per build and a loss curve needs no more than one redraw a second."""

    DEFAULT_CSS = """
    Chart { height: 1fr; min-height: 8; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None,
                 min_interval: float = 1.0) -> None:
        super().__init__(id=id, classes=classes)
        self._spec: ChartSpec | None = None
        self._key: object = None
        self._width = 0
        self._last = -math.inf
        self._timer: Timer | None = None
        self.min_interval = min_interval
        self._rendered: tuple[object, RenderResult] | None = None
        self.replots = 0

    @property
    def spec(self) -> ChartSpec | None:
        return self._spec

    def render(self) -> RenderResult:
        """The built figure, cached: a repaint of the screen must not rebuild the plot."""
        key = (self.replots, self.size, self.app.theme, self.theme)
        if self._rendered is None or self._rendered[0] != key:
            self._rendered = (key, super().render())
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
        plt = self.plt
        plt.clear_data()
        self._width = width = max(20, self.size.width - 10)  # less the y-axis labels
        self._last = time.monotonic()
        self.replots += 1
        if spec is None:
            self.refresh()
            return
        plt.title(literal(spec.title))
        plt.xlabel(literal(spec.xlabel))
        plt.ylabel(literal(spec.ylabel))
        seen: list[float] = []
        for c in spec.curves:
            xs, ys = downsample(c.xs, c.ys, width)
            if not xs:
                continue
            seen += ys
            if c.points:
                plt.scatter(xs, ys, label=literal(c.label), color=c.color, marker="●")
            else:
                plt.plot(xs, ys, label=literal(c.label), color=c.color, marker="dot")
                if len(xs) <= 30:  # few measured points: show where they are, not only the line
                    plt.scatter(xs, ys, color=c.color, marker="●")
        for b in spec.bands:  # the envelope's two edges, faint, under the curves
            bx, low = downsample(b.xs, b.lo, width)
            hx, high = downsample(b.xs, b.hi, width)
            if bx:
                plt.plot(bx, low, color=b.color, marker="braille", label=literal(b.label))
                plt.plot(hx, high, color=b.color, marker="braille")
                seen += low + high
        for h in spec.hlines:
            plt.hline(h.y, color=h.color)
        left = spec.xlim[0] if spec.xlim else 0
        for h in spec.hlines:
            plt.text(literal(h.label), left, h.y, color=h.color, alignment="left")
        nudge = (spec.xlim[1] - spec.xlim[0]) * 0.015 if spec.xlim else 0.0
        for m in spec.marks:  # the marker is the label's end (or start) at the point itself
            if m.align == "left":  # beside a point the run also has: keep both visible
                plt.text(f"◆ {literal(m.label)}", m.x + nudge, m.y, color=m.color, alignment="left")
            else:
                plt.text(f"{literal(m.label)} ◆", m.x, m.y, color=m.color, alignment="right")
        if spec.xlim:
            plt.xlim(*spec.xlim)
        ys = seen + [y for y in [h.y for h in spec.hlines] + [m.y for m in spec.marks]
                     if math.isfinite(y)]
        if ys:
            lo, hi = min(ys), max(ys)
            pad = (hi - lo) * 0.06 or 0.5
            plt.ylim(lo - pad, hi + pad)
        self.refresh()
