"""Distance to the bounds and the decision lock, on fixture curves: the step where it locks
and the step before it; the largest per-probe change stated or taken from the bank."""

from __future__ import annotations

import json

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.log.read import load_lines
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.verdict.lock import decision_lock, remaining_probes
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
    path.write_text(
        path.read_text().replace(
            "drift_min = 1.0158", f"drift_min = 1.0158\nmax_probe_change = {change}"
        )
    )
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
    assert at.describe() == (
        "decision locked at step 750 (HEALTHY): no remaining probe can "
        "change it (largest change per probe 0.2000, stated in the "
        "preset (verdict.max_probe_change))"
    )
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
    moved = decision_lock(
        [(500, 0.0), (750, 0.05), (1000, 0.5)], [(0.30, 1.0158)], True, 1000, 250, 0.3, "x"
    )
    assert (moved.step, moved.label) == (1000, "AMBIGUOUS")
    both = decision_lock(points, [(0.30, 1.0158), (0.125, 0.3)], True, 1000, 250, 0.07, "x")
    assert (both.step, both.label) == (750, "HEALTHY")  # both rules settled from 750 on
    assert decision_lock(points, [(0.30, 1.0158)], True, 1000, 250, None, "why").step is None


def test_the_probe_at_an_endpoint_off_the_cadence_is_counted():
    """Probes every 40 steps to an endpoint of 300, which is probed too: from 280, one probe
    (300) is still to come; from 240, two (280 and 300)."""
    at_280 = decision_lock([(280, 0.2)], [(0.30, 5.0)], True, 300, 40, 0.5, "x")
    assert at_280.step is None  # 0.2 + 0.5 crosses 0.30: the probe at 300 can still move it
    near = decision_lock([(240, 0.0), (280, 0.0)], [(0.30, 5.0)], True, 300, 40, 0.2, "x")
    assert near.step == 280  # from 240, two probes x 0.2 reach 0.4; from 280, one reaches 0.2
    assert remaining_probes(280, 300, 40) == 1 and remaining_probes(240, 300, 40) == 2
    assert remaining_probes(260, 300, 40) == 1 and remaining_probes(300, 300, 40) == 0


def test_without_a_stated_change_it_comes_from_the_banked_comparators(tmp_path):
    write_log(
        tmp_path / "b" / "train_log.jsonl",
        records(probes={250: (3.4, 3.6), 500: (3.1, 3.2), 750: (3.4, 3.3), 1000: (3.5, 3.4)}),
    )
    assert main(["bank", "add", str(tmp_path / "b"), "--as", "drifty"]) == 0
    path = without_amendments(tmp_path)
    path.write_text(
        path.read_text().replace("[gates]", '[comparators.drifty]\nbank = "drifty"\n\n[gates]')
    )
    v = compute_verdict(store_at(1000), load_preset(path))
    assert v.decision is not None
    assert v.decision.max_change == pytest.approx(0.3)  # drifty's 500 -> 750
    assert v.decision.source == (
        "the largest among the banked comparators: drifty, step 500 to 750"
    )
    plain = compute_verdict(store_at(1000), load_preset(without_amendments(tmp_path)))
    assert plain.decision is not None and plain.decision.max_change is None
    assert plain.decision.describe().startswith("decision lock unknown: no verdict.max_probe_")


def _jsonl_run(folder, evals):
    """A JSONL log as another trainer writes it: a train line every step, an eval line at
    each probe step in `evals` (step -> eval/chunk_mae)."""
    folder.mkdir(parents=True)
    with open(folder / "log.jsonl", "w") as f:
        for step in range(1, max(evals) + 1):
            f.write(json.dumps({"step": step, "train/loss": 1.0 / step}) + "\n")
            if step in evals:
                f.write(json.dumps({"step": step, "eval/chunk_mae": evals[step]}) + "\n")
    return folder


def _foreign(tmp_path, source_extra=""):
    """A [source] preset with no recipe: anchor 30, endpoint 60 (their gcd is 30)."""
    path = tmp_path / "cadence.toml"
    path.write_text(f"""[run]
name = "cadence"

[source]
kind = "jsonl"
{source_extra}

[verdict]
metric = "eval/chunk_mae"
anchor_step = 30
endpoint_step = 60
healthy_max = 0.3
drift_min = 1.0
max_probe_change = 0.1
""")
    return path


