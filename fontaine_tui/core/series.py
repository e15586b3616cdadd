"""What the console draws, as plain data: chart specs, probe rows, progress. No UI here.

The numbers come from `records` (the columns) and `verdict` (deltas, bounds, scale); this
module only arranges them. One chart spec feeds both the terminal chart and the PNG export.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fontaine_tui.core.presets import Preset
from fontaine_tui.core.report import signed
from fontaine_tui.core.store import RunStore
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict import Verdict

MEDIAN_WINDOW = 100  # recent steps in the s/step median
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
class ChartSpec:
    title: str
    xlabel: str
    ylabel: str
    curves: tuple[Curve, ...] = ()
    hlines: tuple[HLine, ...] = ()
    marks: tuple[Mark, ...] = ()
    xlim: tuple[float, float] | None = None
    note: str = ""

    @property
    def points(self) -> int:
        return sum(len(c.xs) for c in self.curves)


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
    """Banked endpoint deltas, in this run's units when a scale factor is given."""
    x = float(preset.verdict.endpoint_step)
    marks = []
    for i, comp in enumerate(preset.comparators.values()):
        y = comp.delta * (scale if scale is not None else 1.0)
        unit = f" (x{scale:.3f})" if scale is not None else ""
        marks.append(Mark(x, y, f"{comp.name} {signed(y)}{unit} @ endpoint",
                          MARK_COLORS[i % len(MARK_COLORS)]))
    return tuple(marks)


def probes_chart(store: RunStore, preset: Preset, verdicts: Sequence[Verdict],
                 latest: Verdict | None, scaled: bool) -> ChartSpec:
    """delta(s) against banked endpoints and bounds; before the anchor, eval levels against
    the comparators' levels at their level step."""
    spec = preset.verdict
    anchor, endpoint = spec.anchor_step, spec.endpoint_step
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
    healthy = rule.healthy_max if rule is not None else spec.healthy_max
    drift = rule.drift_min if rule is not None else spec.drift_min
    use_scale = scale if scaled else None
    which = f"scale-adjusted x{scale:.3f}" if use_scale is not None else "raw"
    curve = Curve(f"this run delta({anchor}->s)", tuple(p[0] for p in pts),
                  tuple(p[1] for p in pts), "cyan", points=len(pts) < 2)
    hlines = (HLine(healthy, f"healthy <= {signed(healthy)}", "green"),
              HLine(drift, f"same-drift >= {signed(drift)}", "red"))
    return ChartSpec(f"delta(s) = {spec.metric}(s) - {spec.metric}({anchor})  [{which}]",
                     "step", "delta", (curve,), hlines, comparator_marks(preset, use_scale),
                     xlim, note)


def _levels_chart(store: RunStore, preset: Preset, xlim: tuple[float, float]) -> ChartSpec:
    probes = [store.probes[s] for s in store.probe_steps()]
    metric = preset.verdict.metric
    curves = (
        Curve(f"this run {metric}", tuple(float(p.step) for p in probes),
              tuple(getattr(p, metric) for p in probes), "cyan", points=True),
        Curve("this run train_chunk_mae", tuple(float(p.step) for p in probes),
              tuple(p.train_chunk_mae for p in probes), "blue", points=True),
    )
    marks = []
    for comp in preset.comparators.values():
        if comp.level_step and math.isfinite(comp.eval_level):
            marks.append(Mark(float(comp.level_step), comp.eval_level,
                              f"{comp.name} eval {comp.eval_level:.4f} @ {comp.level_step}",
                              "red", align="left"))
    return ChartSpec(f"eval levels before the anchor probe (step {preset.verdict.anchor_step})",
                     "step", metric, curves, (), tuple(marks), xlim,
                     "deltas start at the anchor probe")


@dataclass(frozen=True, slots=True)
class ProbeRow:
    step: int
    eval_mae: float
    delta: float | None
    train_mae: float
    train_delta: float | None
    ar_ce: float
    breakdown: Mapping[str, float] = field(default_factory=dict)


def probe_rows(store: RunStore, verdicts: Sequence[Verdict]) -> list[ProbeRow]:
    """One row per probe; deltas are those the verdict computed when read at that step."""
    by_step = {v.read_step: v for v in verdicts}
    rows = []
    for s in store.probe_steps():
        p = store.probes[s]
        v = by_step.get(s)
        train_delta = v.corroboration.get("train_delta") if v is not None else None
        rows.append(ProbeRow(s, p.eval_chunk_mae, v.delta if v is not None else None,
                             p.train_chunk_mae,
                             train_delta if isinstance(train_delta, float) else None,
                             p.eval_ar_ce, p.breakdown))
    return rows


