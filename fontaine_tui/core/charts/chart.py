"""Chart specs as plain data, and the helpers every renderer shares.

A spec says what to draw (curves, bounds, comparator marks), not how. The shared helpers are
downsampling, thinning and log-axis ticks.

One spec feeds both the terminal chart (widgets/chart.py) and the PNG export. The specs
themselves are built in loss.py (the train losses), probes.py (the probes and
per-dataset views) and envelope.py (the banked comparators' curves and their envelope).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MARK_COLORS = ("red", "magenta", "orange", "yellow", "blue", "white")


@dataclass(frozen=True, slots=True)
class Curve:
    label: str
    xs: Sequence[float]  # may be a live column of the store: renderers downsample, never copy
    ys: Sequence[float]
    color: str
    points: bool = False  # markers only: a probe every 250 steps is not a line
    faint: bool = False  # drawn dim, beneath the others (the raw loss under its EMA)
    right: bool = False  # on a y axis of its own, at the right (a loss on another scale)
    # the store's `replaced_steps` when xs and ys are its live columns, which grow by appends
    # and are cut only when that moves: a renderer keeps their extremes per block (`downsample`)
    stamp: int | None = None
    # when each point was logged (unix seconds, NaN where its record has no time), parallel to
    # xs; None where the points carry no time of this run (a banked comparator's): the
    # wall-time axis (core/charts/cursor.py) draws a curve by them
    ts: Sequence[float] | None = None
    name: str = ""  # what a cursor's read line calls it, where not its label (a small chart's)
    marker: str = ""  # its line's marker; "" takes the next of the chart's, by line order


@dataclass(frozen=True, slots=True)
class HLine:
    y: float
    label: str
    color: str


@dataclass(frozen=True, slots=True)
class Mark:
    """One banked number drawn where it was measured (an endpoint, a step-250 level)."""

    x: float
    y: float
    label: str
    color: str
    align: str = "right"  # "right": the label ends at the point; "left": it starts there


@dataclass(frozen=True, slots=True)
class Band:
    """A min-max envelope: where the grouped comparators' curves lie, step by step."""

    label: str
    xs: Sequence[float]
    lo: Sequence[float]
    hi: Sequence[float]
    color: str


@dataclass(frozen=True, slots=True)
class ChartSpec:
    title: str
    xlabel: str
    ylabel: str
    curves: tuple[Curve, ...] = ()
    hlines: tuple[HLine, ...] = ()
    marks: tuple[Mark, ...] = ()
    xlim: tuple[float, float] | None = None
    note: str = ""
    bands: tuple[Band, ...] = ()
    ylog: bool = False  # a log y axis (only the positive values are drawn)
    vline: float | None = None  # the chart cursor's marker, at this x
    xunit: str = ""  # the x ticks' unit ("min" on a wall-time axis); "" for steps

    @property
    def points(self) -> int:
        return sum(len(c.xs) for c in self.curves) + 2 * sum(len(b.xs) for b in self.bands)


BLOCK = 256  # points per block whose extremes a growing column keeps (`downsample`)


def _ends(seg: Sequence[float]) -> tuple[float, int, float, int] | None:
    """The finite min and max of `seg`, each with where it first is; None when none is finite."""
    lo_v, hi_v = min(seg), max(seg)  # C speed; NaN makes them unreliable, checked below
    if not (math.isfinite(lo_v) and math.isfinite(hi_v)):
        finite = [v for v in seg if math.isfinite(v)]
        if not finite:
            return None
        lo_v, hi_v = min(finite), max(finite)
    return lo_v, seg.index(lo_v), hi_v, seg.index(hi_v)


