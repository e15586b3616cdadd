"""The verdict as a record, and the verdict.json document it makes (schema SCHEMA).

The record holds each rule's read, the amendments' checks and the scale.

`rules.py` computes it; text.py, export.py and the console read it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from fontaine_tui.core.log.oddvalues import NONE as NO_ODD
from fontaine_tui.core.log.oddvalues import OddValues
from fontaine_tui.core.preset.checks import (
    AMBIGUOUS,
    BY_INSTRUMENT,
    HEALTHY,
    SAME_DRIFT,
    UNDECIDABLE,
)
from fontaine_tui.core.verdict.lock import Lock
from fontaine_tui.core.verdict.seednoise import SeedNoise

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
    status: str  # "applied" | "refused" | "declared" (a delta: it changes no read)
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
class RecoveryRead:
    """The preset's [recovery] contract and the restarts it made (core/run/recovery.py)."""

    max_restarts: int
    on: tuple[str, ...]
    restarts: tuple[tuple[int, str], ...] = ()  # each restart: (its attempt, the cause)

    def words(self) -> str:
        """One line: the contract, then the restarts used and their causes."""
        n, used = self.max_restarts, len(self.restarts)
        made = ", ".join(f"attempt {a} after {c}" for a, c in self.restarts)
        return (
            f"recovery: up to {n} restart{'s' if n != 1 else ''} on {', '.join(self.on)}; "
            f"{used} used" + (f" ({made})" if made else "")
        )

    def to_json(self) -> dict[str, object]:
        return {
            "max_restarts": self.max_restarts,
            "on": list(self.on),
            "used": len(self.restarts),
            "restarts": [{"attempt": a, "cause": c} for a, c in self.restarts],
        }


@dataclass(frozen=True, slots=True)
class Unblinding:
    """One review.jsonl `unblind` line: who saw a blinded read before the endpoint, and why."""

    line: int
    time: str
    who: str
    why: str
    read_step: int | None


@dataclass(frozen=True, slots=True)
class ReviewState:
    """The review trail (review.jsonl) as checked beside a read.

    `lines` and `head` (the sha256 of its last line, the chain's genesis for none) are the
    chain's when it holds. When it does not, they are the longest head recorded for it (in
    review.jsonl.head or an earlier verdict.json), so a verdict.json written now keeps what a
    later check must find again. `broken` says why it does not hold ("" when it does)."""

    lines: int
    head: str
    broken: str = ""
    unblinded: tuple[Unblinding, ...] = ()  # each unblinding before the endpoint, in order

    @property
    def intact(self) -> bool:
        return not self.broken


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
    # another trainer's eval values that are not numbers: counted on a blinded card (its words
    # name a probe's step and value, a read there UNDECIDABLE), in `notices` in the JSON
    odd_values: OddValues = NO_ODD
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
    # keys launched with although they differ from the banked comparator (--declare-delta),
    # from the ledger: amendment, key, ours, theirs, comparator, declared_at
    declared_deltas: tuple[Mapping[str, object], ...] = ()
    # the review trail beside the run, as checked (None: no run folder, or not checked)
    review: ReviewState | None = None
    # the seed group's spread at the read step and where the read lies against it (None: the
    # preset names no [verdict] seed_group); beside the verdict, it never changes the label
    seed_noise: SeedNoise | None = None
    # the preset's [recovery] and the restarts used (None: no restarts allowed, or not read)
    recovery: RecoveryRead | None = None
    # why the blind holds a read that is not PROVISIONAL either ("" for none): the run ended
    # before its endpoint without a locked decision, or the amendment ledger, which may move
    # the endpoint, does not hold (core/run/evidence.py's `verdict_of` says it)
    withheld: str = ""

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
        """The verdict.json document (schema SCHEMA, described in docs/verdict-json.md).

        Every key of schema 1 is still there with its meaning; schema 2 adds the rest."""
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
            "anchor_value": json_num(self.anchor_value),
            "read_value": json_num(self.read_value),
            "delta": json_num(self.delta) if self.read == "delta" else None,
            "level": json_num(self.delta) if self.read == "level" else None,
            "rules": {
                "raw": _rule_json(self.raw),
                "scaled": _rule_json(self.scaled),
                "secondary": [_secondary_json(s) for s in self.secondary],
            },
            "combine": self.combine,
            "primary_label": self.primary_label or self.verdict,
            **_amendments_json(self),
            "corroboration": _floats_json(self.corroboration),
            "datasets": {k: json_num(v) for k, v in self.datasets.items()},
            "precision": _precision_json(self.precision),
            "decision": _lock_json(self.decision),
            "comparators": [_comparator_json(c) for c in self.comparators],
            "seed_noise": None if self.seed_noise is None else self.seed_noise.to_json(),
            "recovery": None if self.recovery is None else self.recovery.to_json(),
            "provenance": _provenance_json(self),
            "review": _review_json(self.review),
            "labels": {c: self.labels.get(c, c) for c in EXIT_CODES},
            "interpretation": self.interpretation,
            "preset": dict(self.preset),
            "log": _log_json(self),
        }


