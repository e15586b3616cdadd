"""The one widget that wraps plotext: draws a `ChartSpec`, downsampled to its own width."""

from __future__ import annotations

import math

from textual_plotext import PlotextPlot

from fontaine_tui.core.series import ChartSpec, downsample


class Chart(PlotextPlot):
    """Set `spec`, and the chart replots (once per frame at most, by the caller's batching)."""

    DEFAULT_CSS = """
    Chart { height: 1fr; min-height: 8; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._spec: ChartSpec | None = None
        self._width = 0
        self.replots = 0

    @property
    def spec(self) -> ChartSpec | None:
        return self._spec

    def show(self, spec: ChartSpec) -> None:
        self._spec = spec
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
        self.replots += 1
        if spec is None:
            self.refresh()
            return
        plt.title(spec.title)
        plt.xlabel(spec.xlabel)
        plt.ylabel(spec.ylabel)
        seen: list[float] = []
        for c in spec.curves:
            xs, ys = downsample(c.xs, c.ys, width)
            if not xs:
                continue
            seen += ys
            if c.points:
                plt.scatter(xs, ys, label=c.label, color=c.color, marker="●")
            else:
                plt.plot(xs, ys, label=c.label, color=c.color, marker="hd")
        for h in spec.hlines:
            plt.hline(h.y, color=h.color)
        left = spec.xlim[0] if spec.xlim else 0
        for h in spec.hlines:
            plt.text(h.label, left, h.y, color=h.color, alignment="left")
        nudge = (spec.xlim[1] - spec.xlim[0]) * 0.015 if spec.xlim else 0.0
        for m in spec.marks:  # the marker is the label's end (or start) at the point itself
            if m.align == "left":  # beside a point the run also has: keep both visible
                plt.text(f"◆ {m.label}", m.x + nudge, m.y, color=m.color, alignment="left")
            else:
                plt.text(f"{m.label} ◆", m.x, m.y, color=m.color, alignment="right")
        if spec.xlim:
            plt.xlim(*spec.xlim)
        ys = seen + [v.y for v in (*spec.hlines, *spec.marks) if math.isfinite(v.y)]
        if ys:
            lo, hi = min(ys), max(ys)
            pad = (hi - lo) * 0.06 or 0.5
            plt.ylim(lo - pad, hi + pad)
        self.refresh()
