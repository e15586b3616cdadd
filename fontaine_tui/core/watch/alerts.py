"""Warning rules: pure functions of what the log and the telemetry say.

Their thresholds come from the preset's [gates]. Each rule answers a RunWarning or None;
`run_rules` runs them all once (core/watch/alert_book.py keeps when each was first seen
across evaluations)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from fontaine_tui.core.charts.chart import Band
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import gate_of
from fontaine_tui.core.run.evidence import seen_probes
from fontaine_tui.core.run.exits import GATE_STOPS
from fontaine_tui.core.text import gib
from fontaine_tui.core.watch.stall import (
    RamReading,
    StateReading,
    diagnose,
    silence,
)

if TYPE_CHECKING:
    from fontaine_tui.core.run.exits import ExitInfo

SEVERITIES = ("info", "warn", "alert")
WINDOW = 10  # recent train records a rate is judged on
FIRST_POLL_RECORDS = 3  # the first report waits for this many train records (step 1 is slow)
LOSS_FIELDS = ("loss", "ar_ce", "flow_loss", "grad_norm")
FOREIGN_LOSS_FIELDS = ("loss",)  # the train loss the [source] maps (FieldMap.train)


@dataclass(frozen=True, slots=True)
class RunWarning:
    rule: str
    severity: str  # "info" | "warn" | "alert"
    since: float  # first seen (unix seconds)
    message: str
    numbers: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class RunContext:
    """What the rules need beyond the log and the one snapshot.

    That is the plan, the launch, and the WarningBook's short history of earlier snapshots."""

    steps: int  # recipe.steps
    launched_at: float | None  # unix seconds; None: the first meta record's time
    gpus_used: int  # GPUs the run holds; 0 on CPU
    envelopes: tuple[Band, ...] = ()  # the banked comparator groups' min-max envelopes
    metric: str = "eval_chunk_mae"  # how the rule reads this run, to compare with them
    anchor_step: int = 0
    read: str = "delta"
    eval_every: int = 0  # recipe's; 0: unknown
    save_every: int = 0
    ram_history: tuple[RamReading, ...] = ()  # (time, available, total), oldest first
    state_history: tuple[StateReading, ...] = ()  # (time, stall.state_key), oldest first
    # a run another trainer writes ([source]): no engine column (ar_ce, data_s), file
    # (engine.out.log) or command applies to it; its loss is the one the source maps
    foreign: bool = False
    finished: bool = False  # the run is over by its log: the final read is in
    # a foreign source may still hold its last step's values (it waits for quiet before a
    # step counts as whole): its silence is not judged until that step is out
    settling: bool = False
    # the rule's read is hidden (core/verdict/blind.py): no probe's value reaches a rule
    blinded: bool = False
    # the metrics the verdict's rules read: the trainer's words naming one are hidden while
    # `blinded` (core/verdict/blindwords.py), as its words at an early exit
    rule_metrics: tuple[str, ...] = ()


def since_text(ts: object) -> str:
    """A warning's first sighting as the console shows it: UTC clock time, or the text given."""
    if isinstance(ts, (int, float)):
        return time.strftime("%H:%M:%S", time.gmtime(ts)) + "Z" if math.isfinite(ts) else "?"
    return str(ts or "")


def warning_text(w: RunWarning) -> str:
    """A warning's words after its severity: the rule, since when, the message.

    The console's warnings panel and every plain report say a warning in these words. A rule
    named `name:key` (one trainer alert's, core/watch/traineralerts.py) is said as `name`.
    """
    return f"{w.rule.partition(':')[0]} since {since_text(w.since)}: {w.message}"


def _w(rule: str, severity: str, now: float, message: str, **numbers: float) -> RunWarning:
    return RunWarning(rule, severity, now, message, MappingProxyType(numbers))


def _recent(store: RunStore, name: str, n: int = WINDOW) -> list[float]:
    return [x for x in store.columns[name][-n:] if math.isfinite(x)]


def _fmt_s(x: float) -> str:
    return f"{x:.3g} s"


# -- the rules -----------------------------------------------------------------------------


def first_poll(
    store: RunStore,
    telemetry: TelemetrySnapshot | None,
    gates: Mapping[str, object],
    now: float,
    process: ExitInfo | None,
    ctx: RunContext,
) -> RunWarning | None:
    """The first poll once training runs: util, s/step and free RAM."""
    n = len(store.steps)
    if n < FIRST_POLL_RECORDS:
        return None
    numbers: dict[str, float] = {"records": float(n)}
    parts = []
    rates = [
        x for x in store.columns["step_s"][1 : FIRST_POLL_RECORDS + WINDOW] if math.isfinite(x)
    ]  # a foreign log without times has none
    if rates:
        numbers["step_s"] = step_s = statistics.median(rates)
        parts.append(f"s/step {_fmt_s(step_s)}")
    host_parts, host_numbers = _first_host_reading(telemetry)
    parts += host_parts
    numbers.update(host_numbers)
    return _w("first-poll", "info", now, "first poll: " + ", ".join(parts), **numbers)


