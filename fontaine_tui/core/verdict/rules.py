"""The read rules of a pre-registration: raw, scale-adjusted, combined. Pure functions."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Protocol, TypedDict

from fontaine_tui.core.log.records import Probe
from fontaine_tui.core.log.store import Conflict, RunStore
from fontaine_tui.core.verdict.checks import (  # the classes, defined once, re-exported
    AMBIGUOUS,
    BY_INSTRUMENT,
    HEALTHY,
    SAME_DRIFT,
    UNDECIDABLE,
)
from fontaine_tui.core.verdict.curves import banked_curve, banked_curves
from fontaine_tui.core.verdict.lock import Lock, decision_lock, max_probe_change, probe_cadence
from fontaine_tui.core.verdict.prereg import provenance_changes
from fontaine_tui.core.verdict.presets import Amendment, Preset
from fontaine_tui.core.verdict.shape import (  # re-exported: the rule's reading of a number
    RuleShape,
    VerdictSpec,
    combine,
    read_rule,
    tolerance,
)

if TYPE_CHECKING:
    from typing import Unpack  # 3.11+; annotations only, so 3.10 runs without it

SCHEMA = "fontaine-tui/verdict/2"  # 1: before rule shapes, datasets and provenance

# Exit codes of `fontaine-tui verdict`: one per class; a provisional read adds 10.
EXIT_CODES = {HEALTHY: 0, SAME_DRIFT: 3, AMBIGUOUS: 4, BY_INSTRUMENT: 5, UNDECIDABLE: 6}
PROVISIONAL_OFFSET = 10


@dataclass(frozen=True, slots=True)
class RuleRead:
    """One rule's read: `value` (the delta, or the level) against its two bounds."""

    name: str
    healthy: float
    drift: float
    value: float
    label: str
    direction: str = "lower"
    read: str = "delta"

    @property
    def lower_is_better(self) -> bool:
        return self.direction == "lower"


@dataclass(frozen=True, slots=True)
class SecondaryRead:
    """A secondary rule's read at the primary's read step (raw bounds only)."""

    name: str
    metric: str
    anchor_value: float | None
    read_value: float | None
    rule: RuleRead | None  # None when it could not be read (`reason` says why)
    label: str
    reason: str


@dataclass(frozen=True, slots=True)
class AmendmentCheck:
    """Whether an amendment counts: declared before the step it first affects."""

    id: int
    kind: str
    source: str
    declared_at: str
    last_step_seen: int
    first_affected_step: int
    status: str  # "applied" | "refused"
    reason: str


