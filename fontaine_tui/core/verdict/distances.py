"""A read and its signed distances to each bound of its rules, as a JSON-ready document.

`fontaine-tui runs -j` shows it for each run (docs/json.md, schema fontaine-tui/runs/1). A
distance is in the rule's units (the delta's or the level's), signed so that a positive
`to_healthy` is how far the read may move the bad way and stay HEALTHY (negative: how far it
is past the healthy bound), and a positive `to_drift` how far it is from the drift bound
(negative: how far past it). `side` says where the read lies: "healthy", "between" or
"drift". The scale-adjusted rule has its own bounds (the raw ones x s), so its own distances.

The distances agree with the rule's label (core/verdict/bounds.py): they are counted at
RESOLUTION, as the label compares, so a read exactly on a bound (3.7623 - 3.4623 against 0.30)
is 0 from it, never 3e-16 past it; and a read the label puts on a bound because its numbers were
stored with fewer bits (within the stored precision's tolerance) is 0 from that bound, and
`within_precision` names the bound ("healthy", "drift", or "both" when the precision cannot
tell them apart: UNDECIDABLE).

A blinded read never reaches this module's caller (core/verdict/blind.py decides first).
"""

from __future__ import annotations

import math

from fontaine_tui.core.preset.checks import AMBIGUOUS, HEALTHY, SAME_DRIFT
from fontaine_tui.core.verdict.bounds import ahead
from fontaine_tui.core.verdict.record import RuleRead, Verdict, json_num

SIDES = {HEALTHY: "healthy", AMBIGUOUS: "between", SAME_DRIFT: "drift"}


def rule_distances(rule: RuleRead) -> dict[str, object]:
    """One rule's bounds, its read, and the read's signed distances to them, as its label reads.

    A distance the label calls on the bound within the stored precision is 0, and
    `within_precision` says which bound."""
    x, h, d = rule.value, rule.healthy, rule.drift
    if rule.lower_is_better:
        to_healthy, to_drift = ahead(h, x), ahead(d, x)
    else:
        to_healthy, to_drift = ahead(x, h), ahead(x, d)
    side = SIDES.get(rule.label) if math.isfinite(x) else None
    to_healthy, to_drift, within = _within_precision(side, math.isfinite(x), to_healthy, to_drift)
    return {
        "healthy": json_num(h),
        "drift": json_num(d),
        "value": json_num(x),
        "label": rule.label,
        "to_healthy": json_num(to_healthy),
        "to_drift": json_num(to_drift),
        "side": side,
        "within_precision": within,
    }


def _within_precision(
    side: str | None, finite: bool, to_healthy: float, to_drift: float
) -> tuple[float, float, str | None]:
    """The distances as the label reads them, and which bound it calls the read on.

    A read the label puts on the side of a bound it is short of is on that bound within the
    stored precision: that distance is 0. A finite read with no side is UNDECIDABLE: the
    precision spans both bounds."""
    if side == "healthy" and to_healthy < 0:
        return 0.0, to_drift, "healthy"
    if side == "drift" and to_drift > 0:
        return to_healthy, 0.0, "drift"
    if side is None and finite:
        return to_healthy, to_drift, "both"
    return to_healthy, to_drift, None


def reading(v: Verdict) -> dict[str, object]:
    """The read of `v`: label, provisional, step, value, and each rule's distances."""
    return {
        "label": v.label,
        "verdict": v.verdict,
        "provisional": v.provisional,
        "metric": v.metric,
        "read": v.read,
        "direction": v.direction,
        "read_step": v.read_step,
        "anchor_value": json_num(v.anchor_value),
        "read_value": json_num(v.read_value),
        "value": json_num(v.delta),
        "scale": None if v.scale is None else json_num(v.scale.value),
        "rules": {
            "raw": None if v.raw is None else rule_distances(v.raw),
            "scaled": None if v.scaled is None else rule_distances(v.scaled),
        },
    }
