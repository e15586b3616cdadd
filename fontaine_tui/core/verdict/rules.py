"""The read rules of a pre-registration: raw, scale-adjusted, combined. Pure functions."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, TypedDict

from fontaine_tui.core.log.records import Probe
from fontaine_tui.core.log.store import Conflict, RunStore
from fontaine_tui.core.preset.checks import AMBIGUOUS, BY_INSTRUMENT, UNDECIDABLE
from fontaine_tui.core.preset.record import Amendment, Preset
from fontaine_tui.core.preset.rule import RuleShape, VerdictSpec
from fontaine_tui.core.verdict.amendments import (
    LogClock,
    applied_scales,
    check_amendments,
    declared_deltas,
    endpoint_in_force,
    first_probe_seen,
)
from fontaine_tui.core.verdict.bounds import combine, read_rule, tolerance
from fontaine_tui.core.verdict.curves import banked_curve, banked_curves
from fontaine_tui.core.verdict.lock import Lock, decision_lock, max_probe_change, probe_cadence
from fontaine_tui.core.verdict.prereg import provenance_changes
from fontaine_tui.core.verdict.readpoint import datasets_read, off_cadence, probes_at, read_point
from fontaine_tui.core.verdict.record import (
    RuleRead,
    Scale,
    SecondaryRead,
    Verdict,
    json_num,
)
from fontaine_tui.core.verdict.seednoise import seed_noise
from fontaine_tui.core.verdict.stopped import stopped_early, stopped_verdict

if TYPE_CHECKING:
    from typing import Unpack  # 3.11+; annotations only, so 3.10 runs without it


def _lock(
    store: RunStore,
    preset: Preset,
    endpoint: int,
    read_step: int | None,
    raw: RuleRead | None,
    scaled: RuleRead | None,
) -> Lock | None:
    """The decision lock over the reads up to `read_step` (None without a primary read).

    It counts the probes left to `endpoint` (the endpoint in force) at the cadence of the probes
    seen, never more than the preset states."""
    spec = preset.verdict
    if read_step is None or raw is None:
        return None
    probes, metric = store.probes, spec.metric
    base, start = 0.0, 0  # a level read: from step 0, as it is
    if spec.read == "delta":  # from the anchor probe, less its value
        base, start = probes[spec.anchor_step].value(metric), spec.anchor_step
    points = [
        (s, probes[s].value(metric) - base) for s in store.probe_steps() if start <= s <= read_step
    ]
    bounds = [(raw.healthy, raw.drift), *([(scaled.healthy, scaled.drift)] if scaled else [])]
    stated, stated_from = preset.stated_every or (None, "")
    every, every_from = probe_cadence(store.probe_steps(), stated, stated_from)
    change, source = max_probe_change(spec, every, banked_curves(preset))
    lock = decision_lock(
        points, bounds, spec.lower_is_better, endpoint, every, change, source, every_from
    )
    return replace(lock, stops=preset.stops_on_lock)


class _ReadFields(TypedDict, total=False):
    """How far a verdict read got: compute_verdict's result() keywords, absent as None."""

    anchor_value: float | None
    read_value: float | None
    delta: float | None
    raw: RuleRead | None
    scaled: RuleRead | None
    scale: Scale | None
    corroboration: Mapping[str, object]
    precision: tuple[int, float]


def _scale(
    amendment: Amendment, preset: Preset, probes: Mapping[int, Probe]
) -> tuple[Scale | None, str]:
    if math.isfinite(amendment.factor):
        return Scale(
            amendment.factor,
            None,
            None,
            None,
            None,
            amendment.id,
            f"fixed factor {amendment.factor:g} (amendment {amendment.id})",
        ), ""
    comp = preset.comparators[amendment.comparator]
    probe = probes.get(amendment.from_step)
    metric = preset.verdict.metric
    if probe is None:
        return None, f"no probe at step {amendment.from_step} to compute the scale factor"
    level = probe.value(metric)
    if not math.isfinite(level):
        what = probe.why_not(metric) or repr(level)
        return None, f"{metric} at step {amendment.from_step} is {what}: no scale factor"
    if level <= 0:  # an error level is positive: a ratio to a non-positive one is no scale
        return None, (
            f"{metric} at step {amendment.from_step} is {level!r}, not positive: no scale factor"
        )
    value = level / comp.eval_level
    provenance = (
        f"{metric}({amendment.from_step}) / {comp.name} level at {comp.level_step} = "
        f"{level:.4f} / {comp.eval_level:.4f} = {value:.3f} (amendment {amendment.id})"
    )
    return Scale(
        value,
        level,
        comp.eval_level,
        amendment.from_step,
        comp.name,
        amendment.id,
        provenance,
        _ar_ce_evidence(preset, comp.name, probe),
    ), ""