class _Blocks:
    """A growing column's finite extremes per whole block of BLOCK points, where each first is.

    Kept while the column grows (the blocks added since are read on the next call); a block
    with no finite value holds inf and -inf."""

    __slots__ = ("ys", "stamp", "los", "lo_at", "his", "hi_at")

    def __init__(self, ys: Sequence[float], stamp: int) -> None:
        self.ys, self.stamp = ys, stamp  # held, so its id names it while this is cached
        self.los: list[float] = []
        self.lo_at: list[int] = []
        self.his: list[float] = []
        self.hi_at: list[int] = []

    def grow(self) -> None:
        ys = self.ys
        for b in range(len(self.los), len(ys) // BLOCK):
            base = b * BLOCK
            ends = _ends(ys[base : base + BLOCK])
            lo_v, i, hi_v, j = ends if ends is not None else (math.inf, 0, -math.inf, 0)
            self.los.append(lo_v)
            self.lo_at.append(base + i)
            self.his.append(hi_v)
            self.hi_at.append(base + j)

    def ends(self, lo: int, hi: int) -> tuple[int, int] | None:
        """Where the finite min and max of ys[lo:hi] first are; None when none is finite.

        As `_ends` over the slice: the blocks wholly inside are read from what is kept, the
        points at either edge from the column."""
        ys = self.ys
        first, last = -(-lo // BLOCK), hi // BLOCK  # the whole blocks: [first, last)
        if first >= last:  # none: the points themselves
            return _places(ys, lo, hi)
        left = _ends_in(ys, lo, first * BLOCK) if lo < first * BLOCK else None
        right = _ends_in(ys, last * BLOCK, hi) if last * BLOCK < hi else None
        return _first_places([p for p in (left, self._kept(first, last), right) if p])

    def _kept(self, first: int, last: int) -> tuple[float, int, float, int] | None:
        """The finite extremes of the whole blocks [first, last) and where each first is."""
        los, his = self.los, self.his
        lo_v, hi_v = min(los[first:last]), max(his[first:last])
        if lo_v <= hi_v:  # a finite value in one of them
            a, b = los.index(lo_v, first, last), his.index(hi_v, first, last)
            return lo_v, self.lo_at[a], hi_v, self.hi_at[b]
        return None


def _ends_in(ys: Sequence[float], lo: int, hi: int) -> tuple[float, int, float, int] | None:
    """As `_ends` over ys[lo:hi], each place counted in `ys`."""
    ends = _ends(ys[lo:hi])
    return None if ends is None else (ends[0], lo + ends[1], ends[2], lo + ends[3])


def _places(ys: Sequence[float], lo: int, hi: int) -> tuple[int, int] | None:
    """Where the finite min and max of ys[lo:hi] first are, in `ys`; None when none is finite."""
    ends = _ends(ys[lo:hi])
    return None if ends is None else (lo + ends[1], lo + ends[3])


def _first_places(parts: list[tuple[float, int, float, int]]) -> tuple[int, int] | None:
    """Where the min and max over consecutive parts' extremes first are (None for no parts)."""
    if not parts:
        return None
    lo_v, hi_v = min(p[0] for p in parts), max(p[2] for p in parts)
    # the first part holding the extreme holds its first place (== as seg.index reads)
    i = next(p[1] for p in parts if p[0] == lo_v)
    j = next(p[3] for p in parts if p[2] == hi_v)
    return i, j


_BLOCKS: dict[int, _Blocks] = {}


def _blocks(ys: Sequence[float], stamp: int) -> _Blocks:
    kept = _BLOCKS.get(id(ys))
    if kept is None or kept.ys is not ys or kept.stamp != stamp or len(ys) < BLOCK * len(kept.los):
        if len(_BLOCKS) > 256:  # stores come and go with runs: keep the cache small
            _BLOCKS.clear()
        kept = _BLOCKS[id(ys)] = _Blocks(ys, stamp)
    kept.grow()
    return kept


def downsample(
    xs: Sequence[float], ys: Sequence[float], width: int, stamp: int | None = None
) -> tuple[list[float], list[float]]:
    """Keep at most two points per column, so a spike survives.

    The two are the min and max of each bucket, in x order; non-finite y values are dropped.
    With a `stamp` (a Curve's: ys grows by appends and is cut only when the stamp moves), the
    extremes of ys's whole blocks are kept from one call to the next, so a long live column
    costs its new points and its buckets' edges, not a pass over every point."""
    n = len(ys)
    width = max(1, width)
    if n <= 2 * width:
        return _finite(xs, ys)
    blocks = _blocks(ys, stamp) if stamp is not None and n >= 4 * BLOCK else None
    out_x: list[float] = []
    out_y: list[float] = []
    for b in range(width):
        lo, hi = b * n // width, (b + 1) * n // width
        at = _places(ys, lo, hi) if blocks is None else blocks.ends(lo, hi)
        if at is None:
            continue
        for k in sorted(set(at)):
            out_x.append(xs[k])
            out_y.append(ys[k])
    return out_x, out_y


def _finite(xs: Sequence[float], ys: Sequence[float]) -> tuple[list[float], list[float]]:
    """The points whose y is finite."""
    pairs = [(x, y) for x, y in zip(xs, ys, strict=False) if math.isfinite(y)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def thin(
    xs: Sequence[float],
    ys: Sequence[float],
    xlim: tuple[float, float],
    ylim: tuple[float, float],
    cols: int,
    rows: int,
) -> tuple[list[float], list[float]]:
    """Drop a line's points that add nothing at the canvas's resolution.

    A point is dropped when it is in the same cell of a `cols` x `rows` grid over the limits as
    the point kept before it (the last point is always kept). Drawn, the line is the same to
    within a cell, and the canvas draws one segment per point."""
    n = len(xs)
    if n <= 2:
        return list(xs), list(ys)
    x0, y0 = xlim[0], ylim[0]
    fx = cols / ((xlim[1] - x0) or 1.0)
    fy = rows / ((ylim[1] - y0) or 1.0)
    out_x, out_y = [xs[0]], [ys[0]]
    last = (int((xs[0] - x0) * fx), int((ys[0] - y0) * fy))
    for i in range(1, n - 1):
        cell = (int((xs[i] - x0) * fx), int((ys[i] - y0) * fy))
        if cell != last:
            out_x.append(xs[i])
            out_y.append(ys[i])
            last = cell
    out_x.append(xs[-1])
    out_y.append(ys[-1])
    return out_x, out_y


def linear_ticks(
    lo: float, hi: float, most: int = 6, whole: bool = False
) -> tuple[list[float], list[str]]:
    """Ticks for a linear axis between `lo` and `hi`: every multiple of one step inside.

    The step is 1, 2 or 5 times a power of ten, the smallest that gives at most `most` ticks
    (at least 1 where the axis counts `whole` things, as steps); each label has the decimals
    the step needs and no more."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo], [f"{lo:.3g}"]
    step = _tick_step(lo, hi, most, whole)
    decimals = 0 if step >= 1 else -math.floor(math.log10(step) + 1e-9)
    first = math.ceil(lo / step - 1e-9)
    ticks = [k * step for k in range(first, math.floor(hi / step + 1e-9) + 1)]
    if not ticks:  # a range narrower than one step: its two ends
        ticks = [lo, hi]
        decimals = max(decimals, 3)
    return ticks, [f"{t:.{min(decimals, 12)}f}" for t in ticks]


def _tick_step(lo: float, hi: float, most: int, whole: bool) -> float:
    """The smallest of 1, 2 or 5 times a power of ten that gives at most `most` ticks.

    At least 1 for an axis of `whole` things; the largest tried where none does."""
    e0 = math.floor(math.log10((hi - lo) / max(1, most)))
    steps = [m * 10.0**e for e in range(e0 - 1, e0 + 3) for m in (1, 2, 5)]
    return next(
        (s for s in steps if (not whole or s >= 1) and _count(lo, hi, s) <= most), steps[-1]
    )


def _count(lo: float, hi: float, step: float) -> int:
    return math.floor(hi / step + 1e-9) - math.ceil(lo / step - 1e-9) + 1


def log_ticks(lo: float, hi: float, most: int = 6) -> tuple[list[float], list[str]]:
    """Ticks for a log axis drawn as log10(y) between `lo` and `hi` (exponents).

    The ticks are at 1, 2 and 5 times each power of ten inside. Past `most` of them, the powers
    of ten alone (every other one if still too many). They are labelled with the values
    themselves."""
    ticks: list[tuple[float, float]] = []
    for e in range(math.floor(lo), math.ceil(hi) + 1):
        for m in (1, 2, 5):
            t = math.log10(m) + e
            if lo <= t <= hi:
                ticks.append((t, m * 10.0**e))
    if len(ticks) > most:
        ticks = _fewer_ticks(ticks, most)
    if len(ticks) < 2:  # a narrow range: its two ends
        ticks = [(lo, 10.0**lo), (hi, 10.0**hi)]
    return [t for t, _ in ticks], [f"{v:.3g}" for _, v in ticks]


def _fewer_ticks(ticks: list[tuple[float, float]], most: int) -> list[tuple[float, float]]:
    """The powers of ten alone where two or more are there (else every tick), at most `most`."""
    tens = [t for t in ticks if abs(t[0] - round(t[0])) < 1e-9]
    kept = tens if len(tens) >= 2 else ticks
    return kept[:: math.ceil(len(kept) / most)]
