"""The reference document's numbers, edges on both sides of every bound, and the classes."""

from __future__ import annotations

import json

import pytest

from fontaine_tui.core.log.read import load_lines
from fontaine_tui.core.preset.checks import (
    AMBIGUOUS,
    BY_INSTRUMENT,
    HEALTHY,
    SAME_DRIFT,
    UNDECIDABLE,
)
from fontaine_tui.core.preset.record import Amendment
from fontaine_tui.core.verdict.bounds import combine, read_rule
from fontaine_tui.core.verdict.rules import compute_verdict, verdict_series
from tests.logs import RIGONLY_LIKE, dumps, records, records_upto


def store_of(probes: dict[int, tuple[float, float]], steps: int = 1000):
    recs = records(probes=probes, steps=steps)
    return load_lines([("".join(dumps(r) + "\n" for r in recs)).encode()])


def test_drift_bound_is_half_the_demosonly_delta(demosonly):
    assert demosonly.verdict.drift == 1.0158
    assert demosonly.reference.delta == 2.0317
    assert abs(0.5 * 2.0317 - demosonly.verdict.drift) <= 0.5e-4


def test_scale_factor_and_scaled_bounds_match_the_document(demosonly):
    # The amendment's own numbers: step-250 eval 12.5087 against demosonly's 3.4623.
    v = compute_verdict(
        store_of({250: (12.5087, 12.4202), 500: (12.0, 12.0), 1000: (12.5, 12.2)}), demosonly
    )
    assert round(v.scale.value, 3) == 3.613
    assert v.scale.numerator == 12.5087 and v.scale.denominator == 3.4623
    assert round(v.scaled.healthy, 3) == 1.084
    assert round(v.scaled.drift, 3) == 3.670
    assert "12.5087 / 3.4623 = 3.613" in v.scale.provenance


def test_rigonly_fixture_reads_ambiguous(demosonly, raw_only):
    store = store_of(RIGONLY_LIKE)
    for preset in (demosonly, raw_only):
        v = compute_verdict(store, preset)
        assert round(v.delta, 4) == 0.6929
        assert v.verdict == AMBIGUOUS and not v.provisional and v.read_step == 1000
    assert compute_verdict(store, raw_only).scaled is None


def test_raw_same_drift_scaled_ambiguous_is_ambiguous_by_instrument(demosonly):
    v = compute_verdict(
        store_of({250: (12.5087, 12.42), 500: (12.0, 12.0), 1000: (13.5, 12.1)}), demosonly
    )
    assert v.raw.label == SAME_DRIFT and v.scaled.label == AMBIGUOUS
    assert v.verdict == BY_INSTRUMENT
    assert v.exit_code == 5


def store_upto(probes: dict[int, tuple[float, float]], step: int, steps: int = 1000):
    """The log of a run still going at `step` (no end event)."""
    recs = records_upto(step, probes=probes, steps=steps)
    return load_lines([("".join(dumps(r) + "\n" for r in recs)).encode()])


def test_read_at_750_is_provisional(demosonly):
    store = store_upto({250: (3.4623, 3.6), 500: (3.1, 3.2), 750: (3.2, 3.3)}, 760)
    v = compute_verdict(store, demosonly)
    assert v.read_step == 750 and v.provisional
    assert v.verdict == HEALTHY and v.exit_code == 10
    at = compute_verdict(store_of(RIGONLY_LIKE), demosonly, at_step=750)
    assert at.provisional and at.read_step == 750


ENDPOINT_GONE = {250: (3.4623, 3.6), 500: (3.1, 3.2), 750: (3.2, 3.3), 1250: (3.2, 3.3)}


def test_a_probe_after_a_missing_endpoint_never_stands_in(demosonly):
    # endpoint 1000 absent, a probe at 1250: no read is final, whatever step 1250 says
    v = compute_verdict(store_of(ENDPOINT_GONE, steps=1300), demosonly)
    assert v.verdict == UNDECIDABLE and not v.provisional
    assert "no probe at the endpoint (step 1000)" in v.reason
    assert v.read_step == 1000 and v.exit_code == 6


def test_an_ended_run_without_its_endpoint_probe_is_undecidable(demosonly):
    v = compute_verdict(
        store_of({250: (3.4623, 3.6), 500: (3.1, 3.2), 750: (3.2, 3.3)}, steps=760), demosonly
    )
    assert v.verdict == UNDECIDABLE and not v.provisional
    assert "no probe at the endpoint (step 1000)" in v.reason and "ended" in v.reason


def test_train_steps_past_the_endpoint_end_the_wait_for_its_probe(demosonly):
    probes = {250: (3.4623, 3.6), 500: (3.1, 3.2), 750: (3.2, 3.3)}
    assert compute_verdict(store_upto(probes, 1000, 1100), demosonly).provisional
    v = compute_verdict(store_upto(probes, 1001, 1100), demosonly)
    assert v.verdict == UNDECIDABLE and not v.provisional and "1001" in v.reason


def test_at_step_past_the_endpoint_is_never_final(demosonly):
    v = compute_verdict(store_of(ENDPOINT_GONE, steps=1300), demosonly, at_step=1250)
    assert v.read_step == 1250 and v.provisional and v.exit_code >= 10
    v = compute_verdict(store_of(RIGONLY_LIKE), demosonly, at_step=1000)
    assert not v.provisional


