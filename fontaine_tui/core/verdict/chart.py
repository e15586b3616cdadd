"""Chart specs as plain data: what to draw (curves, bounds, comparator marks), not how.

One spec feeds both the terminal chart (widgets/chart.py) and the PNG export.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.verdict.curves import banked_curve, banked_levels
from fontaine_tui.core.verdict.presets import Preset
from fontaine_tui.core.verdict.rules import Verdict
from fontaine_tui.core.verdict.text import signed

MARK_COLORS = ("red", "magenta", "orange", "yellow", "blue", "white")


@dataclass(frozen=True, slots=True)
class Curve:
    label: str
    xs: Sequence[float]  # may be a live column of the store: renderers downsample, never copy
    ys: Sequence[float]
    color: str
    points: bool = False  # markers only: a probe every 250 steps is not a line


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

    @property
    def points(self) -> int:
        return sum(len(c.xs) for c in self.curves) + 2 * sum(len(b.xs) for b in self.bands)


def downsample(xs: Sequence[float], ys: Sequence[float], width: int
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


def loss_chart(store: RunStore) -> ChartSpec:
    curves = tuple(Curve(label, store.steps, store.columns[name], color)
                   for name, label, color in (("ar_ce", "AR CE", "cyan"),
                                              ("flow_loss", "flow", "magenta")))
    return ChartSpec("training losses", "step", "loss", curves)


def comparator_marks(preset: Preset, scale: float | None) -> tuple[Mark, ...]:
    """Banked endpoint deltas, always in their own units: beside the scale-adjusted bounds
    they are annotated "raw units", never multiplied (the scale is an estimate for this
    run's instrument, not a conversion of the comparators')."""
    x = float(preset.verdict.endpoint_step)
    marks = []
    for i, comp in enumerate(preset.comparators.values()):
        unit = ", raw units" if scale is not None else ""
        marks.append(Mark(x, comp.delta, f"{comp.name} {signed(comp.delta)}{unit} @ endpoint",
                          MARK_COLORS[i % len(MARK_COLORS)]))
    return tuple(marks)


def probes_chart(store: RunStore, preset: Preset, verdicts: Sequence[Verdict],
                 latest: Verdict | None, scaled: bool) -> ChartSpec:
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
    pts = [(float(v.read_step), v.delta) for v in verdicts
           if v.read_step is not None and v.read_step >= anchor
           and v.delta is not None and math.isfinite(v.delta)]
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
    curve = Curve(f"this run delta({anchor}->s)", tuple(p[0] for p in pts),
                  tuple(p[1] for p in pts), "cyan", points=len(pts) < 2)
    hlines = (HLine(healthy, f"healthy {h_op} {signed(healthy)}", "green"),
              HLine(drift, f"same-drift {d_op} {signed(drift)}", "red"))
    banked, bands = banked_series(preset, use_scale is not None)
    marks = tuple(m for m, c in zip(comparator_marks(preset, use_scale),
                                    preset.comparators.values(), strict=True) if not c.bank)
    return ChartSpec(f"delta(s) = {spec.metric}(s) - {spec.metric}({anchor})  [{which}]",
                     "step", "delta", (*banked, curve), hlines, marks, xlim, note, bands)


_SERIES: dict[tuple[str, bool], tuple[tuple[Curve, ...], tuple[Band, ...]]] = {}


def banked_series(preset: Preset, scaled: bool) -> tuple[tuple[Curve, ...], tuple[Band, ...]]:
    """As `_banked_series`, kept per preset (its sha256 pins every banked version): the
    probes screen rebuilds its spec on every redraw, the banked curves never change."""
    key = (preset.sha256, scaled)
    if key in _SERIES:
        return _SERIES[key]
    series = _banked_series(preset, scaled)
    if len(series[0]) == sum(1 for c in preset.comparators.values() if c.bank):
        _SERIES[key] = series  # kept only once every banked run was found in this bank
    return series


def _banked_series(preset: Preset, scaled: bool) -> tuple[tuple[Curve, ...], tuple[Band, ...]]:
    """Each banked comparator's whole curve (its own units, at the steps it measured), and
    for each `group` of two or more banked comparators the min-max envelope, on the union of
    their steps, each curve interpolated between its measured steps (never extrapolated)."""
    curves: list[Curve] = []
    groups: dict[str, list[list[tuple[int, float]]]] = {}
    for i, comp in enumerate(preset.comparators.values()):
        points = banked_curve(preset, comp)
        if not points:
            continue
        unit = ", raw units" if scaled else ""
        curves.append(Curve(f"{comp.name} (banked {comp.bank.partition('@')[2][:8]}{unit})",
                            tuple(float(s) for s, _ in points), tuple(v for _, v in points),
                            MARK_COLORS[i % len(MARK_COLORS)]))
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
            bands.append(Band(f"{group} envelope ({len(members)} runs)", tuple(xs), tuple(lo),
                              tuple(hi), "gray"))
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
        Curve(f"this run {metric}", tuple(float(p.step) for p in probes),
              tuple(p.value(metric) for p in probes), "cyan", points=True),
        Curve("this run train_chunk_mae", tuple(float(p.step) for p in probes),
              tuple(p.train_chunk_mae for p in probes), "blue", points=True),
    )
    banked, drawn = [], set()
    for i, comp in enumerate(preset.comparators.values()):  # banked runs: their level curves
        pts = [(s, v) for s, v in banked_levels(comp, metric) if s <= xlim[1]]
        if pts:
            drawn.add(comp.name)
            banked.append(Curve(f"{comp.name} {metric} (banked {comp.bank.partition('@')[2][:8]})",
                                tuple(float(s) for s, _ in pts), tuple(v for _, v in pts),
                                MARK_COLORS[i % len(MARK_COLORS)]))
    curves = (*banked, *curves)
    marks = []
    for comp in preset.comparators.values():
        if comp.name in drawn:
            continue  # its whole level curve is drawn
        if comp.level_step and math.isfinite(comp.eval_level):
            marks.append(Mark(float(comp.level_step), comp.eval_level,
                              f"{comp.name} eval {comp.eval_level:.4f} @ {comp.level_step}",
                              "red", align="left"))
    return ChartSpec(f"eval levels before the anchor probe (step {preset.verdict.anchor_step})",
                     "step", metric, curves, (), tuple(marks), xlim,
                     "deltas start at the anchor probe")


def _level_read_chart(store: RunStore, preset: Preset, verdicts: Sequence[Verdict],
                      latest: Verdict | None, scaled: bool) -> ChartSpec:
    """`read = "level"`: the metric itself at each probe, against the bounds."""
    spec = preset.verdict
    pts = [(float(v.read_step), v.delta) for v in verdicts
           if v.read_step is not None and v.delta is not None and math.isfinite(v.delta)]
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
    curve = Curve(f"this run {spec.metric}", tuple(p[0] for p in pts), tuple(p[1] for p in pts),
                  "cyan", points=len(pts) < 2)
    hlines = (HLine(healthy, f"healthy {h_op} {signed(healthy)}", "green"),
              HLine(drift, f"same-drift {d_op} {signed(drift)}", "red"))
    pad = spec.endpoint_step * 0.05
    return ChartSpec(f"{spec.metric}(s), the level read ({better} is better)", "step",
                     spec.metric, (curve,), hlines, (), (0.0 - pad, spec.endpoint_step + pad),
                     note)
