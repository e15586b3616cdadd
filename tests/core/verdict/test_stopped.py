"""A run that ended before its endpoint under `[gates] stop_on_lock`: the locked read is final.

The lock is computed again from the evidence; without it (or without the gate) the read stays
UNDECIDABLE, naming why."""

from __future__ import annotations

from fontaine_tui.core.log.read import load_lines
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.verdict.rules import compute_verdict
from fontaine_tui.core.verdict.text import render
from tests.core.launch.conftest import without_amendments
from tests.logs import dumps, records

CURVE = {250: (3.40, 3.6), 500: (3.10, 3.2), 750: (3.15, 3.25), 1000: (3.20, 3.3)}


def stopped_at(step: int, probes=CURVE):
    """The run's records up to `step`, then the engine's end event of a SIGINT stop."""
    recs = [r for r in records(probes=probes) if r["step"] <= step and r.get("event") != "end"]
    end = {"kind": "event", "step": step, "time": 2e9, "event": "end"}
    recs.append({**end, "detail": f"stopped by SIGINT at step {step}"})
    return load_lines([b"".join(dumps(r).encode() + b"\n" for r in recs)])


def preset(tmp_path, change: str = "0.2", stop: bool = True):
    path = without_amendments(tmp_path)
    text = path.read_text().replace(
        "drift_min = 1.0158", f"drift_min = 1.0158\nmax_probe_change = {change}"
    )
    if stop:
        text = text.replace("[gates]\n", "[gates]\nstop_on_lock = true\n")
    path.write_text(text)
    return load_preset(path)


def test_a_run_stopped_after_its_lock_reads_the_locked_label_as_final(tmp_path):
    v = compute_verdict(stopped_at(760), preset(tmp_path))
    assert (v.verdict, v.provisional, v.read_step) == ("HEALTHY", False, 750)
    assert v.reason.startswith("stopped at step 760: decision locked at step 750; ")
    assert v.decision is not None and v.decision.stops
    text = render(v)
    assert "VERDICT: HEALTHY  [final]  stopped at step 760: decision locked at step 750" in text
    assert "[gates] stop_on_lock: the run stops on a locked decision" in text
    assert v.to_json()["decision"]["stop_on_lock"] is True


def test_without_the_gate_the_same_stop_is_undecidable(tmp_path):
    v = compute_verdict(stopped_at(760), preset(tmp_path, stop=False))
    assert v.verdict == "UNDECIDABLE" and "no probe at the endpoint (step 1000)" in v.reason
    assert v.decision is None  # no read at the endpoint: nothing to lock on


def test_a_stop_before_the_lock_stays_undecidable_and_says_why(tmp_path):
    # at 500: delta 0, two probes left, reach 0.4 crosses healthy_max 0.30: not locked
    v = compute_verdict(stopped_at(510), preset(tmp_path))
    assert v.verdict == "UNDECIDABLE" and not v.provisional
    assert "no probe at the endpoint (step 1000)" in v.reason
    assert "stopped at step 510: decision not locked: a remaining probe can still" in v.reason


def test_the_gate_stays_out_of_the_hash_until_set(tmp_path):
    off, on = preset(tmp_path, stop=False), preset(tmp_path)
    assert "stop_on_lock" not in off.canonical["gates"]
    assert on.canonical["gates"]["stop_on_lock"] is True and on.sha256 != off.sha256
    assert load_preset("smoke").sha256.startswith("7b90f466640b")  # as frozen before the key


def test_a_log_without_its_end_reads_the_lock_at_the_step_its_gate_stopped_it(tmp_path):
    # another trainer's log may never say it ended: attempts.jsonl's stop says where
    recs = [r for r in records(probes=CURVE) if r["step"] <= 760 and r.get("event") != "end"]
    store = load_lines([b"".join(dumps(r).encode() + b"\n" for r in recs)])
    p = preset(tmp_path)
    assert compute_verdict(store, p).provisional
    v = compute_verdict(store, p, ended=760)
    assert (v.verdict, v.provisional, v.read_step) == ("HEALTHY", False, 750)
    assert v.reason.startswith("stopped at step 760: decision locked at step 750; ")


def test_a_lock_at_the_anchor_is_not_taken_for_the_endpoint(tmp_path):
    """Stopped before any probe after the anchor, where the delta is 0 by definition."""
    p = preset(tmp_path, change="0.01")  # two probes of 0.01 cannot reach 0.30 from 0 at 500
    v = compute_verdict(stopped_at(510), p)
    assert v.verdict == "UNDECIDABLE" and not v.provisional, v.reason
    assert "but no probe after the anchor (step 500) had been read" in v.reason


def test_a_lock_whose_premise_the_run_contradicts_is_not_taken(tmp_path):
    """The run moved more in one probe than the lock assumes a probe can."""
    jumpy = {**CURVE, 750: (2.85, 3.25)}  # 500 -> 750: -0.25, over the stated 0.2
    recs = [r for r in records(probes=jumpy) if r["step"] <= 760 and r.get("event") != "end"]
    end = {"kind": "event", "step": 760, "time": 2e9, "event": "end", "detail": "stopped"}
    store = load_lines([b"".join(dumps(r).encode() + b"\n" for r in [*recs, end])])
    v = compute_verdict(store, preset(tmp_path))
    assert v.verdict == "UNDECIDABLE" and not v.provisional, v.reason
    assert "at most 0.2, but it moved 0.25 from step 500 to 750" in v.reason