def _first_host_reading(
    telemetry: TelemetrySnapshot | None,
) -> tuple[list[str], dict[str, float]]:
    """The first poll's GPU util (or why none) and free RAM: its words and its numbers."""
    if telemetry is None:
        return [], {}
    parts, numbers = [], {}
    util = telemetry.gpu_util()
    if util is not None:
        numbers["gpu_util_pct"] = util
        parts.append(f"GPU util {util:.0f} %")
    else:
        parts.append(telemetry.gpu_status)
    if telemetry.ram is not None:
        numbers["ram_available"] = float(telemetry.ram.available)
        parts.append(
            f"RAM free {gib(telemetry.ram.available)} of {gib(telemetry.ram.total, unit=False)}"
        )
    return parts, numbers


def data_wait(store: RunStore) -> float | None:
    """The share of the last WINDOW steps' time spent waiting for data.

    The first step after each start or resume is left out: its wait is the loader's workers
    starting, not starvation. None before a full window of WINDOW other steps, or when the log
    has no data wait (another trainer's log: the data wait is the engine's own column)."""
    if len(store.steps) <= WINDOW or not store.has_columns:
        return None
    rows = _settled_rows(store)
    pairs = _finite_waits(store, rows)
    step = sum(t for _, t in pairs)
    return sum(d for d, _ in pairs) / step if len(rows) == WINDOW and step > 0 else None


def _settled_rows(store: RunStore) -> list[int]:
    """The rows of the last WINDOW steps that are not the first after a start or resume.

    They are looked for among the last 2 x WINDOW only: a look costs the same however many
    starts the log holds."""
    steps, n = store.steps, len(store.steps)
    warm, first = store.warm_steps, steps[0]
    rows = range(max(0, n - 2 * WINDOW), n)
    return [i for i in rows if steps[i] not in warm and steps[i] != first][-WINDOW:]


def _finite_waits(store: RunStore, rows: list[int]) -> list[tuple[float, float]]:
    """(data wait, step time) of each row, where both are finite."""
    pairs = [(store.columns["data_s"][i], store.columns["step_s"][i]) for i in rows]
    return [(d, t) for d, t in pairs if math.isfinite(d) and math.isfinite(t)]


def data_starved(store: RunStore, gates: Mapping[str, object]) -> tuple[float, float] | None:
    """The (data-wait share, gate) when the share is over starvation_data_frac, else None.

    This is the starvation rule's test, which the console's telemetry panel also shows."""
    frac, gate = data_wait(store), gate_of(gates, "starvation_data_frac")
    return (frac, gate) if frac is not None and gate is not None and frac > gate else None


def starvation(
    store: RunStore,
    telemetry: TelemetrySnapshot | None,
    gates: Mapping[str, object],
    now: float,
    process: ExitInfo | None,
    ctx: RunContext,
) -> RunWarning | None:
    """Warn of input starvation.

    That is waiting for data over starvation_data_frac of the step, or GPU util under
    gpu_util_min while training."""
    starved = data_starved(store, gates)
    if starved is not None:
        frac, frac_gate = starved
        return _w(
            "starvation",
            "warn",
            now,
            f"input starvation: waiting for data {frac:.0%} of step time over the "
            f"last {min(WINDOW, len(store.steps))} steps (gate {frac_gate:.0%})",
            data_frac=frac,
            gate=frac_gate,
        )
    util_gate = gate_of(gates, "gpu_util_min")
    # a foreign run's trainer need not be what uses this host's GPU, nor is its data wait
    # known: the GPU says nothing about its input
    util = telemetry.gpu_util() if telemetry and not ctx.foreign else None
    if (
        util is not None
        and util_gate is not None
        and process is None
        and store.steps
        and util < util_gate
    ):
        return _w(
            "starvation",
            "warn",
            now,
            f"input starvation: GPU util {util:.0f} % while training (gate {util_gate:.0f} %)",
            gpu_util_pct=util,
            gate=util_gate,
        )
    return None


def ram_pressure(
    store: RunStore,
    telemetry: TelemetrySnapshot | None,
    gates: Mapping[str, object],
    now: float,
    process: ExitInfo | None,
    ctx: RunContext,
) -> RunWarning | None:
    if telemetry is None or telemetry.ram is None or telemetry.ram.total <= 0:
        return None
    frac = telemetry.ram.available / telemetry.ram.total
    alert, warn = gate_of(gates, "ram_alert_frac"), gate_of(gates, "ram_warn_frac")
    for severity, gate in (("alert", alert), ("warn", warn)):
        if gate is not None and frac < gate:
            return _w(
                "ram",
                severity,
                now,
                f"RAM pressure: {frac:.1%} available "
                f"({gib(telemetry.ram.available, 2)} of "
                f"{gib(telemetry.ram.total, unit=False)}, {telemetry.ram.source}); "
                f"{severity} under {gate:.0%}",
                available_frac=frac,
                gate=gate,
                available=float(telemetry.ram.available),
            )
    return None


