"""The banked comparators' whole curves and the min-max envelope of each group of them.

They are drawn on the probes chart, and held by the alerts as the band a run is expected in."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence

from fontaine_tui.core.charts.chart import MARK_COLORS, Band, Curve
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.verdict.curves import banked_curve

_SERIES: dict[tuple[str, bool], tuple[tuple[Curve, ...], tuple[Band, ...]]] = {}


def banked_series(preset: Preset, scaled: bool) -> tuple[tuple[Curve, ...], tuple[Band, ...]]:
    """The same as `_banked_series`, kept per preset (its sha256 pins every banked version).

    The probes screen rebuilds its spec on every redraw, and the banked curves never change."""
    key = (preset.sha256, scaled)
    if key in _SERIES:
        return _SERIES[key]
    series = _banked_series(preset, scaled)
    if len(series[0]) == sum(1 for c in preset.comparators.values() if c.bank):
        _SERIES[key] = series  # kept only once every banked run was read with the preset
    return series


def _banked_series(preset: Preset, scaled: bool) -> tuple[tuple[Curve, ...], tuple[Band, ...]]:
    """Each banked comparator's whole curve, and the min-max envelope of each group.

    A curve is in its own units, at the steps it measured. For each `group` of two or more banked
    comparators the envelope is on the union of their steps, each curve interpolated between its
    measured steps (never extrapolated)."""
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
    bands = [band for group, members in groups.items() if (band := _envelope(group, members))]
    return tuple(curves), tuple(bands)


def _envelope(group: str, members: list[Sequence[tuple[int, float]]]) -> Band | None:
    """The min-max envelope of a group's curves, at each step two or more of them reach.

    None for a group of fewer than two curves, or one whose curves share no step."""
    if len(members) < 2:
        return None
    xs, lo, hi = [], [], []
    for s in sorted({s for pts in members for s, _ in pts}):
        vals = [v for pts in members if (v := _interpolate(pts, s)) is not None]
        if len(vals) >= 2:
            xs.append(float(s))
            lo.append(min(vals))
            hi.append(max(vals))
    if not xs:
        return None
    return Band(f"{group} envelope ({len(members)} runs)", tuple(xs), tuple(lo), tuple(hi), "gray")


def _interpolate(points: Sequence[tuple[int, float]], step: int) -> float | None:
    """The curve's value at `step` (points in step order).

    The value is measured, or linear between the two measured steps around it. None outside the
    measured range or next to a non-finite value."""
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
