"""A chart's cursor and its wall-time axis: both read a chart spec, neither reads a store.

The cursor stands at one step of the chart's curves; its read line says each curve's value
there, exactly as logged (or as the chart computed it: an EMA, a delta). It reads the spec
the chart draws and nothing else, so what a blind withholds from a chart (core/verdict/seen.py,
core/run/evidence.py's `seen_probes`) the cursor cannot read either.

The wall-time axis draws each curve by when its points were logged (`Curve.ts`), as the time
elapsed since the run's first record, in seconds, minutes or hours; a curve with no time of
this run (a banked comparator's, a log that wrote none) is left out and said in one line.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from fontaine_tui.core.charts.chart import ChartSpec, Curve, Mark

NO_VALUE = "—"


def cursor_steps(spec: ChartSpec) -> list[float]:
    """Every step the chart's curves have a point at, in order."""
    return sorted({float(x) for c in spec.curves for x in c.xs})


def nearest(steps: Sequence[float], x: float) -> float | None:
    """The step of `steps` (sorted) nearest `x`, the earlier on a tie; None for no steps."""
    if not steps:
        return None
    i = bisect.bisect_left(steps, x)
    if i == len(steps):
        return steps[-1]
    if i == 0 or steps[i] == x:
        return steps[i]
    return steps[i - 1] if x - steps[i - 1] <= steps[i] - x else steps[i]


def moved(steps: Sequence[float], x: float, by: int) -> float | None:
    """The step `by` places from the step nearest `x` (held at either end)."""
    at = nearest(steps, x)
    if at is None:
        return None
    i = bisect.bisect_left(steps, at) + by
    return steps[max(0, min(len(steps) - 1, i))]


def _at(c: Curve, x: float) -> int | None:
    """Where curve `c` has its point at step `x`, if it has one."""
    xs = c.xs
    i = bisect.bisect_left(xs, x)
    if i < len(xs) and xs[i] == x:
        return i
    return None


def value_text(v: float, signed: bool = False) -> str:
    """A value as the cursor writes it: to ten significant digits, a NaN or infinity as logged.

    `signed`: with its sign always (a delta, as the probes chart writes its bounds)."""
    if not math.isfinite(v):
        return repr(v)
    return f"{v:+.10g}" if signed else f"{v:.10g}"


def curve_name(c: Curve, spec: ChartSpec) -> str:
    """What the read line calls a curve: its own name, else its label, else the chart's title."""
    return c.name or c.label or spec.title


def read_at(spec: ChartSpec, x: float) -> list[tuple[str, str]]:
    """(name, value) of each of the chart's curves at step `x`; NO_VALUE where it has none."""
    signed = spec.ylabel == "delta"
    out = []
    for c in spec.curves:
        i = _at(c, x)
        out.append((curve_name(c, spec), NO_VALUE if i is None else value_text(c.ys[i], signed)))
    return out


def step_text(x: float) -> str:
    return f"{x:g}" if x != int(x) else str(int(x))


# -- the wall-time axis ---------------------------------------------------------------------

UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0))


def unit_for(span_s: float) -> tuple[str, float]:
    """The unit a reader expects for `span_s` seconds: s under 3 min, min under 3 h, else h."""
    if span_s < 180:
        return UNITS[0]
    if span_s < 3 * 3600:
        return UNITS[1]
    return UNITS[2]


def step_times(spec: ChartSpec) -> dict[float, float]:
    """Each step's time (unix seconds), from the first curve with a time logged at it."""
    out: dict[float, float] = {}
    for c in spec.curves:
        if c.ts is None:
            continue
        for x, t in zip(c.xs, c.ts, strict=False):
            if math.isfinite(t):
                out.setdefault(float(x), t)
    return out


@dataclass(frozen=True, slots=True)
class WallAxis:
    """A chart drawn on wall time: the spec, its unit, and what it could not draw."""

    spec: ChartSpec
    unit: str
    untimed: tuple[str, ...]  # the curves (and bands) left out: no time of this run
    times: dict[float, float]  # step -> unix seconds, for the cursor's marker
    origin: float
    per: float  # seconds per unit

    def at(self, step: float) -> float | None:
        """Where step `step` is on this axis, if a curve logged a time at it."""
        t = self.times.get(step)
        return None if t is None else (t - self.origin) / self.per

    def untimed_line(self) -> str:
        """The one line that says which curves are not drawn, or ""."""
        if not self.untimed:
            return ""
        return f"no times in the records of {', '.join(self.untimed)}: not drawn on wall time"


