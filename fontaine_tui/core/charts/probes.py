"""The probes charts: the rule's read at each probe, and the per-dataset view.

The read (a delta from the anchor, or a level) is drawn against its bounds and the banked
comparators, with the eval levels before the anchor. Both draw a run's probes and reads from
what the evidence gate lets a surface see (core/verdict/seen.py's `SeenReads`, built by
core/run/evidence.py's `seen_reads`), never from its store: while the read is hidden there
is none of either to draw."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from fontaine_tui.core.charts.chart import MARK_COLORS, ChartSpec, Curve, HLine, Mark
from fontaine_tui.core.charts.envelope import banked_series
from fontaine_tui.core.log.records import Probe
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.rule import Comparator, VerdictSpec
from fontaine_tui.core.verdict import blind
from fontaine_tui.core.verdict.curves import banked_curve, banked_levels
from fontaine_tui.core.verdict.record import RuleRead, Verdict
from fontaine_tui.core.verdict.seen import SeenReads
from fontaine_tui.core.verdict.text import signed


def comparator_marks(preset: Preset, scale: float | None) -> tuple[Mark, ...]:
    """Banked endpoint deltas, always in their own units.

    Beside the scale-adjusted bounds they are annotated "raw units", never multiplied (the scale
    is an estimate for this run's instrument, not a conversion of the comparators')."""
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
    seen: SeenReads,
    preset: Preset,
    latest: Verdict | None,
    scaled: bool,
) -> ChartSpec:
    """The probes chart: delta(s) against banked endpoints and bounds.

    `seen`: the run's probes and reads the evidence gate shows (none while hidden). `latest`:
    the read whose bounds and scale are drawn. Before the anchor, eval levels are drawn against
    the comparators' levels at their level step."""
    return said_hidden(_probes_chart(seen, preset, latest, scaled), seen)


def said_hidden(chart: ChartSpec, seen: SeenReads) -> ChartSpec:
    """`chart`, its note saying so where the run's read is hidden (none of it drawn)."""
    if not seen.hidden:
        return chart
    return replace(chart, note=f"this run's probes and reads {blind.HIDDEN} until the endpoint")


def _probes_chart(
    seen: SeenReads, preset: Preset, latest: Verdict | None, scaled: bool
) -> ChartSpec:
    spec = preset.verdict
    anchor, endpoint = spec.anchor_step, spec.endpoint_step
    if spec.read == "level":
        return _level_read_chart(seen, preset, latest, scaled)
    if anchor not in seen.by_step:
        return _levels_chart(seen, preset, (0.0, anchor * 1.1))
    pad = (endpoint - anchor) * 0.08
    xlim = (anchor - pad, endpoint + pad)
    scale = _scale_in_force(latest)
    note = NO_SCALE if scaled and scale is None else ""
    use_scale = scale if scaled else None
    which = f"scale-adjusted x{use_scale:.3f}" if use_scale is not None else "raw"
    curve = _read_curve(f"this run delta({anchor}->s)", _read_points(seen, since=anchor), seen)
    banked, bands = banked_series(preset, use_scale is not None)
    banked = tuple(_said_if_same(c, curve, anchor) for c in banked)
    return ChartSpec(
        f"delta(s) = {spec.metric}(s) - {spec.metric}({anchor})  [{which}]",
        "step",
        "delta",
        (*banked, curve),
        _bound_lines(spec, _rule_drawn(latest, scaled)),
        _typed_in_marks(preset, use_scale),
        xlim,
        note,
        bands,
    )


NO_SCALE = "no scale amendment in force: raw bounds shown"


def _scale_in_force(latest: Verdict | None) -> float | None:
    """The scale of the amendment in force at the latest read (None for none, or no read)."""
    return latest.scale.value if (latest is not None and latest.scale is not None) else None


def _rule_drawn(latest: Verdict | None, scaled: bool) -> RuleRead | None:
    """The bounds drawn: the latest read's, scale-adjusted where asked for and in force.

    Its raw ones otherwise; None before any read (the preset's are drawn)."""
    if latest is None:
        return None
    return latest.scaled if scaled and latest.scaled is not None else latest.raw


def _bound_lines(spec: VerdictSpec, rule: RuleRead | None) -> tuple[HLine, ...]:
    """The healthy and same-drift bounds as lines: the drawn rule's, else the preset's."""
    healthy = rule.healthy if rule is not None else spec.healthy
    drift = rule.drift if rule is not None else spec.drift
    h_op, d_op = ("<=", ">=") if spec.lower_is_better else (">=", "<=")
    return (
        HLine(healthy, f"healthy {h_op} {signed(healthy)}", "green"),
        HLine(drift, f"same-drift {d_op} {signed(drift)}", "red"),
    )