def test_a_foreign_run_probed_every_10_is_not_locked_while_probe_50_can_cross(tmp_path, capsys):
    # probes every 10; at 40 the delta is +0.25: the probes at 50 and 60 can each add 0.1,
    # so the read can still cross healthy_max 0.3. gcd(30, 60) = 30 would count no probe
    # left before 60 and call it locked.
    run = _jsonl_run(tmp_path / "run", {10: 2.9, 20: 2.8, 30: 2.7, 40: 2.95})
    code = main(["verdict", str(run), "--preset", str(_foreign(tmp_path)), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 10 and doc["read_step"] == 40  # HEALTHY, provisional
    assert doc["decision"]["locked_at"] is None
    assert doc["decision"]["probe_every"] == 10
    assert doc["decision"]["probe_every_from"] == (
        "the smallest gap between the probes seen (step 10 to 20)"
    )
    main(["verdict", str(run), "--preset", str(_foreign(tmp_path))])
    assert "decision not locked: a remaining probe can still change it" in capsys.readouterr().out


def test_a_foreign_run_locks_where_no_remaining_probe_can_cross(tmp_path, capsys):
    run = _jsonl_run(tmp_path / "run", {10: 2.9, 20: 2.8, 30: 2.7, 40: 2.75})
    assert main(["verdict", str(run), "--preset", str(_foreign(tmp_path)), "--json"]) == 10
    doc = json.loads(capsys.readouterr().out)["decision"]
    # at 30 (the anchor, 0.0) three probes left, reach 0.3: [-0.3, +0.3] is all HEALTHY (a
    # read on the bound is on it); at 40 +0.05, two left: [-0.15, +0.25]: still HEALTHY
    assert (doc["locked_at"], doc["label"], doc["probe_every"]) == (30, "HEALTHY", 10)


def test_with_one_probe_seen_and_no_cadence_stated_no_lock_is_claimed(tmp_path, capsys):
    # every probe so far is the anchor's: how many probes remain is unknown
    run = _jsonl_run(tmp_path / "run", {30: 2.7})
    main(["verdict", str(run), "--preset", str(_foreign(tmp_path)), "--json"])
    doc = json.loads(capsys.readouterr().out)["decision"]
    assert doc["locked_at"] is None and doc["probe_every"] is None
    main(["verdict", str(run), "--preset", str(_foreign(tmp_path))])
    assert (
        "decision not locked: the probe cadence is unknown (fewer than two probes seen "
        "and no eval_every in the preset)"
    ) in capsys.readouterr().out


def test_a_stated_cadence_counts_and_the_probes_seen_can_only_lower_it(tmp_path, capsys):
    one = _jsonl_run(tmp_path / "one", {30: 2.7})
    stated = _foreign(tmp_path, "eval_every = 10")
    main(["verdict", str(one), "--preset", str(stated), "--json"])
    doc = json.loads(capsys.readouterr().out)["decision"]
    # stated 10: three probes left from the anchor, reach 0.3 stays on the bound (the same
    # run without the key claims no lock: the test above)
    assert (doc["probe_every"], doc["probe_every_from"]) == (
        10,
        "stated in the preset (source.eval_every)",
    )
    assert (doc["locked_at"], doc["label"]) == (30, "HEALTHY")
    every5 = _jsonl_run(tmp_path / "five", {25: 2.8, 30: 2.7, 35: 2.7})
    main(["verdict", str(every5), "--preset", str(stated), "--json"])
    doc = json.loads(capsys.readouterr().out)["decision"]
    assert doc["probe_every"] == 5  # probes come more often than stated: theirs counts


def test_a_stated_source_cadence_must_be_a_positive_integer_and_match_a_recipe(tmp_path, capsys):
    run = _jsonl_run(tmp_path / "run", {30: 2.7})
    bad = _foreign(tmp_path, 'eval_every = "10"')
    assert main(["verdict", str(run), "--preset", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "source.eval_every" in err and "positive integer" in err
    assert len(err.splitlines()) == 1


def test_an_applied_extend_leaves_more_probes_to_come_and_no_lock(tmp_path):
    path = without_amendments(tmp_path)
    path.write_text(
        path.read_text()
        .replace("drift_min = 1.0158", "drift_min = 1.0158\nmax_probe_change = 0.2")
        .replace(
            "[gates]",
            '[[amendments]]\nid = 1\nkind = "extend"\nto_step = 1500'
            "\ndeclared_after_step = 500\ndeclared_before_step = 750\n"
            'text = "read later"\n\n[gates]',
        )
    )
    v = compute_verdict(store_at(750), load_preset(path))
    # locked at 750 with the endpoint at 1000 (the test above); at 1500 three probes remain
    assert v.endpoint_step == 1500 and v.decision is not None
    assert v.decision.step is None and v.decision.every == 250


def test_a_source_cadence_other_than_the_recipe_s_is_refused(tmp_path, capsys):
    run = _jsonl_run(tmp_path / "run", {30: 2.7})
    path = without_amendments(tmp_path)
    path.write_text(
        path.read_text().replace(
            "[verdict]", '[source]\nkind = "jsonl"\neval_every = 10\n\n[verdict]'
        )
    )
    assert main(["verdict", str(run), "--preset", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "source.eval_every: expected recipe.eval_every = 250 or left out, got 10" in err
    assert len(err.splitlines()) == 1