def wall_axis(spec: ChartSpec, origin: float) -> WallAxis:
    """`spec` on wall time: elapsed since `origin` (the run's first record), in s, min or h."""
    times = step_times(spec)
    span = max(times.values()) - origin if times and math.isfinite(origin) else 0.0
    unit, per = unit_for(span)
    curves: list[Curve] = []
    untimed: list[str] = []
    for c in spec.curves:
        moved_c = _timed(c, origin, per)
        if moved_c is None:
            untimed.append(curve_name(c, spec))
        else:
            curves.append(moved_c)
    untimed += [b.label or "an envelope" for b in spec.bands]
    marks = tuple(
        Mark((times[m.x] - origin) / per, m.y, m.label, m.color, m.align)
        for m in spec.marks
        if m.x in times
    )
    drawn = replace(
        spec,
        curves=tuple(curves),
        bands=(),
        marks=marks,
        xlim=None,
        xlabel=f"elapsed ({unit})",
        xunit=unit,
    )
    return WallAxis(drawn, unit, tuple(untimed), times, origin, per)


def _timed(c: Curve, origin: float, per: float) -> Curve | None:
    """Curve `c` by its points' times (those without one left out); None when it has none."""
    if c.ts is None or not math.isfinite(origin):
        return None
    pts = [((t - origin) / per, y) for t, y in zip(c.ts, c.ys, strict=False) if math.isfinite(t)]
    if not pts:
        return None
    return replace(c, xs=tuple(p[0] for p in pts), ys=tuple(p[1] for p in pts), stamp=None, ts=None)


# -- a chart's cursor and axis, as a screen keeps them -----------------------------------------


@dataclass(slots=True)
class ChartLook:
    """What a screen's chart keys set: the cursor (on, at which step) and the x axis.

    `present` turns the spec a chart would draw into the one drawn (on wall time, with the
    cursor's marker) and the lines said under it."""

    cursor: bool = False
    step: float | None = None  # the cursor's step; the last one where not set yet
    wall: bool = False

    def toggle_cursor(self) -> None:
        self.cursor, self.step = not self.cursor, None

    def move(self, spec: ChartSpec | None, by: int) -> None:
        """Move the cursor `by` steps over `spec`'s steps (held at either end)."""
        if spec is None or not self.cursor:
            return
        steps = cursor_steps(spec)
        if steps:
            self.step = moved(steps, steps[-1] if self.step is None else self.step, by)

    def present(
        self, spec: ChartSpec, origin: float, cursor: bool = True
    ) -> tuple[ChartSpec, list[str]]:
        """The spec drawn, and the lines under it: wall time's untimed curves, the read line.

        `cursor`: this chart shows the cursor (a grid's small charts do not)."""
        lines: list[str] = []
        drawn = spec
        axis = None
        if self.wall:
            axis = wall_axis(spec, origin)
            drawn = axis.spec
            if axis.untimed:
                lines.append(axis.untimed_line())
        if not (cursor and self.cursor):
            return drawn, lines
        steps = cursor_steps(spec)
        if self.step is None and steps:
            self.step = steps[-1]  # it starts at the latest step
        self.step = nearest(steps, self.step or 0.0)
        if self.step is None:
            lines.append("cursor: no step to stand at on this chart")
            return drawn, lines
        x = self.step if axis is None else axis.at(self.step)
        lines.append(self.read_line(spec, self.step, axis))
        return (replace(drawn, vline=x) if x is not None else drawn), lines

    @staticmethod
    def read_line(spec: ChartSpec, step: float, axis: WallAxis | None) -> str:
        """The cursor's line: the step (and its elapsed time), and each curve's value there."""
        where = f"step {step_text(step)}"
        if axis is not None:
            x = axis.at(step)
            where += " (no time logged)" if x is None else f" ({x:.4g} {axis.unit})"
        values = "  ".join(f"{name} {value}" for name, value in read_at(spec, step))
        return f"{where}:  {values}"