def _ar_ce_evidence(preset: Preset, name: str, probe: Probe) -> str:
    """This run's eval AR CE at the scale's step beside the banked comparator's.

    Given only when the bank holds it."""
    from fontaine_tui.core.verdict.curves import banked_value

    theirs = banked_value(preset.comparators[name], probe.step, "eval_ar_ce")
    ours = probe.value("eval_ar_ce")
    if not (math.isfinite(theirs) and math.isfinite(ours)):
        return ""
    return (
        f"eval AR CE at step {probe.step}: this run {ours:.4f}, {name} {theirs:.4f} "
        f"(ratio {ours / theirs:.3f}): the model tracks it while the units differ"
    )


def _corroboration(
    probes: Mapping[int, Probe], anchor: int, read: int, metric: str
) -> dict[str, object]:
    base = probes[anchor]
    window = [probes[s] for s in sorted(probes) if anchor <= s <= read]
    deltas = {str(p.step): p.value(metric) - base.value(metric) for p in window}
    return {
        "train_delta": _train_delta(base, probes[read]),
        "monotone_rise": _monotone_rise([p.value(metric) for p in window]),
        "eval_deltas": {k: json_num(v) for k, v in deltas.items()},
    }


def _monotone_rise(values: list[float]) -> bool | None:
    """Whether each value is above the one before (None for fewer than two, or one not finite)."""
    if len(values) < 2 or not all(math.isfinite(v) for v in values):
        return None
    return all(b > a for a, b in zip(values, values[1:], strict=False))


def _train_delta(base: Probe, end: Probe) -> float | None:
    """The train-slice delta from `base` to `end`.

    None where neither logs a train MAE (another trainer's run): there is none to show."""
    if not (base.has("train_chunk_mae") or end.has("train_chunk_mae")):
        return None
    return end.train_chunk_mae - base.train_chunk_mae


def conflict_reason(store: RunStore, c: Conflict, metric: str) -> str:
    """Two probes for one step without a resume between them, in words."""
    first, second = c.first, c.second
    a, b = first.value(metric), second.value(metric)

    def at(p: Probe) -> str:  # a foreign source's records have no line number
        return f" ({store.where(p.line)})" if p.line > 0 else ""

    what = (
        f"{metric} {a!r}{at(first)} and {b!r}{at(second)}"
        if repr(a) != repr(b)
        else f"the same {metric} but other values"
        + (f" ({store.where(first.line)} and {store.where(second.line)})" if first.line > 0 else "")
    )
    return f"two different probes for step {c.step} with no resume between them: {what}"


def compute_verdict(
    store: RunStore,
    preset: Preset,
    at_step: int | None = None,
    amendments: Iterable[Amendment] = (),
    provenance: Mapping[str, object] | None = None,
    ended: int | None = None,
    clock: LogClock | None = None,
) -> Verdict:
    """Read the run at `at_step` (default: the endpoint if probed, else the latest probe).

    `amendments`: the run folder's ledger's, checked like the preset's own, and against the
    log's own clock (`clock`, the store's when not given). A stop_on_lock run ended before its
    endpoint (its log's end, else `ended`) reads its locked decision.
    """
    amendments = tuple(amendments)
    if clock is None and any(a.source == "ledger" for a in amendments):
        clock = log_clock(store, preset)
    v = _compute(store, preset, at_step, amendments, provenance, None, clock)
    end = stopped_early(store, preset, v, at_step, ended)
    if end is None:
        return v
    early = _compute(store, preset, None, amendments, provenance, end, clock)
    return stopped_verdict(v, early, end, store, preset)


def log_clock(store: RunStore, preset: Preset) -> LogClock:
    """The log's own clock: when it logged each probe, a resume's superseded ones too.

    The engine's log (`preset` reads no other trainer's) requires each probe's time."""
    return LogClock.of(
        [*store.probes.values(), *store.superseded], time_required=not preset.foreign
    )