@dataclass(frozen=True, slots=True)
class Progress:
    step: int
    total: int
    last_step_s: float | None
    median_step_s: float | None
    eta_s: float | None
    gpu_hours: float | None
    gpu_hours_gate: float | None
    world_size: int
    data_frac: float | None  # share of recent step time spent waiting for data


def _finite(values: Sequence[float]) -> list[float]:
    return [v for v in values if math.isfinite(v)]


def progress(store: RunStore, preset: Preset) -> Progress:
    """Step, pace and ETA. `gpu_hours` is left None here: the console fills it in from the
    gate rule in core.warnings, so the header and the gate warning count the same hours."""
    total = int(preset.recipe.get("steps", 0) or 0)
    step = store.last_step
    recent = _finite(store.columns["step_s"][-MEDIAN_WINDOW:])
    last = recent[-1] if recent else None
    median = statistics.median(recent) if recent else None
    eta = max(0, total - step) * median if median is not None else None
    world = next((m.world_size for m in reversed(store.metas) if m.world_size), 1)
    gate = preset.gates.get("gpu_hours")
    gate = float(gate) if isinstance(gate, (int, float)) and math.isfinite(gate) else None
    data = _finite(store.columns["data_s"][-MEDIAN_WINDOW:])
    frac = sum(data) / sum(recent) if data and recent and sum(recent) > 0 else None
    return Progress(step, total, last, median, eta, None, gate, world, frac)


def duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "—"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s"


def gpu_hours_text(p: Progress) -> str:
    """Used / gate, e.g. `GPU-h 3.20/12`; `GPU-h —/12 (no GPU)` when the run holds none."""
    gate = f"/{p.gpu_hours_gate:g}" if p.gpu_hours_gate is not None else ""
    if p.gpu_hours is None:
        return f"GPU-h —{gate} (no GPU)"
    return f"GPU-h {p.gpu_hours:.2f}{gate}"


def pace_text(p: Progress) -> str:
    def s(x: float | None) -> str:
        return "—" if x is None or not math.isfinite(x) else f"{x:.2f}s"

    return f"{s(p.last_step_s)}/step (med {s(p.median_step_s)})"


def run_status(kind: str, exit_code: int | str | None, has_records: bool, ended: bool) -> str:
    """launching / running / exited N / attached / replay (what the header says)."""
    if kind == "launch":
        if exit_code is not None:
            return f"exited {exit_code}"
        return "running" if has_records else "launching"
    if kind == "replay":
        return "replay (ended)" if ended else "replay"
    return "attached (ended)" if ended else "attached"




@dataclass(frozen=True, slots=True)
class RunEvent:
    """A line of the run's story for the monitor: checkpoints, starts, resumes (with the
    probes of the abandoned timeline they superseded), ends, errors, rotations."""

    line: int  # where in the log (the store's numbering), for ordering
    step: int | None
    kind: str  # "checkpoint" | "start" | "resume" | "end" | "error" | "segment" | other event
    text: str


def run_events(store: RunStore, limit: int = 6) -> list[RunEvent]:
    """The last `limit` of them, oldest first; texts are literal (from the log)."""
    out = [RunEvent(c.line, c.step, "checkpoint", f"checkpoint {literal(c.path)}")
           for c in store.checkpoints]
    for e in store.events:
        text = f"{literal(e.event)}: {literal(e.detail)}" if e.detail else literal(e.event)
        if e.event == "resume":
            gone = sorted(p.step for p in store.superseded if p.step > e.step and p.line < e.line)
            if gone:
                text += f" (superseded probe{'s' if len(gone) > 1 else ''} " \
                        f"{', '.join(map(str, gone))}; the later ones count)"
        out.append(RunEvent(e.line, e.step, e.event, text))
    for g in store.segments:
        out.append(RunEvent(g.first_line, None, "segment",
                            f"reading {literal(g.name)}" + (f" ({literal(g.why)})" if g.why else "")))
    out.sort(key=lambda r: r.line)
    return out[-limit:]




def evidence_lines(store: RunStore) -> tuple[str, ...]:
    """What the log got wrong, for the monitor: out-of-order records (not applied),
    conflicting probes, notices such as a meta record of another run. Literal text."""
    out = []
    if store.out_of_order_count:
        first = store.out_of_order[0]
        out.append(f"{store.out_of_order_count} record(s) out of order, not applied (first: "
                   f"{store.where(first.line)}, {first.why})")
    for c in store.conflicts[:3]:
        out.append(f"conflicting probes for step {c.step}: {store.where(c.first.line)} and "
                   f"{store.where(c.second.line)} (no resume between them)")
    out += store.notices[:3]
    return tuple(literal(line) for line in out)