@dataclass(frozen=True, slots=True)
class Scale:
    value: float
    numerator: float | None
    denominator: float | None
    from_step: int | None
    comparator: str | None
    amendment: int
    provenance: str
    # the model tracks while the units differ: this run's eval AR CE at the scale's step
    # beside the banked comparator's (the document's 0.6385 vs 0.6116); "" when not banked
    evidence: str = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    verdict: str
    provisional: bool
    read_step: int | None
    anchor_step: int
    endpoint_step: int
    metric: str
    anchor_value: float | None
    read_value: float | None
    delta: float | None
    raw: RuleRead | None
    scaled: RuleRead | None
    scale: Scale | None
    amendments: tuple[AmendmentCheck, ...]
    corroboration: Mapping[str, object]
    reason: str
    interpretation: str
    preset: Mapping[str, str]
    counts: Mapping[str, int] = field(default_factory=dict)
    malformed_lines: tuple[int, ...] = ()
    malformed_at: tuple[str, ...] = ()  # the same lines as "train_log.jsonl.1 line 12"
    segments: tuple[tuple[str, int], ...] = ()  # (file, its first line) when read from several
    out_of_order: tuple[tuple[str, str], ...] = ()  # (where, why) of records not applied
    conflicts: tuple[str, ...] = ()  # each conflicting probe pair, in words
    notices: tuple[str, ...] = ()  # e.g. a meta record of another run in the middle of the log
    provenance: Mapping[str, object] = field(default_factory=dict)  # frozen at launch
    provenance_changes: tuple[str, ...] = ()  # the log's meta names other code or data
    provenance_log: tuple[Mapping[str, object], ...] = ()  # each meta's code/data/versions
    read: str = "delta"  # what `delta` holds: "delta" (m(read) - m(anchor)) or "level" (m(read))
    direction: str = "lower"  # which way is better
    secondary: tuple[SecondaryRead, ...] = ()
    combine: str = "primary"  # "primary": the secondary rules corroborate; "all": must agree
    primary_label: str = ""  # the primary rule's own label (before an "all" combination)
    datasets: Mapping[str, float] = field(default_factory=dict)  # breakdown.* read as `read`
    labels: Mapping[str, str] = field(default_factory=dict)  # class -> the preset's word
    # each comparator: name, delta, where its numbers come from, the banked version if any
    comparators: tuple[Mapping[str, object], ...] = ()
    decision: Lock | None = None  # distances to the bounds and the decision lock
    # the significand bits the read's numbers were stored in (53: doubles), and how close to
    # a bound a read is on it because of that (0: compared at RESOLUTION)
    precision: tuple[int, float] = (53, 0.0)

    @property
    def label(self) -> str:
        """The verdict in the preset's words (`verdict` is the class, for exit codes)."""
        return self.labels.get(self.verdict, self.verdict)

    def label_of(self, cls: str) -> str:
        return self.labels.get(cls, cls)

    @property
    def exit_code(self) -> int:
        code = EXIT_CODES[self.verdict]
        return code + PROVISIONAL_OFFSET if self.provisional else code

    def to_json(self) -> dict:
        """The verdict.json document (schema SCHEMA, described in docs/verdict-json.md). Every key of
        schema 1 is still there with its meaning; schema 2 adds the rest."""
        return {
            "schema": SCHEMA,
            "verdict": self.verdict,  # the class: exit codes and tools key on it
            "label": self.label,  # the preset's word for it
            "provisional": self.provisional,
            "read_step": self.read_step,
            "reason": self.reason,
            "metric": self.metric,
            "read": self.read,
            "direction": self.direction,
            "anchor_step": self.anchor_step,
            "endpoint_step": self.endpoint_step,
            "anchor_value": _json_num(self.anchor_value),
            "read_value": _json_num(self.read_value),
            "delta": _json_num(self.delta) if self.read == "delta" else None,
            "level": _json_num(self.delta) if self.read == "level" else None,
            "rules": {
                "raw": _rule_json(self.raw),
                "scaled": _rule_json(self.scaled),
                "secondary": [_secondary_json(s) for s in self.secondary],
            },
            "combine": self.combine,
            "primary_label": self.primary_label or self.verdict,
            "scale": None
            if self.scale is None
            else {
                k: _json_num(v) if isinstance(v, float) else v
                for k, v in asdict(self.scale).items()
            },
            "amendments": [asdict(a) for a in self.amendments],
            "corroboration": {
                k: (_json_num(v) if isinstance(v, float) else v)
                for k, v in self.corroboration.items()
            },
            "datasets": {k: _json_num(v) for k, v in self.datasets.items()},
            "precision": {
                "bits": self.precision[0],
                "tolerance": self.precision[1],
                "stored_as": {53: "float64", 24: "float32", 11: "float16"}.get(
                    self.precision[0], f"{self.precision[0]} bits"
                ),
            },
            "decision": None if self.decision is None else _lock_json(self.decision),
            "comparators": [_comparator_json(c) for c in self.comparators],
            "provenance": {
                "frozen": dict(self.provenance),
                "log": [dict(m) for m in self.provenance_log],
                "changed": list(self.provenance_changes),
            },
            "labels": {c: self.labels.get(c, c) for c in EXIT_CODES},
            "interpretation": self.interpretation,
            "preset": dict(self.preset),
            "log": {
                **self.counts,
                "malformed_lines": list(self.malformed_lines),
                "segments": [{"name": n, "first_line": line} for n, line in self.segments],
                "out_of_order_records": [{"at": w, "why": y} for w, y in self.out_of_order],
                "conflicting_probes": list(self.conflicts),
                "notices": list(self.notices),
            },
        }


def _json_num(x: float | None) -> float | str | None:
    """Finite floats as numbers; NaN and infinities as strings so verdict.json stays strict."""
    if x is None:
        return None
    return x if math.isfinite(x) else repr(x)


def _comparator_json(c: Mapping[str, object]) -> dict:
    curve = c.get("curve")
    return {
        k: (
            _json_num(v)
            if isinstance(v, float)
            else [[step, _json_num(x)] for step, x in curve]
            if k == "curve" and isinstance(curve, list)
            else v
        )
        for k, v in c.items()
    }