def _compute(
    store: RunStore,
    preset: Preset,
    at_step: int | None,
    amendments: Iterable[Amendment],
    provenance: Mapping[str, object] | None,
    stopped: int | None,
    clock: LogClock | None = None,
) -> Verdict:
    """The read of compute_verdict; with `stopped`, final at the last probe up to that step."""
    spec = preset.verdict
    probes = store.probes
    every = [*preset.amendments, *amendments]
    checks = check_amendments(every, preset, clock, first_probe=first_probe_seen(store))
    applied = applied_scales(every, checks)
    anchor, metric = spec.anchor_step, spec.metric
    endpoint = endpoint_in_force(preset, every, checks)
    changed = provenance_changes(provenance, store.metas) if provenance else ()
    read_step, provisional, missing = _where_read(store, endpoint, at_step, stopped)

    def result(label: str, reason: str, **kw: Unpack[_ReadFields]) -> Verdict:
        primary = label
        second = tuple(_secondary(store, spec, r, read_step) for r in spec.secondary)
        if spec.combine == "all" and second:
            label, reason = _all_agree(label, reason, second)
        if provisional and at_step is None and (off := off_cadence(probes, endpoint)):
            reason = f"{reason}; {off}"
        factor = scale.value if (scale := kw.get("scale")) is not None else None
        return Verdict(
            verdict=label,
            provisional=provisional,
            read_step=read_step,
            anchor_step=anchor,
            endpoint_step=endpoint,
            metric=metric,
            anchor_value=kw.get("anchor_value"),
            read_value=kw.get("read_value"),
            delta=kw.get("delta"),
            raw=kw.get("raw"),
            scaled=kw.get("scaled"),
            scale=kw.get("scale"),
            amendments=tuple(checks),
            corroboration=kw.get("corroboration", {}),
            precision=kw.get("precision", (53, 0.0)),
            reason=reason,
            interpretation=preset.interpretation.get(label, ""),
            preset={"name": preset.name, "sha256": preset.sha256},
            counts=store.counts(),
            malformed_lines=tuple(m.line for m in store.malformed[:50]),
            malformed_at=tuple(store.where(m.line) for m in store.malformed[:50]),
            segments=tuple((g.name, g.first_line) for g in store.segments),
            out_of_order=tuple((store.where(o.line), o.why) for o in store.out_of_order[:50]),
            conflicts=tuple(conflict_reason(store, c, metric) for c in store.conflicts[:50]),
            notices=tuple(store.notices[:50]),
            odd_values=store.odd_values,
            read=spec.read,
            direction=spec.direction,
            provenance=dict(provenance or {}),
            provenance_changes=changed,
            provenance_log=tuple(
                {
                    "step": m.step,
                    "line": m.line,
                    "code": dict(m.code),
                    "data": dict(m.data),
                    "versions": dict(m.versions),
                }
                for m in store.metas
                if m.code or m.data
            ),
            secondary=second,
            declared_deltas=declared_deltas(every),
            combine=spec.combine,
            primary_label=primary,
            datasets=datasets_read(probes, spec, read_step),
            labels=dict(preset.labels),
            comparators=tuple(
                {
                    "name": c.name,
                    "delta": c.delta,
                    "where": c.where,
                    "bank": c.bank or None,
                    "group": c.group or None,
                    # the curve with the latest read only (a series stays linear)
                    "curve": ([[st, x] for st, x in banked_curve(preset, c)] or None)
                    if at_step is None
                    else None,
                }
                for c in preset.comparators.values()
            ),
            # the latest read only: a series of reads (verdict_series) would make it quadratic
            decision=(
                _lock(store, preset, endpoint, read_step, kw.get("raw"), kw.get("scaled"))
                if at_step is None
                else None
            ),
            seed_noise=seed_noise(preset, read_step, kw.get("delta"), factor),
        )

    if missing:
        return result(UNDECIDABLE, missing)
    if read_step is None:
        return result(UNDECIDABLE, "no probe in the log yet")
    if spec.read == "level":
        return _level_read(store, preset, read_step, applied, result)
    unread = _no_delta_read(probes, anchor, read_step)
    if unread:
        return result(UNDECIDABLE, unread)
    a_val = probes[anchor].value(metric)
    r_val = probes[read_step].value(metric)
    values: _ReadFields = {"anchor_value": a_val, "read_value": r_val}
    conflict = _conflict_at(store, [anchor, read_step, *_scale_steps(applied)])
    if conflict is not None:
        return result(UNDECIDABLE, conflict_reason(store, conflict, metric), **values)
    unread = _not_finite(probes, metric, (anchor, read_step))
    if unread:
        return result(UNDECIDABLE, unread, **values)
    extra: _ReadFields = {
        **values,
        "corroboration": _corroboration(probes, anchor, read_step, metric),
    }
    bits = min(probes[anchor].precision(metric), probes[read_step].precision(metric))
    return _judge(
        preset,
        r_val - a_val,
        read_step,
        applied,
        probes,
        extra,
        result,
        (bits, tolerance(bits, a_val, r_val)),
    )


