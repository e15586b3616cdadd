"""A read and its signed distances to each bound of its rules, as a JSON-ready document.

`fontaine-tui runs -j` shows it for each run (docs/json.md, schema fontaine-tui/runs/1). A
distance is in the rule's units (the delta's or the level's), signed so that a positive
`to_healthy` is how far the read may move the bad way and stay HEALTHY (negative: how far it
is past the healthy bound), and a positive `to_drift` how far it is from the drift bound
(negative: how far past it). `side` says where the read lies: "healthy", "between" or
"drift". The scale-adjusted rule has its own bounds (the raw ones x s), so its own distances.

A blinded read never reaches this module's caller (core/verdict/blind.py decides first).
"""

from __future__ import annotations

import math

from fontaine_tui.core.verdict.record import RuleRead, Verdict, json_num


def rule_distances(rule: RuleRead) -> dict[str, object]:
    """One rule's bounds, its read, and the read's signed distances to them."""
    x, h, d = rule.value, rule.healthy, rule.drift
    if rule.lower_is_better:
        to_healthy, to_drift = h - x, d - x
    else:
        to_healthy, to_drift = x - h, x - d
    if not math.isfinite(x):
        side = None
    elif to_healthy >= 0:
        side = "healthy"
    elif to_drift <= 0:
        side = "drift"
    else:
        side = "between"
    return {
        "healthy": json_num(h),
        "drift": json_num(d),
        "value": json_num(x),
        "label": rule.label,
        "to_healthy": json_num(to_healthy),
        "to_drift": json_num(to_drift),
        "side": side,
    }


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