def _lock_json(lock: Lock) -> dict:
    return {
        "locked_at": lock.step,
        "label": lock.label,
        "max_probe_change": lock.max_change,
        "max_probe_change_from": lock.source,
        "probe_every": lock.every,
        "probe_every_from": lock.every_from,
        "distances": [
            {
                "step": d.step,
                "to_healthy": _json_num(d.to_healthy),
                "to_drift": _json_num(d.to_drift),
            }
            for d in lock.distances
        ],
    }


def _lock(
    store: RunStore,
    preset: Preset,
    endpoint: int,
    read_step: int | None,
    raw: RuleRead | None,
    scaled: RuleRead | None,
) -> Lock | None:
    """The decision lock over the reads up to `read_step` (None without a primary read),
    counting the probes left to `endpoint` (the endpoint in force) at the cadence of the
    probes seen, never more than the preset states."""
    spec = preset.verdict
    if read_step is None or raw is None:
        return None
    probes, metric = store.probes, spec.metric
    base = probes[spec.anchor_step].value(metric) if spec.read == "delta" else 0.0
    start = spec.anchor_step if spec.read == "delta" else 0
    points = [
        (s, probes[s].value(metric) - base) for s in store.probe_steps() if start <= s <= read_step
    ]
    bounds = [(raw.healthy, raw.drift), *([(scaled.healthy, scaled.drift)] if scaled else [])]
    said = preset.stated_every
    every, every_from = probe_cadence(
        store.probe_steps(), said[0] if said else None, said[1] if said else ""
    )
    change, source = max_probe_change(spec, every, banked_curves(preset))
    return decision_lock(
        points, bounds, spec.lower_is_better, endpoint, every, change, source, every_from
    )


def _secondary_json(s: SecondaryRead) -> dict:
    return {
        "name": s.name,
        "metric": s.metric,
        "anchor_value": _json_num(s.anchor_value),
        "read_value": _json_num(s.read_value),
        "rule": _rule_json(s.rule),
        "label": s.label,
        "reason": s.reason,
    }


def _rule_json(rule: RuleRead | None) -> dict | None:
    if rule is None:
        return None
    healthy, drift = (
        ("healthy_max", "drift_min") if rule.lower_is_better else ("healthy_min", "drift_max")
    )
    return {
        healthy: rule.healthy,
        drift: rule.drift,
        rule.read: _json_num(rule.value),
        "label": rule.label,
    }


def check_amendments(amendments: Iterable[Amendment], preset: Preset) -> list[AmendmentCheck]:
    """An amendment counts only if the last step seen at declaration precedes the first step
    it affects. A scale amendment first affects the anchor probe (the first delta; in a level
    read, the first probe) and only one is in force. An extend first affects the endpoint in
    force when it is declared (that read would have been final) and moves it later; several
    extends apply in turn."""
    spec = preset.verdict
    scale_first = spec.anchor_step if spec.read == "delta" else int(preset.recipe["eval_every"])
    what = "the anchor probe" if spec.read == "delta" else "the first probe"
    endpoint = spec.endpoint_step
    checks = []
    scale_in_force = False
    for a in amendments:
        if a.kind == "extend":
            first, kind, where = endpoint, "an extend", "the endpoint in force"
        else:
            first, kind, where = scale_first, "a scale amendment", what
        reason = ""
        if a.declared_after_step >= first:
            reason = (
                f"declared after step {a.declared_after_step} was seen; {kind} "
                f"must be declared before step {first} ({where})"
            )
        elif a.declared_before_step > first:
            reason = (
                f"declared before step {a.declared_before_step}, but it affects step "
                f"{first} ({where})"
            )
        elif a.kind == "extend" and a.to_step <= endpoint:
            reason = f"moves the endpoint to {a.to_step}, not past {endpoint} (in force)"
        elif a.kind != "extend" and scale_in_force:
            reason = "a scale amendment is already in force"
        status = "refused" if reason else "applied"
        if not reason:
            reason = f"declared after step {a.declared_after_step} was seen, before step {first}"
            if a.kind == "extend":
                reason += f": the endpoint moves from {endpoint} to {a.to_step}"
                endpoint = a.to_step
            else:
                scale_in_force = True
        checks.append(
            AmendmentCheck(
                a.id, a.kind, a.source, a.declared_at, a.declared_after_step, first, status, reason
            )
        )
    return checks


