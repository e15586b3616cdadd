"""Distance to the bounds and the decision lock, on fixture curves: the step where it locks
and the step before it; the largest per-probe change stated or taken from the bank."""

from __future__ import annotations

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.log.read import load_lines
from fontaine_tui.core.verdict.lock import decision_lock
from fontaine_tui.core.verdict.presets import load_preset
from fontaine_tui.core.verdict.rules import compute_verdict
from fontaine_tui.core.verdict.text import render
from tests.core.launch.conftest import without_amendments
from tests.logs import dumps, records, write_log

CURVE = {250: (3.40, 3.6), 500: (3.10, 3.2), 750: (3.15, 3.25), 1000: (3.20, 3.3)}


def store_at(step: int, probes=CURVE):
    recs = [r for r in records(probes=probes) if r["step"] <= step]
    return load_lines([b"".join(dumps(r).encode() + b"\n" for r in recs)])


def stated(tmp_path, change: str):
    path = without_amendments(tmp_path)
    path.write_text(path.read_text().replace("drift_min = 1.0158",
                                             f"drift_min = 1.0158\nmax_probe_change = {change}"))
    return load_preset(path)


def test_it_locks_at_750_and_not_at_500(tmp_path):
    preset = stated(tmp_path, "0.2")
    # at 500: delta 0, two probes left, reach 0.4: [-0.4, +0.4] crosses healthy_max 0.30
    before = compute_verdict(store_at(500), preset).decision
    assert before is not None and before.step is None
    assert before.describe().startswith("decision not locked: a remaining probe can still")
    # at 750: delta +0.05, one probe left, reach 0.2: [-0.15, +0.25] is all HEALTHY
    at = compute_verdict(store_at(750), preset).decision
    assert at is not None and (at.step, at.label) == (750, "HEALTHY")
    assert at.describe() == ("decision locked at step 750 (HEALTHY): no remaining probe can "
                             "change it (largest change per probe 0.2000, stated in the "
                             "preset (verdict.max_probe_change))")
    final = compute_verdict(store_at(1000), preset)
    assert final.decision is not None and final.decision.step == 750
    d = {x.step: x for x in final.decision.distances}
    assert d[750].to_healthy == pytest.approx(0.30 - 0.05)
    assert d[1000].to_drift == pytest.approx(1.0158 - 0.10)
    doc = final.to_json()["decision"]
    assert (doc["locked_at"], doc["label"], doc["max_probe_change"]) == (750, "HEALTHY", 0.2)
    assert "decision locked at step 750 (HEALTHY)" in render(final)


def test_a_larger_change_delays_the_lock_and_a_lock_breaks_when_the_label_moves():
    points = [(500, 0.0), (750, 0.05), (1000, 0.1)]
    lock = decision_lock(points, [(0.30, 1.0158)], True, 1000, 250, 0.3, "x")
    assert lock.step == 1000  # reach 0.3 at 750 touches 0.35 > 0.30
    moved = decision_lock([(500, 0.0), (750, 0.05), (1000, 0.5)], [(0.30, 1.0158)], True,
                          1000, 250, 0.3, "x")
    assert (moved.step, moved.label) == (1000, "AMBIGUOUS")
    both = decision_lock(points, [(0.30, 1.0158), (0.125, 0.3)], True, 1000, 250, 0.07, "x")
    assert (both.step, both.label) == (750, "HEALTHY")  # both rules settled from 750 on
    assert decision_lock(points, [(0.30, 1.0158)], True, 1000, 250, None, "why").step is None


def test_without_a_stated_change_it_comes_from_the_banked_comparators(tmp_path):
    write_log(tmp_path / "b" / "train_log.jsonl",
              records(probes={250: (3.4, 3.6), 500: (3.1, 3.2), 750: (3.4, 3.3),
                              1000: (3.5, 3.4)}))
    assert main(["bank", str(tmp_path / "b"), "--as", "drifty"]) == 0
    path = without_amendments(tmp_path)
    path.write_text(path.read_text().replace("[gates]", '[comparators.drifty]\nbank = "drifty"'
                                             '\n\n[gates]'))
    v = compute_verdict(store_at(1000), load_preset(path))
    assert v.decision is not None
    assert v.decision.max_change == pytest.approx(0.3)  # drifty's 500 -> 750
    assert v.decision.source == ("the largest among the banked comparators: drifty, step 500 "
                                 "to 750")
    plain = compute_verdict(store_at(1000), load_preset(without_amendments(tmp_path)))
    assert plain.decision is not None and plain.decision.max_change is None
    assert plain.decision.describe().startswith("decision lock unknown: no verdict.max_probe_")