def slow_steps(
    store: RunStore,
    telemetry: TelemetrySnapshot | None,
    gates: Mapping[str, object],
    now: float,
    process: ExitInfo | None,
    ctx: RunContext,
) -> RunWarning | None:
    """Median s/step over the recent window above the preset's estimate."""
    high = gate_of(gates, "step_s_estimate_max")
    recent = _recent(store, "step_s")
    if high is None or len(recent) < FIRST_POLL_RECORDS:
        return None
    median = statistics.median(recent)
    if median <= high:
        return None
    low = gate_of(gates, "step_s_estimate_min")
    span = f"{_fmt_s(low)}–{_fmt_s(high)}" if low is not None else f"≤ {_fmt_s(high)}"
    hardware = str(gates.get("step_s_estimate_hardware") or "the reference hardware")
    return _w(
        "slow-steps",
        "warn",
        now,
        f"s/step {_fmt_s(median)} is above the estimate {span}; the estimate is for "
        f"{hardware}, not necessarily this host",
        step_s=median,
        estimate_max=high,
    )


def gpu_hours_used(
    store: RunStore, now: float, process: ExitInfo | None, ctx: RunContext
) -> float | None:
    """GPU-hours = wall hours since launch x GPUs held; None on CPU or before a start."""
    start = (
        ctx.launched_at
        if ctx.launched_at is not None
        else (store.metas[0].time if store.metas else None)
    )
    if ctx.gpus_used <= 0 or start is None:
        return None
    end = now
    if (process is not None or store.ended_at is not None) and len(store.steps):
        # the run is over (its process exited, or its log ended): stop the clock
        end = store.columns["time"][-1]
    return max(0.0, end - start) / 3600.0 * ctx.gpus_used


def gpu_hours(
    store: RunStore,
    telemetry: TelemetrySnapshot | None,
    gates: Mapping[str, object],
    now: float,
    process: ExitInfo | None,
    ctx: RunContext,
) -> RunWarning | None:
    """GPU-hours against the gate: warn past its warn fraction, alert at the gate."""
    gate = gate_of(gates, "gpu_hours")
    used = gpu_hours_used(store, now, process, ctx)
    if gate is None or used is None:
        return None
    warn = gate_of(gates, "gpu_hours_warn_frac") or 0.8
    numbers = {"gpu_hours": used, "gate": gate, "gpus": float(ctx.gpus_used)}
    eps = 1e-9 * gate  # 0.8 x 12 is 9.600000000000001: at the bound counts
    if used >= gate - eps:
        return _w(
            "gpu-hours",
            "alert",
            now,
            f"GPU-hours {used:.2f} reached the gate {gate:g} ({ctx.gpus_used} GPU(s))",
            **numbers,
        )
    if used >= warn * gate - eps:
        return _w(
            "gpu-hours",
            "warn",
            now,
            f"GPU-hours {used:.2f} past {warn:.0%} of the gate {gate:g} ({ctx.gpus_used} GPU(s))",
            **numbers,
        )
    return None


def stall(
    store: RunStore,
    telemetry: TelemetrySnapshot | None,
    gates: Mapping[str, object],
    now: float,
    process: ExitInfo | None,
    ctx: RunContext,
) -> RunWarning | None:
    """Warn of a stall: no record for stall_factor x the median interval while running.

    The interval is at least stall_min_s. The warning is one line of what most likely happens
    and where to look (stall.py has the precedence). A run whose log ended (an `end` or `error`
    event, no resume after it), or a run with its final read in (`ctx.finished`), is over:
    quiet, not stalled."""
    if process is not None or logged_over(store) or ctx.finished or ctx.settling:
        return None
    quiet = silence(store, gates, now, ctx.eval_every, ctx.save_every, ctx.steps)
    if quiet is None:
        return None
    # a foreign run's process is ours to sample (and its output engine.out.log) only when
    # this console launched it
    ours = not ctx.foreign or (telemetry is not None and telemetry.engine_pid is not None)
    d = diagnose(quiet, telemetry, ctx.ram_history, ctx.state_history, ctx.gpus_used, engine=ours)
    return _w("stall", d.severity, now, d.message, **d.numbers)


def logged_over(store: RunStore) -> bool:
    """Whether the log says the run is over.

    It is over when its last event is an `end` or an `error` (a resume or start after one is a
    later event)."""
    return (
        store.ended_at is not None
        or bool(store.events)
        and store.events[-1].event in ("end", "error")
    )