def endpoint_in_force(
    preset: Preset, amendments: Iterable[Amendment], checks: Iterable[AmendmentCheck]
) -> int:
    """The endpoint after the applied extends (the preset's own when none)."""
    endpoint = preset.verdict.endpoint_step
    for a, c in zip(amendments, checks, strict=True):
        if a.kind == "extend" and c.status == "applied":
            endpoint = a.to_step
    return endpoint


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
    """This run's eval AR CE at the scale's step beside the banked comparator's, when the
    bank holds it."""
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
    values = [p.value(metric) for p in window]
    monotone = None
    if len(values) >= 2 and all(math.isfinite(v) for v in values):
        monotone = all(b > a for a, b in zip(values, values[1:], strict=False))
    end = probes[read]
    # a run that logs no train MAE (another trainer's) has no train-slice delta to show
    train_delta = (
        end.train_chunk_mae - base.train_chunk_mae
        if base.has("train_chunk_mae") or end.has("train_chunk_mae")
        else None
    )
    return {
        "train_delta": train_delta,
        "monotone_rise": monotone,
        "eval_deltas": {k: _json_num(v) for k, v in deltas.items()},
    }


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
) -> Verdict:
    """Read the run at `at_step` (default: the endpoint if probed, else the latest probe).

    `amendments` are those declared in the run folder's ledger, checked like the preset's own.
    """
    spec = preset.verdict
    probes = store.probes
    every = [*preset.amendments, *amendments]
    checks = check_amendments(every, preset)
    applied = [
        a for a, c in zip(every, checks, strict=True) if c.status == "applied" and a.kind == "scale"
    ]
    anchor, metric = spec.anchor_step, spec.metric
    endpoint = endpoint_in_force(preset, every, checks)
    changed = provenance_changes(provenance, store.metas) if provenance else ()
    read_step, provisional, missing = read_point(store, endpoint, at_step)

    def result(label: str, reason: str, **kw: Unpack[_ReadFields]) -> Verdict:
        primary = label
        second = tuple(_secondary(store, spec, r, read_step) for r in spec.secondary)
        if spec.combine == "all" and second:
            label, reason = _all_agree(label, reason, second)
        if provisional and at_step is None and (off := off_cadence(probes, endpoint)):
            reason = f"{reason}; {off}"
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
            combine=spec.combine,
            primary_label=primary,
            datasets=_datasets(probes, spec, read_step),
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
        )

    if missing:
        return result(UNDECIDABLE, missing)
    if read_step is None:
        return result(UNDECIDABLE, "no probe in the log yet")
    if spec.read == "level":
        return _level_read(store, preset, read_step, applied, result)
    if anchor not in probes:
        why = "no anchor probe yet" if read_step < anchor else "no anchor probe in the log"
        return result(UNDECIDABLE, f"{why} (step {anchor}); {probes_at(probes)}")
    if read_step < anchor:
        return result(UNDECIDABLE, f"read at step {read_step} precedes the anchor (step {anchor})")
    if read_step not in probes:
        return result(UNDECIDABLE, f"no probe at step {read_step}")
    a_val = probes[anchor].value(metric)
    r_val = probes[read_step].value(metric)
    values: _ReadFields = {"anchor_value": a_val, "read_value": r_val}
    used = [anchor, read_step]
    if applied and not math.isfinite(applied[0].factor):
        used.append(applied[0].from_step)
    conflict = next((c for c in store.conflicts if c.step in used), None)
    if conflict is not None:
        return result(UNDECIDABLE, conflict_reason(store, conflict, metric), **values)
    if not (math.isfinite(a_val) and math.isfinite(r_val)):
        bad = anchor if not math.isfinite(a_val) else read_step
        what = probes[bad].why_not(metric) or repr(probes[bad].value(metric))
        return result(
            UNDECIDABLE, f"{metric} at step {bad} is {what}, not a finite number", **values
        )
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


def probes_at(probes: Mapping[int, Probe], shown: int = 4) -> str:
    """Where a run's probes are, for a rule whose step has none (a trainer that probes at
    global_step - 1 logs 9, 19, 29 where the preset says 10): the first few and the last."""
    steps = sorted(probes)
    if not steps:
        return "the run has no probes"
    few = steps if len(steps) <= shown + 1 else [*steps[:shown], "...", steps[-1]]
    return f"the run's probes are at {', '.join(map(str, few))}"


