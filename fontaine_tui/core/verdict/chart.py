"""Chart specs as plain data: what to draw (curves, bounds, comparator marks), not how.

One spec feeds both the terminal chart (widgets/chart.py) and the PNG export.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.verdict.curves import banked_curve, banked_levels
from fontaine_tui.core.verdict.record import Verdict
from fontaine_tui.core.verdict.text import signed

MARK_COLORS = ("red", "magenta", "orange", "yellow", "blue", "white")


@dataclass(frozen=True, slots=True)
class Curve:
    label: str
    xs: Sequence[float]  # may be a live column of the store: renderers downsample, never copy
    ys: Sequence[float]
    color: str
    points: bool = False  # markers only: a probe every 250 steps is not a line
    faint: bool = False  # drawn dim, beneath the others (the raw loss under its EMA)


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

    @property
    def points(self) -> int:
        return sum(len(c.xs) for c in self.curves) + 2 * sum(len(b.xs) for b in self.bands)


def downsample(
    xs: Sequence[float], ys: Sequence[float], width: int
) -> tuple[list[float], list[float]]:
    """At most two points per column (the min and max of each bucket, in x order), so a spike
    survives; non-finite y values are dropped."""
    n = len(ys)
    width = max(1, width)
    if n <= 2 * width:
        pairs = [(x, y) for x, y in zip(xs, ys, strict=False) if math.isfinite(y)]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    out_x: list[float] = []
    out_y: list[float] = []
    for b in range(width):
        lo, hi = b * n // width, (b + 1) * n // width
        seg = ys[lo:hi]
        lo_v, hi_v = min(seg), max(seg)  # C speed; NaN makes them unreliable, checked below
        if not (math.isfinite(lo_v) and math.isfinite(hi_v)):
            finite = [v for v in seg if math.isfinite(v)]
            if not finite:
                continue
            lo_v, hi_v = min(finite), max(finite)
        i, j = seg.index(lo_v), seg.index(hi_v)
        for k in sorted({i, j}):
            out_x.append(xs[lo + k])
            out_y.append(seg[k])
    return out_x, out_y


EMA_FACTORS = (0.0, 0.6, 0.8, 0.9, 0.95, 0.98, 0.99)  # the loss chart's smoothing steps
EMA_DEFAULT = 0.9
LOSSES = (("ar_ce", "AR CE", "cyan"), ("flow_loss", "flow", "magenta"))


class Ema:
    """The debiased exponential moving average of a growing column, extended in place: a
    redraw adds only the points logged since the last one.

    s_t = f * s_(t-1) + (1 - f) * x_t, read as s_t / (1 - f^n) over the n finite points so
    far, so the curve starts at the first value instead of rising from zero; a non-finite
    point leaves the average where it was (and is not drawn)."""

    __slots__ = ("factor", "column", "_acc", "_n", "_seen", "_stamp", "out")

    def __init__(self, factor: float, column: Sequence[float]) -> None:
        self.factor = factor
        self.column = column  # held, so its id names it for as long as this is cached
        self._reset(0)

    def _reset(self, stamp: int) -> None:
        self._acc = 0.0
        self._n = 0  # finite points averaged
        self._seen = 0  # points of the column consumed
        self._stamp = stamp
        self.out: list[float] = []

    def extend(self, stamp: int = 0) -> list[float]:
        """Average the points added since the last call; `stamp` moves when earlier points
        were replaced (a resume rewound the log), which starts the average over."""
        column = self.column
        if stamp != self._stamp or len(column) < self._seen:
            self._reset(stamp)
        f, acc, n, out = self.factor, self._acc, self._n, self.out
        for x in column[self._seen :]:
            if math.isfinite(x):
                acc = f * acc + (1.0 - f) * x
                n += 1
                out.append(acc / (1.0 - f**n))
            else:
                out.append(math.nan)
        self._acc, self._n, self._seen = acc, n, len(column)
        return out


_EMAS: dict[tuple[int, float], Ema] = {}


def ema(store: RunStore, name: str, factor: float) -> list[float]:
    """The store's column `name` smoothed by `factor`, kept per column and factor."""
    column = store.columns[name]
    key = (id(column), factor)
    if key not in _EMAS:
        if len(_EMAS) > 64:  # stores come and go with runs: keep the cache small
            _EMAS.clear()
        _EMAS[key] = Ema(factor, column)
    return _EMAS[key].extend(store.replaced_steps)