def _where_read(
    store: RunStore, endpoint: int, at_step: int | None, stopped: int | None
) -> tuple[int | None, bool, str]:
    """Where the read is taken: read_point's (step, provisional, why there is no read).

    With `stopped`, final at the last probe up to that step."""
    if stopped is not None:
        return max(s for s in store.probes if s <= stopped), False, ""
    return read_point(store, endpoint, at_step)


def _no_delta_read(probes: Mapping[int, Probe], anchor: int, read_step: int) -> str:
    """Why a delta cannot be read from the anchor at `read_step` ("" where it can)."""
    if anchor not in probes:
        why = "no anchor probe yet" if read_step < anchor else "no anchor probe in the log"
        return f"{why} (step {anchor}); {probes_at(probes)}"
    if read_step < anchor:
        return f"read at step {read_step} precedes the anchor (step {anchor})"
    if read_step not in probes:
        return f"no probe at step {read_step}"
    return ""


def _scale_steps(applied: list[Amendment]) -> list[int]:
    """The step whose probe the scale in force is computed from ([] for none, or a fixed one)."""
    if applied and not math.isfinite(applied[0].factor):
        return [applied[0].from_step]
    return []


def _conflict_at(store: RunStore, used: list[int]) -> Conflict | None:
    """The first conflicting probe pair at a step the read uses."""
    return next((c for c in store.conflicts if c.step in used), None)


def _not_finite(probes: Mapping[int, Probe], metric: str, steps: Iterable[int]) -> str:
    """Why the first of `steps` whose `metric` is not a finite number fails ("" for none)."""
    for step in steps:
        value = probes[step].value(metric)
        if not math.isfinite(value):
            what = probes[step].why_not(metric) or repr(value)
            return f"{metric} at step {step} is {what}, not a finite number"
    return ""


class _Result(Protocol):
    def __call__(self, label: str, reason: str, **kw: Unpack[_ReadFields]) -> Verdict: ...


def _judge(
    preset: Preset,
    x: float,
    read_step: int,
    applied: list[Amendment],
    probes: Mapping[int, Probe],
    extra: _ReadFields,
    result: _Result,
    precision: tuple[int, float] = (53, 0.0),
) -> Verdict:
    """Hold the read `x` (a delta or a level) to its bounds and combine the two rules.

    The bounds are the raw ones and, with a scale amendment in force, the bounds x s.
    `precision`: the significand bits the source stored the read's numbers in, and how close to
    a bound is on it."""
    spec = preset.verdict
    lower = spec.lower_is_better
    tol = precision[1]

    def rule(name: str, s: float) -> RuleRead:
        return RuleRead(
            name,
            spec.healthy * s,
            spec.drift * s,
            x,
            read_rule(x, spec.healthy * s, spec.drift * s, lower, tol),
            spec.direction,
            spec.read,
        )

    raw = rule("raw", 1.0)
    extra = _ReadFields(**extra, delta=x, raw=raw, precision=precision)
    if raw.label == UNDECIDABLE:  # x is finite here: the precision spans both bounds
        return result(
            UNDECIDABLE,
            f"{spec.read} {x!r} at step {read_step} is within "
            f"{tol:.3g} of both bounds, the rounding of numbers stored in "
            f"{precision[0]} bits: the source cannot tell them apart",
            **extra,
        )
    if not applied:
        return result(raw.label, f"raw rule at step {read_step}; no amendment in force", **extra)
    scale, why = _scale(applied[0], preset, probes)
    if scale is None:
        return result(UNDECIDABLE, why, **extra)
    scaled = rule("scaled", scale.value)
    label = combine(raw.label, scaled.label)
    reason = (
        f"raw and scale-adjusted rules agree at step {read_step}"
        if label != BY_INSTRUMENT
        else f"raw says {raw.label}, scale-adjusted says {scaled.label} at step {read_step}"
    )
    read: _ReadFields = {**extra, "scaled": scaled, "scale": scale}
    return result(label, reason, **read)