def off_cadence(probes: Mapping[int, Probe], step: int) -> str:
    """Why `step` will not be probed, when the run probes at a steady cadence that misses it
    (probes at 9, 19, 29 and an endpoint of 40), else ""."""
    steps = sorted(probes)
    if len(steps) < 2 or step in probes or step < steps[-1]:
        return ""
    every = steps[1] - steps[0]
    if (
        any(b - a != every for a, b in zip(steps, steps[1:], strict=False))
        or (step - steps[-1]) % every == 0
    ):
        return ""
    return (
        f"the endpoint (step {step}) is off the run's probe cadence; {probes_at(probes)} "
        f"(every {every})"
    )


def read_point(
    store: RunStore, endpoint: int, at_step: int | None = None
) -> tuple[int | None, bool, str]:
    """Where the primary rule reads: (step, provisional, why there is no read).

    The final read is at the endpoint in force and nowhere else. Without a probe there, a
    run that can still reach it reads PROVISIONAL at its latest probe before it; once the run
    has ended or logged a later step, it never will, and the read is UNDECIDABLE naming the
    endpoint (a probe after it never stands in). A read asked for at another step
    (`at_step`) is never final."""
    if at_step is not None:
        return at_step, at_step != endpoint, ""
    if endpoint in store.probes:
        return endpoint, False, ""
    why = f"no probe at the endpoint (step {endpoint}); {probes_at(store.probes)}"
    later = store.last_step
    if later > endpoint:
        return endpoint, False, f"{why}; the log reached step {later}"
    if store.ended_at is not None:
        return endpoint, False, f"{why}; the run ended at step {store.ended_at}"
    before = [s for s in store.probes if s < endpoint]
    return max(before, default=None), True, ""


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
    """Hold the read `x` (a delta or a level) to the raw bounds and, with a scale amendment
    in force, to the bounds x s; the two rules combined. `precision`: the significand bits
    the source stored the read's numbers in, and how close to a bound is on it."""
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
    for step, v in ((spec.anchor_step, a_val), (read_step, r_val)):
        if v is not None and not math.isfinite(v):
            what = probes[step].why_not(metric) or repr(v)
            return no(f"{metric} at step {step} is {what}, not a finite number", a_val, r_val)
    x = r_val - a_val if a_val is not None else r_val
    bits = min(
        probes[s].precision(metric)
        for s in ((spec.anchor_step, read_step) if a_val is not None else (read_step,))
    )
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


def _datasets(
    probes: Mapping[int, Probe], spec: VerdictSpec, read_step: int | None
) -> dict[str, float]:
    """Every dataset of the eval breakdown, read as the primary rule reads (a delta from the
    anchor probe, or a level): verdict.json carries them whatever the rules are."""
    if read_step is None or read_step not in probes:
        return {}
    at = probes[read_step].breakdown
    if spec.read == "level":
        return dict(sorted(at.items()))
    base = probes.get(spec.anchor_step)
    if base is None:
        return {}
    return {k: v - base.breakdown[k] for k, v in sorted(at.items()) if k in base.breakdown}


def _level_read(
    store: RunStore, preset: Preset, read_step: int, applied: list[Amendment], result: _Result
) -> Verdict:
    """`read = "level"`: the metric at the read step itself, no anchor."""
    spec, probes, metric = preset.verdict, store.probes, preset.verdict.metric
    if read_step not in probes:
        return result(UNDECIDABLE, f"no probe at step {read_step}")
    used = [read_step] + (
        [applied[0].from_step] if applied and not math.isfinite(applied[0].factor) else []
    )
    anchor = probes.get(spec.anchor_step) if spec.anchor_step else None
    value = probes[read_step].value(metric)
    values: _ReadFields = {
        "read_value": value,
        "anchor_value": anchor.value(metric) if anchor else None,
    }
    conflict = next((c for c in store.conflicts if c.step in used), None)
    if conflict is not None:
        return result(UNDECIDABLE, conflict_reason(store, conflict, metric), **values)
    if not math.isfinite(value):
        what = probes[read_step].why_not(metric) or repr(value)
        return result(
            UNDECIDABLE, f"{metric} at step {read_step} is {what}, not a finite number", **values
        )
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
    return [compute_verdict(store, preset, s, amendments, provenance) for s in store.probe_steps()]