def _read_points(seen: SeenReads, since: float = -math.inf) -> list[tuple[float, float]]:
    """(step, read) of each read at step `since` or later whose read is a number."""
    return [
        (float(v.read_step), v.delta)
        for v in seen.verdicts
        if v.read_step is not None
        and v.read_step >= since
        and v.delta is not None
        and math.isfinite(v.delta)
    ]


def _read_curve(label: str, pts: list[tuple[float, float]], seen: SeenReads) -> Curve:
    """This run's read at each probe (points while fewer than two), with when each was logged."""
    return Curve(
        label,
        tuple(p[0] for p in pts),
        tuple(p[1] for p in pts),
        "cyan",
        points=len(pts) < 2,
        ts=_times(seen, [p[0] for p in pts]),
    )


def _times(seen: SeenReads, steps: list[float]) -> tuple[float, ...]:
    """When the probe at each of `steps` was logged (NaN where none stands)."""
    probes = seen.by_step
    return tuple(probes[int(s)].time if int(s) in probes else math.nan for s in steps)


def _typed_in_marks(preset: Preset, scale: float | None) -> tuple[Mark, ...]:
    """The endpoint marks of the comparators typed in (a banked one's curve is drawn)."""
    return tuple(
        m
        for m, c in zip(comparator_marks(preset, scale), preset.comparators.values(), strict=True)
        if not c.bank
    )


SAME = " = this run, under it"  # a banked curve the run's covers point for point


def _said_if_same(banked: Curve, run: Curve, anchor: int) -> Curve:
    """`banked`, its label saying so where the run's curve covers it.

    That is where both have a probe past the anchor (where every delta is 0) in common and
    agree at each: drawn under the run's, the banked curve would show in the legend alone."""
    mine = dict(zip(run.xs, run.ys, strict=True))
    shared = [
        (y, mine[x]) for x, y in zip(banked.xs, banked.ys, strict=True) if x > anchor and x in mine
    ]
    if shared and all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for a, b in shared):
        return replace(banked, label=banked.label + SAME)
    return banked


DATASET_COLORS = ("cyan", "green", "orange", "magenta", "blue", "yellow")


def datasets(probes: Mapping[int, Probe]) -> list[str]:
    """The datasets of the probes' per-dataset eval breakdown, in the order first logged."""
    names: dict[str, None] = {}
    for step in sorted(probes):
        names.update(dict.fromkeys(probes[step].breakdown))
    return list(names)


def datasets_chart(seen: SeenReads, preset: Preset, scaled: bool = False) -> ChartSpec:
    """The per-dataset view of the eval breakdown.

    For each dataset, this run's delta (or, for a level read, its level) at each probe, and each
    banked comparator's curve of the same dataset drawn faint in the dataset's colour. No bounds:
    they are the rule's, on the verdict's metric. Always raw units (a scale amendment is for the
    metric)."""
    spec = preset.verdict
    anchor = spec.anchor_step
    level = spec.read == "level" or anchor not in seen.by_step
    names = datasets(seen.by_step)
    curves: list[Curve] = []
    for i, name in enumerate(names):
        color = DATASET_COLORS[i % len(DATASET_COLORS)]
        curves += _dataset_curves(seen, preset, name, color, level)
    what = f"{spec.metric} by dataset" if level else f"delta({anchor}->s) by dataset"
    end = float(spec.endpoint_step)
    start = 0.0 if level else float(anchor)
    pad = (end - start) * 0.05
    chart = ChartSpec(
        f"per-dataset {what}  (d: back to {spec.metric})",
        "step",
        "level" if level else "delta",
        tuple(curves),
        xlim=(start - pad, end + pad),
        note=_datasets_note(spec, names, level, scaled),
    )
    return said_hidden(chart, seen)


def _dataset_curves(
    seen: SeenReads, preset: Preset, name: str, color: str, level: bool
) -> list[Curve]:
    """One dataset's curves: each banked comparator's, faint, then this run's."""
    field = f"breakdown.{name}"
    curves = []
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
    pts = _dataset_points(seen, field, preset.verdict.anchor_step, level)
    curves.append(
        Curve(
            f"this run {name}",
            tuple(x for x, _ in pts),
            tuple(y for _, y in pts),
            color,
            points=len(pts) < 2,
            ts=_times(seen, [x for x, _ in pts]),
        )
    )
    return curves