def test_no_anchor_probe_is_undecidable(demosonly):
    v = compute_verdict(store_of({250: (3.4, 3.5), 750: (3.0, 3.0), 1000: (3.0, 3.0)}), demosonly)
    assert v.verdict == UNDECIDABLE and "anchor" in v.reason
    assert v.exit_code == 6


def test_before_the_anchor_and_empty_log_are_undecidable_and_provisional(demosonly):
    early = compute_verdict(store_upto({250: (3.4623, 3.6)}, 300), demosonly)
    assert early.verdict == UNDECIDABLE and early.provisional
    empty = compute_verdict(load_lines([b""]), demosonly)
    assert empty.verdict == UNDECIDABLE and empty.read_step is None


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_metric_is_undecidable(demosonly, bad):
    v = compute_verdict(
        store_of({250: (3.4623, 3.6), 500: (3.1, 3.2), 1000: (bad, 3.0)}), demosonly
    )
    assert v.verdict == UNDECIDABLE and "finite" in v.reason
    json.dumps(v.to_json(), allow_nan=False)  # verdict.json stays strict JSON


@pytest.mark.parametrize(
    ("end", "label"),
    [
        (3.7623, HEALTHY),  # delta exactly +0.3000
        (3.7624, AMBIGUOUS),  # one step past it
        (4.4781, SAME_DRIFT),  # delta exactly +1.0158
        (4.4780, AMBIGUOUS),  # one step short of it
    ],
)
def test_raw_bound_edges_both_sides(raw_only, end, label):
    v = compute_verdict(
        store_of({250: (3.4623, 3.6), 500: (3.4623, 3.6), 1000: (end, 3.6)}), raw_only
    )
    assert v.raw.label == label == v.verdict


def test_scaled_bound_edges_both_sides():
    s = 3.613
    assert read_rule(0.30 * s, 0.30 * s, 1.0158 * s) == HEALTHY
    assert read_rule(0.30 * s + 1e-4, 0.30 * s, 1.0158 * s) == AMBIGUOUS
    assert read_rule(1.0158 * s, 0.30 * s, 1.0158 * s) == SAME_DRIFT
    assert read_rule(1.0158 * s - 1e-4, 0.30 * s, 1.0158 * s) == AMBIGUOUS


def test_combine_table():
    assert combine(HEALTHY, HEALTHY) == HEALTHY
    assert combine(SAME_DRIFT, SAME_DRIFT) == SAME_DRIFT
    assert combine(HEALTHY, AMBIGUOUS) == BY_INSTRUMENT
    assert combine(AMBIGUOUS, None) == AMBIGUOUS
    assert combine(HEALTHY, UNDECIDABLE) == UNDECIDABLE


def test_amendment_declared_after_the_anchor_is_refused(raw_only):
    late = Amendment(
        id=2,
        kind="scale",
        from_step=250,
        comparator="demosonly",
        factor=float("nan"),
        declared_after_step=500,
        declared_before_step=501,
        text="",
        declared_at="2026-08-17T22:00:00Z",
        source="ledger",
    )
    v = compute_verdict(
        store_of({250: (12.5087, 12.4), 500: (12.0, 12.0), 1000: (13.5, 12.1)}),
        raw_only,
        amendments=[late],
    )
    assert v.amendments[0].status == "refused"
    assert "before step 500" in v.amendments[0].reason
    assert v.scaled is None and v.verdict == SAME_DRIFT


def test_scale_amendment_without_its_probe_is_undecidable(demosonly):
    v = compute_verdict(store_of({500: (3.1, 3.2), 1000: (3.2, 3.3)}), demosonly)
    assert v.verdict == UNDECIDABLE and "step 250" in v.reason


def test_corroboration_train_delta_and_monotone_rise(demosonly):
    v = compute_verdict(store_of(RIGONLY_LIKE), demosonly)
    assert round(v.corroboration["train_delta"], 4) == round(3.41 - 3.25, 4)
    assert v.corroboration["monotone_rise"] is True
    dip = compute_verdict(
        store_of({250: (3.4623, 3.6), 500: (3.1, 3.2), 750: (3.6, 3.3), 1000: (3.5, 3.3)}),
        demosonly,
    )
    assert dip.corroboration["monotone_rise"] is False


def test_verdict_json_top_level_and_rules(demosonly):
    doc = compute_verdict(store_of(RIGONLY_LIKE), demosonly).to_json()
    assert doc["schema"] == "fontaine-tui/verdict/2"
    assert (doc["verdict"], doc["provisional"], doc["read_step"]) == (AMBIGUOUS, False, 1000)
    assert set(doc["rules"]) == {"raw", "scaled", "secondary"}
    assert doc["rules"]["raw"]["drift_min"] == 1.0158
    assert doc["scale"]["comparator"] == "demosonly"
    assert doc["log"]["malformed"] == 0 and doc["log"]["records"] > 1000
    assert doc["preset"]["sha256"] == demosonly.sha256


def test_verdict_series_reads_each_probe(demosonly):
    series = verdict_series(store_of(RIGONLY_LIKE), demosonly)
    assert [v.read_step for v in series] == [250, 500, 750, 1000]
    assert [v.provisional for v in series] == [True, True, True, False]
    assert series[0].verdict == UNDECIDABLE