def _amendments_json(v: Verdict) -> dict:
    """What the amendments did: the scale in force, each one's check, the declared deltas."""
    return {
        "scale": None if v.scale is None else _floats_json(asdict(v.scale)),
        "amendments": [asdict(a) for a in v.amendments],
        "declared_deltas": [dict(d) for d in v.declared_deltas],
    }


def _floats_json(values: Mapping[str, object]) -> dict:
    """`values`, each float as json_num writes it."""
    return {k: json_num(v) if isinstance(v, float) else v for k, v in values.items()}


STORED_AS = {53: "float64", 24: "float32", 11: "float16"}  # significand bits: the format


def _precision_json(precision: tuple[int, float]) -> dict:
    bits, tol = precision
    return {"bits": bits, "tolerance": tol, "stored_as": STORED_AS.get(bits, f"{bits} bits")}


def _provenance_json(v: Verdict) -> dict:
    return {
        "frozen": dict(v.provenance),
        "log": [dict(m) for m in v.provenance_log],
        "changed": list(v.provenance_changes),
    }


def _review_json(review: ReviewState | None) -> dict | None:
    if review is None:
        return None
    return {
        "file": "review.jsonl",
        "lines": review.lines,
        "head": review.head,
        "intact": review.intact,
        "broken": review.broken,
        "unblinded": [
            {"line": u.line, "time": u.time, "who": u.who, "why": u.why, "read_step": u.read_step}
            for u in review.unblinded
        ],
    }


def _log_json(v: Verdict) -> dict:
    """What reading the log met: its counts, malformed and out-of-order records, conflicts."""
    return {
        **v.counts,
        "malformed_lines": list(v.malformed_lines),
        "segments": [{"name": n, "first_line": line} for n, line in v.segments],
        "out_of_order_records": [{"at": w, "why": y} for w, y in v.out_of_order],
        "conflicting_probes": list(v.conflicts),
        "notices": [*v.notices, *filter(None, [v.odd_values.words(False)])],
    }


def json_num(x: float | None) -> float | str | None:
    """Finite floats as numbers; NaN and infinities as strings so verdict.json stays strict."""
    if x is None:
        return None
    return x if math.isfinite(x) else repr(x)


def _comparator_json(c: Mapping[str, object]) -> dict:
    curve = c.get("curve")
    return {
        k: (
            json_num(v)
            if isinstance(v, float)
            else [[step, json_num(x)] for step, x in curve]
            if k == "curve" and isinstance(curve, list)
            else v
        )
        for k, v in c.items()
    }


def _lock_json(lock: Lock | None) -> dict | None:
    if lock is None:
        return None
    return {
        "locked_at": lock.step,
        "label": lock.label,
        "max_probe_change": lock.max_change,
        "max_probe_change_from": lock.source,
        "probe_every": lock.every,
        "probe_every_from": lock.every_from,
        **({"stop_on_lock": True} if lock.stops else {}),
        "distances": [
            {
                "step": d.step,
                "to_healthy": json_num(d.to_healthy),
                "to_drift": json_num(d.to_drift),
            }
            for d in lock.distances
        ],
    }


def _secondary_json(s: SecondaryRead) -> dict:
    return {
        "name": s.name,
        "metric": s.metric,
        "anchor_value": json_num(s.anchor_value),
        "read_value": json_num(s.read_value),
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
        rule.read: json_num(rule.value),
        "label": rule.label,
    }