def thin(
    xs: Sequence[float],
    ys: Sequence[float],
    xlim: tuple[float, float],
    ylim: tuple[float, float],
    cols: int,
    rows: int,
) -> tuple[list[float], list[float]]:
    """A line's points less those in the same cell of a `cols` x `rows` grid over the
    limits as the point kept before them (the last point always kept): drawn, the line is
    the same to within a cell, and the canvas draws one segment per point."""
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


def log_ticks(lo: float, hi: float, most: int = 6) -> tuple[list[float], list[str]]:
    """Ticks for a log axis drawn as log10(y) between `lo` and `hi` (exponents): at 1, 2
    and 5 times each power of ten inside; past `most` of them, the powers of ten alone
    (every other one if still too many); labelled with the values themselves."""
    ticks: list[tuple[float, float]] = []
    for e in range(math.floor(lo), math.ceil(hi) + 1):
        for m in (1, 2, 5):
            t = math.log10(m) + e
            if lo <= t <= hi:
                ticks.append((t, m * 10.0**e))
    if len(ticks) > most:  # the powers of ten alone, thinned if still too many
        tens = [t for t in ticks if abs(t[0] - round(t[0])) < 1e-9]
        if len(tens) >= 2:
            ticks = tens[:: math.ceil(len(tens) / most)]
        else:
            ticks = ticks[:: math.ceil(len(ticks) / most)]
    if len(ticks) < 2:  # a narrow range: its two ends
        ticks = [(lo, 10.0**lo), (hi, 10.0**hi)]
    return [t for t, _ in ticks], [f"{v:.3g}" for _, v in ticks]


def losses(store: RunStore) -> tuple[tuple[str, str, str], ...]:
    """The loss columns to draw: the engine's AR CE and flow loss, or, for another trainer's
    run (which logs one train loss), its `loss`."""
    cols = store.columns
    if (
        store.steps
        and all(math.isnan(cols[n][-1]) for n, _, _ in LOSSES)
        and math.isfinite(cols["loss"][-1])
    ):
        return (("loss", "loss", "cyan"),)
    return LOSSES


def loss_chart(store: RunStore, smoothing: float = 0.0, log: bool = False) -> ChartSpec:
    """The train losses; with `smoothing` (an EMA factor in [0, 1)) the smoothed curves on
    top of the raw ones drawn faint; `log` for a log y axis."""
    curves: list[Curve] = []
    for name, label, color in losses(store):
        if smoothing > 0:
            curves.append(
                Curve(f"{label} raw", store.steps, store.columns[name], color, faint=True)
            )
            curves.append(
                Curve(f"{label} EMA {smoothing:g}", store.steps, ema(store, name, smoothing), color)
            )
        else:
            curves.append(Curve(label, store.steps, store.columns[name], color))
    smooth = f"EMA {smoothing:g}, debiased" if smoothing > 0 else "no smoothing"
    title = f"training losses  [{smooth}; {'log' if log else 'linear'} scale]"
    return ChartSpec(title, "step", "loss (log scale)" if log else "loss", tuple(curves), ylog=log)


def comparator_marks(preset: Preset, scale: float | None) -> tuple[Mark, ...]:
    """Banked endpoint deltas, always in their own units: beside the scale-adjusted bounds
    they are annotated "raw units", never multiplied (the scale is an estimate for this
    run's instrument, not a conversion of the comparators')."""
    x = float(preset.verdict.endpoint_step)
    marks = []
    for i, comp in enumerate(preset.comparators.values()):
        unit = ", raw units" if scale is not None else ""
        marks.append(
            Mark(
                x,
                comp.delta,
                f"{comp.name} {signed(comp.delta)}{unit} @ endpoint",
                MARK_COLORS[i % len(MARK_COLORS)],
            )
        )
    return tuple(marks)