def _dataset_points(
    seen: SeenReads, field: str, anchor: int, level: bool
) -> list[tuple[float, float]]:
    """(step, value) of one dataset's eval at each probe where it is a number.

    Its level, or (`level` false) its delta from the anchor probe, from the anchor on."""
    probes = seen.by_step
    base = 0.0 if level else probes[anchor].value(field)
    pts = [(float(s), probes[s].value(field) - base) for s in seen.steps() if level or s >= anchor]
    return [(x, y) for x, y in pts if math.isfinite(y)]


def _datasets_note(spec: VerdictSpec, names: list[str], level: bool, scaled: bool) -> str:
    """What the per-dataset view says under it."""
    if not names:
        note = "no per-dataset breakdown in this run's probes yet"
    elif level and spec.read != "level":
        note = f"levels until the anchor probe (step {spec.anchor_step}); deltas from it"
    else:
        note = f"bounds apply to {spec.metric}, not drawn here"
    if scaled:
        note += "; per-dataset curves are in raw units"
    return note


def _levels_chart(seen: SeenReads, preset: Preset, xlim: tuple[float, float]) -> ChartSpec:
    metric = preset.verdict.metric
    banked = _banked_level_curves(preset, metric, xlim[1])
    drawn = {comp.name for comp, _ in banked}
    return ChartSpec(
        f"eval levels before the anchor probe (step {preset.verdict.anchor_step})",
        "step",
        metric,
        (*(curve for _, curve in banked), *_run_level_curves(seen, metric)),
        (),
        _eval_level_marks(preset, drawn),
        xlim,
        "deltas start at the anchor probe",
    )


def _run_level_curves(seen: SeenReads, metric: str) -> tuple[Curve, ...]:
    """This run's eval level and train chunk MAE at each probe."""
    probes = [seen.by_step[s] for s in seen.steps()]
    steps = tuple(float(p.step) for p in probes)
    times = tuple(p.time for p in probes)
    return (
        Curve(
            f"this run {metric}",
            steps,
            tuple(p.value(metric) for p in probes),
            "cyan",
            points=True,
            ts=times,
        ),
        Curve(
            "this run train_chunk_mae",
            steps,
            tuple(p.train_chunk_mae for p in probes),
            "blue",
            points=True,
            ts=times,
        ),
    )


def _banked_level_curves(
    preset: Preset, metric: str, until: float
) -> list[tuple[Comparator, Curve]]:
    """Each banked comparator's level curve up to step `until`, where it has a probe there."""
    banked = []
    for i, comp in enumerate(preset.comparators.values()):
        pts = [(s, v) for s, v in banked_levels(comp, metric) if s <= until]
        if pts:
            banked.append(
                (
                    comp,
                    Curve(
                        f"{comp.name} {metric} (banked {comp.bank.partition('@')[2][:8]})",
                        tuple(float(s) for s, _ in pts),
                        tuple(v for _, v in pts),
                        MARK_COLORS[i % len(MARK_COLORS)],
                    ),
                )
            )
    return banked


def _eval_level_marks(preset: Preset, drawn: set[str]) -> tuple[Mark, ...]:
    """The typed-in eval level of each comparator whose level curve is not drawn."""
    return tuple(
        Mark(
            float(comp.level_step),
            comp.eval_level,
            f"{comp.name} eval {comp.eval_level:.4f} @ {comp.level_step}",
            "red",
            align="left",
        )
        for comp in preset.comparators.values()
        if comp.name not in drawn and comp.level_step and math.isfinite(comp.eval_level)
    )


def _level_read_chart(
    seen: SeenReads,
    preset: Preset,
    latest: Verdict | None,
    scaled: bool,
) -> ChartSpec:
    """`read = "level"`: the metric itself at each probe, against the bounds."""
    spec = preset.verdict
    unscaled = scaled and (latest is None or latest.scaled is None)
    better = "lower" if spec.lower_is_better else "higher"
    pad = spec.endpoint_step * 0.05
    return ChartSpec(
        f"{spec.metric}(s), the level read ({better} is better)",
        "step",
        spec.metric,
        (_read_curve(f"this run {spec.metric}", _read_points(seen), seen),),
        _bound_lines(spec, _rule_drawn(latest, scaled)),
        (),
        (0.0 - pad, spec.endpoint_step + pad),
        NO_SCALE if unscaled else "",
    )
