"""The metric browser's charts: one field's series as a chart spec, and the rules' marks.

The smoothing is the loss chart's debiased EMA (core/charts/loss.py), the log axis the
renderer's. A field a pre-registered rule reads is marked, with the rule's raw bounds drawn on
it as levels: a level read's bounds as they are, a delta read's added to the anchor's value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fontaine_tui.core.charts.chart import ChartSpec, Curve, HLine, Mark
from fontaine_tui.core.charts.loss import ema_of
from fontaine_tui.core.log.records import Probe
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.verdict.text import signed
from fontaine_tui.model.metrics import PROBE, Series

RULE_MARK = "◆"


@dataclass(frozen=True, slots=True)
class RuleBounds:
    """A rule that reads a probe field: its name, how it reads, and its raw bounds."""

    rule: str  # "primary" or the secondary rule's name
    metric: str
    read: str  # "delta" (from the anchor) or "level"
    healthy: float
    drift: float
    lower_is_better: bool


def rules_by_field(preset: Preset) -> dict[str, list[RuleBounds]]:
    """The probe fields the verdict's rules read, each with the rules that read it."""
    spec = preset.verdict
    rules = [
        RuleBounds(
            "primary", spec.metric, spec.read, spec.healthy, spec.drift, spec.lower_is_better
        ),
        *(
            RuleBounds(r.name, r.metric, r.read, r.healthy, r.drift, r.lower_is_better)
            for r in spec.secondary
        ),
    ]
    out: dict[str, list[RuleBounds]] = {}
    for r in rules:
        out.setdefault(r.metric, []).append(r)
    return out


def _bounds(
    reads: list[RuleBounds], preset: Preset, probes: Mapping[int, Probe]
) -> tuple[tuple[HLine, ...], tuple[Mark, ...]]:
    """The rules' bounds as levels, and the anchor and endpoint marks of a delta read."""
    spec = preset.verdict
    anchor = probes.get(spec.anchor_step)
    lines: list[HLine] = []
    marks: list[Mark] = []
    for r in reads:
        h_op, d_op = ("<=", ">=") if r.lower_is_better else (">=", "<=")
        base = 0.0
        how = ""
        if r.read == "delta":
            base = anchor.value(r.metric) if anchor is not None else math.nan
            if not math.isfinite(base):
                continue  # no anchor value yet: a delta's bounds have no level
            how = f" from step {spec.anchor_step}"
            marks.append(Mark(float(spec.anchor_step), base, f"anchor {base:.4g}", "white"))
        who = "" if r.rule == "primary" else f"{r.rule}: "
        lines.append(
            HLine(base + r.healthy, f"{who}healthy {h_op} {signed(r.healthy)}{how}", "green")
        )
        lines.append(HLine(base + r.drift, f"{who}drift {d_op} {signed(r.drift)}{how}", "red"))
    return tuple(lines), tuple(marks)


def metric_chart(
    series: Series,
    smoothing: float = 0.0,
    log: bool = False,
    reads: list[RuleBounds] | None = None,
    preset: Preset | None = None,
    probes: Mapping[int, Probe] | None = None,
    stamp: int = 0,
    small: bool = False,
    times: Sequence[float] | None = None,
) -> ChartSpec:
    """One field's chart: its series, raw or with the debiased EMA on top, and a rule's marks.

    `reads` are the rules that read this field (its bounds are drawn with `preset` and the
    `probes` the evidence gate shows: core/run/evidence.py's `seen_probes`);
    `stamp` moves when the store rewound (a resume), which starts an EMA over. A `small` chart
    (a grid's cell) has no legend, so its rows go to the curve. `times` (when each point was
    logged: model/metrics.py's `MetricIndex.times`) are given for the wall-time axis."""
    curves = _curves(series, smoothing, stamp, small, times)
    if not reads:
        return ChartSpec(series.name, "", "", curves, ylog=log)
    title, hlines, marks = _read_by(series.name, reads, preset, probes, small)
    return ChartSpec(title, "", "", curves, hlines=hlines, marks=marks, ylog=log)


def _curves(
    series: Series, smoothing: float, stamp: int, small: bool, times: Sequence[float] | None
) -> tuple[Curve, ...]:
    """The series raw, faint under its debiased EMA when smoothed; a lone probe as a point.

    Each named by the field (a cursor's read line says it), whatever the legend says."""
    raw, smooth = ("", "") if small else ("raw", f"EMA {smoothing:g}")
    name = series.name
    if smoothing > 0 and len(series.values) > 1:
        ema = ema_of(series.values, smoothing, stamp)
        return (
            Curve(
                raw,
                series.steps,
                series.values,
                "cyan",
                faint=True,
                stamp=stamp,
                ts=times,
                name=name,
            ),
            Curve(
                smooth,
                series.steps,
                ema,
                "cyan",
                stamp=stamp,
                ts=times,
                name=f"{name} EMA {smoothing:g}",
            ),
        )
    points = series.kind == PROBE and len(series.steps) < 2
    label = "" if small else name
    return (
        Curve(
            label,
            series.steps,
            series.values,
            "cyan",
            points=points,
            stamp=stamp,
            ts=times,
            name=name,
        ),
    )


def _read_by(
    name: str,
    reads: list[RuleBounds],
    preset: Preset | None,
    probes: Mapping[int, Probe] | None,
    small: bool,
) -> tuple[str, tuple[HLine, ...], tuple[Mark, ...]]:
    """A field the rules read: its title naming them, and their bounds (unworded when small)."""
    rules = ", ".join(r.rule for r in reads)
    title = f"{RULE_MARK} {name}" + ("" if small else f"  (read by the {rules} rule)")
    hlines: tuple[HLine, ...] = ()
    marks: tuple[Mark, ...] = ()
    if preset is not None and probes is not None:
        hlines, marks = _bounds(reads, preset, probes)
    if small:  # the bounds' lines alone: their words would cover a small chart
        hlines = tuple(HLine(h.y, "", h.color) for h in hlines)
        marks = ()
    return title, hlines, marks