def probes_chart(
    store: RunStore,
    preset: Preset,
    verdicts: Sequence[Verdict],
    latest: Verdict | None,
    scaled: bool,
) -> ChartSpec:
    """delta(s) against banked endpoints and bounds; before the anchor, eval levels against
    the comparators' levels at their level step."""
    spec = preset.verdict
    anchor, endpoint = spec.anchor_step, spec.endpoint_step
    if spec.read == "level":
        return _level_read_chart(store, preset, verdicts, latest, scaled)
    if anchor not in store.probes:
        return _levels_chart(store, preset, (0.0, anchor * 1.1))
    pad = (endpoint - anchor) * 0.08
    xlim = (anchor - pad, endpoint + pad)
    pts = [
        (float(v.read_step), v.delta)
        for v in verdicts
        if v.read_step is not None
        and v.read_step >= anchor
        and v.delta is not None
        and math.isfinite(v.delta)
    ]
    note = ""
    scale = latest.scale.value if (latest is not None and latest.scale is not None) else None
    rule = latest.raw if latest is not None else None
    if scaled and scale is None:
        note = "no scale amendment in force: raw bounds shown"
    if scaled and latest is not None and latest.scaled is not None:
        rule = latest.scaled
    healthy = rule.healthy if rule is not None else spec.healthy
    drift = rule.drift if rule is not None else spec.drift
    h_op, d_op = ("<=", ">=") if spec.lower_is_better else (">=", "<=")
    use_scale = scale if scaled else None
    which = f"scale-adjusted x{scale:.3f}" if use_scale is not None else "raw"
    curve = Curve(
        f"this run delta({anchor}->s)",
        tuple(p[0] for p in pts),
        tuple(p[1] for p in pts),
        "cyan",
        points=len(pts) < 2,
    )
    hlines = (
        HLine(healthy, f"healthy {h_op} {signed(healthy)}", "green"),
        HLine(drift, f"same-drift {d_op} {signed(drift)}", "red"),
    )
    banked, bands = banked_series(preset, use_scale is not None)
    marks = tuple(
        m
        for m, c in zip(
            comparator_marks(preset, use_scale), preset.comparators.values(), strict=True
        )
        if not c.bank
    )
    return ChartSpec(
        f"delta(s) = {spec.metric}(s) - {spec.metric}({anchor})  [{which}]",
        "step",
        "delta",
        (*banked, curve),
        hlines,
        marks,
        xlim,
        note,
        bands,
    )


DATASET_COLORS = ("cyan", "green", "orange", "magenta", "blue", "yellow")


def datasets(store: RunStore) -> list[str]:
    """The datasets of the run's per-dataset eval breakdown, in the order first logged."""
    names: dict[str, None] = {}
    for step in store.probe_steps():
        names.update(dict.fromkeys(store.probes[step].breakdown))
    return list(names)