def _secondary(
    store: RunStore, spec: VerdictSpec, rule: RuleShape, read_step: int | None
) -> SecondaryRead:
    """A secondary rule read at the primary's read step, against its raw bounds."""
    probes, metric = store.probes, rule.metric

    def no(reason: str, a: float | None = None, r: float | None = None) -> SecondaryRead:
        return SecondaryRead(rule.name, metric, a, r, None, UNDECIDABLE, reason)

    if read_step is None or read_step not in probes:
        return no("no probe at the read step")
    r_val = probes[read_step].value(metric)
    a_val: float | None = None
    if rule.read == "delta":
        if spec.anchor_step not in probes:
            return no(
                f"no anchor probe (step {spec.anchor_step}); {probes_at(probes)}", None, r_val
            )
        a_val = probes[spec.anchor_step].value(metric)
    steps = (spec.anchor_step, read_step) if a_val is not None else (read_step,)
    unread = _not_finite(probes, metric, steps)
    if unread:
        return no(unread, a_val, r_val)
    x = r_val - a_val if a_val is not None else r_val
    bits = min(probes[s].precision(metric) for s in steps)
    tol = tolerance(bits, r_val, *((a_val,) if a_val is not None else ()))
    label = read_rule(x, rule.healthy, rule.drift, rule.lower_is_better, tol)
    read = RuleRead(rule.name, rule.healthy, rule.drift, x, label, rule.direction, rule.read)
    return SecondaryRead(
        rule.name, metric, a_val, r_val, read, label, f"{rule.read} {x:+.4f} at step {read_step}"
    )


def _all_agree(label: str, reason: str, second: tuple[SecondaryRead, ...]) -> tuple[str, str]:
    """`combine = "all"`: every rule's label must be the primary's."""
    labels = [label, *(s.label for s in second)]
    if all(x == label for x in labels):
        return label, f"{reason}; all {len(labels)} rules agree"
    said = ", ".join([f"primary {label}", *(f"{s.name} {s.label}" for s in second)])
    if UNDECIDABLE in labels:
        return UNDECIDABLE, f"not every rule can be read ({said})"
    return AMBIGUOUS, f"the rules disagree ({said}); combine = all asks them to agree"


def _level_read(
    store: RunStore, preset: Preset, read_step: int, applied: list[Amendment], result: _Result
) -> Verdict:
    """`read = "level"`: the metric at the read step itself, no anchor."""
    spec, probes, metric = preset.verdict, store.probes, preset.verdict.metric
    if read_step not in probes:
        return result(UNDECIDABLE, f"no probe at step {read_step}")
    anchor = probes.get(spec.anchor_step) if spec.anchor_step else None
    value = probes[read_step].value(metric)
    values: _ReadFields = {
        "read_value": value,
        "anchor_value": anchor.value(metric) if anchor else None,
    }
    conflict = _conflict_at(store, [read_step, *_scale_steps(applied)])
    if conflict is not None:
        return result(UNDECIDABLE, conflict_reason(store, conflict, metric), **values)
    unread = _not_finite(probes, metric, (read_step,))
    if unread:
        return result(UNDECIDABLE, unread, **values)
    bits = probes[read_step].precision(metric)
    return _judge(
        preset, value, read_step, applied, probes, values, result, (bits, tolerance(bits, value))
    )


def verdict_series(
    store: RunStore,
    preset: Preset,
    amendments: Iterable[Amendment] = (),
    provenance: Mapping[str, object] | None = None,
) -> list[Verdict]:
    """The verdict as it read at each probe step ("what did it say at 750?")."""
    amendments = tuple(amendments)
    clock = log_clock(store, preset)  # once for every read
    return [
        compute_verdict(store, preset, s, amendments, provenance, clock=clock)
        for s in store.probe_steps()
    ]
