"""A read's distances to its bounds (`runs -j`) agree with the label the rule gives it.

The label (core/verdict/bounds.py) compares at RESOLUTION and allows for the stored precision;
the distances are counted the same way, so the side and the signs never contradict the label."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from fontaine_tui.core.preset.checks import HEALTHY, SAME_DRIFT, UNDECIDABLE
from fontaine_tui.core.verdict.bounds import read_rule, tolerance
from fontaine_tui.core.verdict.distances import rule_distances
from fontaine_tui.core.verdict.record import RuleRead
from tests.profiles import examples

SIDE = {HEALTHY: "healthy", SAME_DRIFT: "drift", "AMBIGUOUS": "between", UNDECIDABLE: None}


def distances(x: float, h: float, d: float, lower: bool = True, tol: float = 0.0) -> dict:
    label = read_rule(x, h, d, lower, tol)
    rule = RuleRead("raw", h, d, x, label, "lower" if lower else "higher")
    return rule_distances(rule)


def test_a_delta_exactly_on_the_healthy_bound_is_healthy_and_zero_from_it():
    # 3.7623 - 3.4623 is 0.30000000000000027 in floats: on the bound 0.30, as the label reads it
    got = distances(3.7623 - 3.4623, 0.30, 1.0158)
    assert got["label"] == HEALTHY
    assert (got["to_healthy"], got["side"], got["within_precision"]) == (0.0, "healthy", None)
    assert got["to_drift"] == 0.7158


def test_a_read_on_the_bound_within_the_stored_precision_says_so():
    # float32 numbers: 0.3000001 past 0.30 is within what the source could store
    tol = tolerance(24, 3.7623, 3.4623)
    got = distances(0.3000001, 0.30, 1.0158, tol=tol)
    assert got["label"] == HEALTHY
    assert (got["to_healthy"], got["side"], got["within_precision"]) == (0.0, "healthy", "healthy")
    drift = distances(1.0157999, 0.30, 1.0158, tol=tol)
    assert (drift["label"], drift["side"]) == (SAME_DRIFT, "drift")
    assert (drift["to_drift"], drift["within_precision"]) == (0.0, "drift")
    both = distances(0.5, 0.5, 0.5000001, tol=tol)
    assert (both["label"], both["side"], both["within_precision"]) == (UNDECIDABLE, None, "both")


def test_the_decision_distances_count_as_the_label_does(tmp_path):
    """verdict.json's decision.distances: the same read on the bound is 0 from it, not -3e-16."""
    from fontaine_tui.core.log.read import load_log
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.core.verdict.rules import compute_verdict
    from tests.logs import records_upto, write_log

    probes = {250: (3.4623, 3.6862), 500: (3.4623, 3.25), 750: (3.7623, 3.3)}
    log = write_log(tmp_path / "train_log.jsonl", records_upto(750, probes))
    v = compute_verdict(load_log(log), load_preset("demosonly_1gpu"))
    assert v.label == HEALTHY and v.decision is not None
    at = {d.step: d for d in v.decision.distances}[750]
    assert (at.to_healthy, at.to_drift) == (0.0, 0.7158)


FINITE = st.floats(-10.0, 10.0, allow_nan=False)


@settings(max_examples=examples(1500), deadline=None)
@given(
    a=FINITE,
    b=FINITE,
    h=st.sampled_from([0.3, 0.1, 1e-9, 0.0, -0.2, 2.5]),
    gap=st.sampled_from([0.7158, 1e-9, 3e-9, 0.5, 2.0]),
    lower=st.booleans(),
    bits=st.sampled_from([53, 24, 11]),
    exact=st.booleans(),
)
def test_side_and_signs_always_agree_with_the_label(a, b, h, gap, lower, bits, exact):
    x = (h + a) - a if exact else a - b  # often a bound reached through float arithmetic
    d = h + gap if lower else h - gap
    got = distances(x, h, d, lower, tolerance(bits, a, b))
    label, th, td = got["label"], got["to_healthy"], got["to_drift"]
    assert got["side"] == SIDE[label]
    if label == HEALTHY:
        assert th >= 0 and td > 0, got
    elif label == SAME_DRIFT:
        assert td <= 0 and th < 0, got
    elif label == "AMBIGUOUS":
        assert th < 0 < td, got
    else:
        assert got["within_precision"] == "both" and math.isfinite(x)
    if got["within_precision"] in ("healthy", "drift"):
        assert got[f"to_{got['within_precision']}"] == 0.0