def datasets_chart(store: RunStore, preset: Preset, scaled: bool = False) -> ChartSpec:
    """The per-dataset view: for each dataset of the eval breakdown, this run's delta (or,
    for a level read, its level) at each probe, and each banked comparator's curve of the
    same dataset drawn faint in the dataset's colour. No bounds: they are the rule's, on
    the verdict's metric; and always raw units (a scale amendment is for the metric)."""
    spec = preset.verdict
    anchor = spec.anchor_step
    level = spec.read == "level" or anchor not in store.probes
    names = datasets(store)
    curves: list[Curve] = []
    for i, name in enumerate(names):
        field = f"breakdown.{name}"
        color = DATASET_COLORS[i % len(DATASET_COLORS)]
        base = 0.0 if level else store.probes[anchor].value(field)
        pts = [
            (float(s), store.probes[s].value(field) - base)
            for s in store.probe_steps()
            if level or s >= anchor
        ]
        pts = [(x, y) for x, y in pts if math.isfinite(y)]
        for comp in preset.comparators.values():
            theirs = banked_levels(comp, field) if level else banked_curve(preset, comp, field)
            if theirs:
                curves.append(
                    Curve(
                        f"{comp.name} {name} (banked)",
                        tuple(float(x) for x, _ in theirs),
                        tuple(y for _, y in theirs),
                        color,
                        faint=True,
                    )
                )
        curves.append(
            Curve(
                f"this run {name}",
                tuple(x for x, _ in pts),
                tuple(y for _, y in pts),
                color,
                points=len(pts) < 2,
            )
        )
    what = f"{spec.metric} by dataset" if level else f"delta({anchor}->s) by dataset"
    if not names:
        note = "no per-dataset breakdown in this run's probes yet"
    elif level and spec.read != "level":
        note = f"levels until the anchor probe (step {anchor}); deltas from it"
    else:
        note = f"bounds apply to {spec.metric}, not drawn here"
    if scaled:
        note += "; per-dataset curves are in raw units"
    end = float(spec.endpoint_step)
    start = 0.0 if level else float(anchor)
    pad = (end - start) * 0.05
    return ChartSpec(
        f"per-dataset {what}  (d: back to {spec.metric})",
        "step",
        "level" if level else "delta",
        tuple(curves),
        xlim=(start - pad, end + pad),
        note=note,
    )


_SERIES: dict[tuple[str, bool], tuple[tuple[Curve, ...], tuple[Band, ...]]] = {}


def banked_series(preset: Preset, scaled: bool) -> tuple[tuple[Curve, ...], tuple[Band, ...]]:
    """As `_banked_series`, kept per preset (its sha256 pins every banked version): the
    probes screen rebuilds its spec on every redraw, the banked curves never change."""
    key = (preset.sha256, scaled)
    if key in _SERIES:
        return _SERIES[key]
    series = _banked_series(preset, scaled)
    if len(series[0]) == sum(1 for c in preset.comparators.values() if c.bank):
        _SERIES[key] = series  # kept only once every banked run was read with the preset
    return series


def _banked_series(preset: Preset, scaled: bool) -> tuple[tuple[Curve, ...], tuple[Band, ...]]:
    """Each banked comparator's whole curve (its own units, at the steps it measured), and
    for each `group` of two or more banked comparators the min-max envelope, on the union of
    their steps, each curve interpolated between its measured steps (never extrapolated)."""
    curves: list[Curve] = []
    groups: dict[str, list[Sequence[tuple[int, float]]]] = {}
    for i, comp in enumerate(preset.comparators.values()):
        points = banked_curve(preset, comp)
        if not points:
            continue
        unit = ", raw units" if scaled else ""
        curves.append(
            Curve(
                f"{comp.name} (banked {comp.bank.partition('@')[2][:8]}{unit})",
                tuple(float(s) for s, _ in points),
                tuple(v for _, v in points),
                MARK_COLORS[i % len(MARK_COLORS)],
            )
        )
        if comp.group:
            groups.setdefault(comp.group, []).append(points)
    bands: list[Band] = []
    for group, members in groups.items():
        if len(members) < 2:
            continue
        steps = sorted({s for pts in members for s, _ in pts})
        xs, lo, hi = [], [], []
        for s in steps:
            vals = [v for pts in members if (v := _interpolate(pts, s)) is not None]
            if len(vals) >= 2:
                xs.append(float(s))
                lo.append(min(vals))
                hi.append(max(vals))
        if xs:
            bands.append(
                Band(
                    f"{group} envelope ({len(members)} runs)",
                    tuple(xs),
                    tuple(lo),
                    tuple(hi),
                    "gray",
                )
            )
    return tuple(curves), tuple(bands)