def nonfinite_loss(
    store: RunStore,
    telemetry: TelemetrySnapshot | None,
    gates: Mapping[str, object],
    now: float,
    process: ExitInfo | None,
    ctx: RunContext,
) -> RunWarning | None:
    """Warn of a non-finite loss in the recent records.

    The losses are the engine's, or a foreign run's one loss (the [source]'s train loss; the
    engine's columns are not there to read)."""
    n = len(store.steps)
    fields = FOREIGN_LOSS_FIELDS if ctx.foreign else LOSS_FIELDS
    for i in range(max(0, n - WINDOW), n):
        for name in fields:
            x = store.columns[name][i]
            if not math.isfinite(x):
                return _w(
                    "nan-loss",
                    "alert",
                    now,
                    f"{name} is {x!r} at step {store.steps[i]}",
                    step=float(store.steps[i]),
                )
    return None


def exited_early(
    store: RunStore,
    telemetry: TelemetrySnapshot | None,
    gates: Mapping[str, object],
    now: float,
    process: ExitInfo | None,
    ctx: RunContext,
) -> RunWarning | None:
    """The engine is gone before recipe.steps: an incident, with the last step."""
    if process is None:
        return None
    last = max(process.last_step, store.last_step)
    if last >= ctx.steps and process.status == "finished":
        return None
    severity = "warn" if process.status == "stopped" else "alert"
    resume = "" if ctx.foreign else ". Continue it with `fontaine-tui launch PRESET --resume`"
    if process.cause in GATE_STOPS:  # the stop the preset pre-registered (stop_on_lock)
        severity, resume = "info", ""
    return _w(
        "exited-early",
        severity,
        now,
        f"run ended early at step {last} of {ctx.steps}: "
        f"{process.describe(ctx.rule_metrics, ctx.blinded)}{resume}",
        last_step=float(last),
        steps=float(ctx.steps),
        checkpoint_step=float(-1 if process.checkpoint_step is None else process.checkpoint_step),
    )


def left_envelope(
    store: RunStore,
    telemetry: TelemetrySnapshot | None,
    gates: Mapping[str, object],
    now: float,
    process: ExitInfo | None,
    ctx: RunContext,
) -> RunWarning | None:
    """Warn when the latest probe's read lies outside a group's envelope of banked comparators.

    The envelope is taken at the same step; it is the one drawn on the probes chart."""
    read = _latest_read(store, ctx)
    if not ctx.envelopes or read is None:
        return None
    step, x = read
    for band in ctx.envelopes:
        bounds = _outside(band, step, x)
        if bounds is not None:
            lo, hi = bounds
            side = "below" if x < lo else "above"
            return _w(
                "left-envelope",
                "warn",
                now,
                f"the run left the {band.label} at step {step}: {ctx.read} {x:+.4f} is "
                f"{side} [{lo:+.4f}, {hi:+.4f}]",
                step=float(step),
                value=x,
            )
    return None


def _latest_read(store: RunStore, ctx: RunContext) -> tuple[int, float] | None:
    """(step, read) of the latest probe a surface may show, as the rule reads it.

    None without a probe, for a delta read before the anchor (or without the anchor's probe),
    and for a read that is not finite."""
    probes = seen_probes(store, ctx.blinded)
    if not probes:
        return None
    step = max(probes)
    base = probes.get(ctx.anchor_step) if ctx.read == "delta" else None
    if ctx.read == "delta" and (base is None or step < ctx.anchor_step):
        return None
    x = probes[step].value(ctx.metric) - (base.value(ctx.metric) if base is not None else 0.0)
    return (step, x) if math.isfinite(x) else None


def _outside(band: Band, step: int, x: float) -> tuple[float, float] | None:
    """The band's (lo, hi) at `step` where `x` lies outside them.

    None where it lies inside, or where the band has no point at that step."""
    if float(step) not in band.xs:
        return None
    i = list(band.xs).index(float(step))
    lo, hi = band.lo[i], band.hi[i]
    return (lo, hi) if x < lo or x > hi else None


Rule = Callable[..., RunWarning | None]
RULES: tuple[Rule, ...] = (
    first_poll,
    starvation,
    ram_pressure,
    slow_steps,
    gpu_hours,
    stall,
    nonfinite_loss,
    exited_early,
    left_envelope,
)


def run_rules(
    store: RunStore,
    telemetry: TelemetrySnapshot | None,
    gates: Mapping[str, object],
    now: float,
    process: ExitInfo | None,
    ctx: RunContext,
) -> list[RunWarning]:
    """Every rule once, most severe first (`since` is `now`: a WarningBook sets it)."""
    out = [w for rule in RULES if (w := rule(store, telemetry, gates, now, process, ctx))]
    return sorted(out, key=lambda w: -SEVERITIES.index(w.severity))
