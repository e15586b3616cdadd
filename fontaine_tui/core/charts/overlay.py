"""The overlay charts: several runs' train losses and probe reads, one colour each.

Each run's train loss is smoothed as the monitor's loss chart smooths it (loss.py's
debiased EMA). Each run's read at its probes is drawn as the probes chart draws one run's, from
what the evidence gate lets a surface see of it (core/verdict/seen.py's `SeenReads`): a run
whose read is hidden has none to draw.
The rule's bounds are drawn only when every run is held to the same rule; when they differ,
the note says each run's and none is drawn, so no run is read against another's bounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fontaine_tui.core.charts.chart import ChartSpec, Curve, HLine
from fontaine_tui.core.charts.loss import ema
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.verdict.seen import SeenReads
from fontaine_tui.core.verdict.text import signed


@dataclass(frozen=True, slots=True)
class OverlayRun:
    """One run as the overlay draws it: its name and state, colour, store and reads.

    `store` gives the train losses; the reads come from `seen` alone (the evidence gate's)."""

    name: str
    state: str  # running, finished, not answering ...
    color: str
    store: RunStore
    preset: Preset  # the run's frozen preset once its prereg.json is read
    seen: SeenReads  # its probes and reads: none while its read is hidden
    marker: str = ""  # its lines' marker where its colour is drawn again ("" the chart's own)

    @property
    def blinded(self) -> bool:
        return self.seen.hidden

    @property
    def label(self) -> str:
        return f"{self.name} ({self.state})"

    @property
    def read_words(self) -> str:
        """Its latest read and where, or why there is none to show."""
        if self.blinded:
            return "read blinded"
        latest = self.seen.verdicts[-1] if self.seen.verdicts else None
        if latest is None or latest.read_step is None:
            return "no read yet"
        return f"read {signed(latest.delta)} @ {latest.read_step}"


def train_column(store: RunStore) -> str:
    """The train loss the overlay draws: the total `loss`, or the AR CE when none is logged."""
    cols = store.columns
    if store.steps and not math.isfinite(cols["loss"][-1]) and math.isfinite(cols["ar_ce"][-1]):
        return "ar_ce"
    return "loss"


def overlay_losses(runs: Sequence[OverlayRun], smoothing: float) -> ChartSpec:
    """Every run's train loss, smoothed by `smoothing` (an EMA factor; 0 draws it raw)."""
    curves = []
    for run in runs:
        st = run.store
        name = train_column(st)
        ys = ema(st, name, smoothing) if smoothing > 0 else st.columns[name]
        curves.append(Curve(run.label, st.steps, ys, run.color, marker=run.marker))
    smooth = f"EMA {smoothing:g}, debiased" if smoothing > 0 else "no smoothing"
    return ChartSpec(f"train loss, {len(runs)} runs  [{smooth}]", "step", "loss", tuple(curves))


def rule_words(preset: Preset) -> str:
    """A run's rule in a few words: what is read, and its two bounds."""
    spec = preset.verdict
    h_op, d_op = ("<=", ">=") if spec.lower_is_better else (">=", "<=")
    what = spec.metric if spec.read == "level" else f"delta({spec.anchor_step}->s) {spec.metric}"
    return f"{what}, healthy {h_op} {signed(spec.healthy)}, drift {d_op} {signed(spec.drift)}"


def _rule_key(preset: Preset) -> tuple[object, ...]:
    spec = preset.verdict
    return (spec.metric, spec.read, spec.anchor_step, spec.direction, spec.healthy, spec.drift)


def shared_bounds(runs: Sequence[OverlayRun]) -> tuple[tuple[HLine, ...], str]:
    """The bounds to draw and a note.

    The bounds are drawn only when every run is held to the same rule (metric, read, anchor,
    direction, bounds). Otherwise none are drawn and the note names each run's.
    """
    if not runs:
        return (), "no run pinned: space in the runs mode (r) pins one"
    rules = {_rule_key(r.preset) for r in runs}
    if len(rules) > 1:
        each = "; ".join(f"{r.name}: {rule_words(r.preset)}" for r in runs)
        return (), f"the runs' rules differ, no bounds drawn ({each})"
    spec = runs[0].preset.verdict
    h_op, d_op = ("<=", ">=") if spec.lower_is_better else (">=", "<=")
    lines = (
        HLine(spec.healthy, f"healthy {h_op} {signed(spec.healthy)}", "green"),
        HLine(spec.drift, f"same-drift {d_op} {signed(spec.drift)}", "red"),
    )
    return lines, f"every run's rule: {rule_words(runs[0].preset)} (raw units)"


def overlay_probes(runs: Sequence[OverlayRun]) -> ChartSpec:
    """Every run's read at each probe (a delta from its anchor, or a level).

    The bounds are those all the runs share (`shared_bounds`).
    """
    hidden = [run.name for run in runs if run.blinded]
    hlines, note = shared_bounds(runs)
    if hidden:
        note += f"; blinded, read not drawn: {', '.join(hidden)}"
    return ChartSpec(
        f"{_what_is_read(runs)} at each probe, {len(runs)} runs",
        "step",
        "read",
        tuple(_read_curve(run) for run in runs),
        hlines,
        (),
        _steps_shown(runs),
        note,
    )


def _read_curve(run: OverlayRun) -> Curve:
    """A run's read at each probe where it is a number (points while fewer than two)."""
    pts = [
        (float(v.read_step), v.delta)
        for v in run.seen.verdicts
        if v.read_step is not None and v.delta is not None and math.isfinite(v.delta)
    ]
    return Curve(
        run.label,
        tuple(x for x, _ in pts),
        tuple(y for _, y in pts),
        run.color,
        points=len(pts) < 2,
        marker=run.marker,
    )


def _steps_shown(runs: Sequence[OverlayRun]) -> tuple[float, float] | None:
    """The steps the runs' reads span, padded (None for no runs).

    From the earliest first read (an anchor, 0 for a level) to the latest endpoint."""
    ends: list[float] = []
    for run in runs:
        spec = run.preset.verdict
        ends += [float(spec.anchor_step if spec.read != "level" else 0), float(spec.endpoint_step)]
    if not ends:
        return None
    lo, hi = min(ends), max(ends)
    pad = (hi - lo) * 0.08 or 1.0
    return (lo - pad, hi + pad)


def _what_is_read(runs: Sequence[OverlayRun]) -> str:
    """What the runs read, in words: levels, deltas, or both (not one scale)."""
    reads = {r.preset.verdict.read for r in runs}
    if len(reads) > 1:
        return "the read (deltas and levels: not one scale)"
    return "the read (a level)" if reads == {"level"} else "the read (delta from the anchor)"