def _interpolate(points: Sequence[tuple[int, float]], step: int) -> float | None:
    """The curve at `step` (points in step order): measured, or linear between the two
    measured steps around it; None outside the measured range or next to a non-finite value."""
    i = bisect_left(points, (step, -math.inf))
    if i < len(points) and points[i][0] == step:
        v = points[i][1]
        return v if math.isfinite(v) else None
    if i == 0 or i == len(points):
        return None
    (s0, v0), (s1, v1) = points[i - 1], points[i]
    if not (math.isfinite(v0) and math.isfinite(v1)):
        return None
    return v0 + (v1 - v0) * (step - s0) / (s1 - s0)


def _levels_chart(store: RunStore, preset: Preset, xlim: tuple[float, float]) -> ChartSpec:
    probes = [store.probes[s] for s in store.probe_steps()]
    metric = preset.verdict.metric
    curves: tuple[Curve, ...] = (
        Curve(
            f"this run {metric}",
            tuple(float(p.step) for p in probes),
            tuple(p.value(metric) for p in probes),
            "cyan",
            points=True,
        ),
        Curve(
            "this run train_chunk_mae",
            tuple(float(p.step) for p in probes),
            tuple(p.train_chunk_mae for p in probes),
            "blue",
            points=True,
        ),
    )
    banked, drawn = [], set()
    for i, comp in enumerate(preset.comparators.values()):  # banked runs: their level curves
        pts = [(s, v) for s, v in banked_levels(comp, metric) if s <= xlim[1]]
        if pts:
            drawn.add(comp.name)
            banked.append(
                Curve(
                    f"{comp.name} {metric} (banked {comp.bank.partition('@')[2][:8]})",
                    tuple(float(s) for s, _ in pts),
                    tuple(v for _, v in pts),
                    MARK_COLORS[i % len(MARK_COLORS)],
                )
            )
    curves = (*banked, *curves)
    marks = []
    for comp in preset.comparators.values():
        if comp.name in drawn:
            continue  # its whole level curve is drawn
        if comp.level_step and math.isfinite(comp.eval_level):
            marks.append(
                Mark(
                    float(comp.level_step),
                    comp.eval_level,
                    f"{comp.name} eval {comp.eval_level:.4f} @ {comp.level_step}",
                    "red",
                    align="left",
                )
            )
    return ChartSpec(
        f"eval levels before the anchor probe (step {preset.verdict.anchor_step})",
        "step",
        metric,
        curves,
        (),
        tuple(marks),
        xlim,
        "deltas start at the anchor probe",
    )


def _level_read_chart(
    store: RunStore,
    preset: Preset,
    verdicts: Sequence[Verdict],
    latest: Verdict | None,
    scaled: bool,
) -> ChartSpec:
    """`read = "level"`: the metric itself at each probe, against the bounds."""
    spec = preset.verdict
    pts = [
        (float(v.read_step), v.delta)
        for v in verdicts
        if v.read_step is not None and v.delta is not None and math.isfinite(v.delta)
    ]
    rule = latest.raw if latest is not None else None
    note = ""
    if scaled and (latest is None or latest.scaled is None):
        note = "no scale amendment in force: raw bounds shown"
    elif scaled and latest is not None:
        rule = latest.scaled
    healthy = rule.healthy if rule is not None else spec.healthy
    drift = rule.drift if rule is not None else spec.drift
    h_op, d_op = ("<=", ">=") if spec.lower_is_better else (">=", "<=")
    better = "lower" if spec.lower_is_better else "higher"
    curve = Curve(
        f"this run {spec.metric}",
        tuple(p[0] for p in pts),
        tuple(p[1] for p in pts),
        "cyan",
        points=len(pts) < 2,
    )
    hlines = (
        HLine(healthy, f"healthy {h_op} {signed(healthy)}", "green"),
        HLine(drift, f"same-drift {d_op} {signed(drift)}", "red"),
    )
    pad = spec.endpoint_step * 0.05
    return ChartSpec(
        f"{spec.metric}(s), the level read ({better} is better)",
        "step",
        spec.metric,
        (curve,),
        hlines,
        (),
        (0.0 - pad, spec.endpoint_step + pad),
        note,
    )
