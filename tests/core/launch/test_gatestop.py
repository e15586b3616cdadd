"""When `[gates] stop_on_lock` asks for a stop: a locked decision, or the GPU-hours gate.

The gate decides with the check the verdict of the stopped run applies (lock_doubt): at every
probe of a run, it asks for a stop exactly where the run, stopped there, reads its lock."""

from __future__ import annotations

from fontaine_tui.cli import main
from fontaine_tui.core.log.read import load_lines
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.verdict.rules import compute_verdict
from fontaine_tui.core.watch.alerts import RunWarning
from fontaine_tui.core.watch.gatestop import gate_stop
from tests.core.verdict.test_stopped import CURVE, preset, stopped_at
from tests.logs import dumps, records

GATE = RunWarning("gpu-hours", "alert", 0.0, "GPU-hours 2.00 reached the gate 2 (1 GPU(s))", {})


def running_at(step: int, probes=CURVE):
    recs = [r for r in records(probes=probes) if r["step"] <= step and r.get("event") != "end"]
    return load_lines([b"".join(dumps(r).encode() + b"\n" for r in recs)])


def asks(p, store, warnings=(), asked_blind=False):
    return gate_stop(store, p, compute_verdict(store, p), warnings, asked_blind=asked_blind)


def test_a_locked_decision_and_the_gpu_hours_gate_each_ask_for_a_stop(tmp_path):
    p = preset(tmp_path)
    assert asks(p, running_at(760)) == ("decision-locked", "decision locked at step 750 (HEALTHY)")
    assert asks(p, running_at(510)) is None
    assert asks(p, running_at(510), (GATE,)) == (
        "gpu-hours-gate",
        "gpu-hours gate: GPU-hours 2.00 reached the gate 2 (1 GPU(s))",
    )
    warned = RunWarning("gpu-hours", "warn", 0.0, "past 80%", {})
    assert asks(p, running_at(510), (warned,)) is None  # the warning before the gate: no stop


def test_without_the_key_nothing_stops(tmp_path):
    p = preset(tmp_path, stop=False)
    assert asks(p, running_at(760), (GATE,)) is None


def test_no_stop_on_a_lock_whose_premise_the_run_contradicts(tmp_path):
    """The lock holds at 760, but the read moved 0.25 from 500 to 750 where the lock assumes
    at most 0.2 a probe: the verdict of a run stopped there rejects it, so the gate does not
    stop the run on it."""
    jumpy = {**CURVE, 750: (2.85, 3.25)}
    p = preset(tmp_path)
    live = compute_verdict(running_at(760, jumpy), p)
    assert live.decision is not None and live.decision.step is not None  # the lock holds
    assert asks(p, running_at(760, jumpy)) is None


def test_the_gate_stops_exactly_where_the_stopped_run_reads_its_lock(tmp_path):
    """At each step of runs that lock, never lock, or lock on a premise they break, the gate
    asks for a stop if and only if the run, stopped there, reads a final label."""
    curves = [CURVE, {**CURVE, 750: (2.85, 3.25)}, {**CURVE, 750: (3.45, 3.25)}]
    for change in ("0.01", "0.2", "0.3"):
        p = preset(tmp_path, change=change)
        for curve in curves:
            for step in (260, 510, 760, 990):
                stop = asks(p, running_at(step, curve))
                v = compute_verdict(stopped_at(step, curve), p)
                assert (stop is not None) == (v.verdict != "UNDECIDABLE"), (change, curve, step)


def test_the_stop_on_a_blinded_read_keeps_its_label_hidden(tmp_path):
    path = preset(tmp_path).path
    blind = tmp_path / "blind.toml"
    blind.write_text(open(path).read().replace("[verdict]\n", "[verdict]\nblind = true\n", 1))
    p = load_preset(blind)
    hidden = ("decision-locked", "decision locked at step 750 (hidden (blinded))")
    assert asks(p, running_at(760)) == hidden
    # a viewer's --blind hides it as the preset's own blind does
    assert asks(preset(tmp_path), running_at(760), asked_blind=True) == hidden


def test_presets_show_says_the_gate(tmp_path, capsys):
    assert main(["presets", "show", preset(tmp_path).path]) == 0
    assert (
        "# [gates] stop_on_lock: the run is stopped, with a checkpoint" in capsys.readouterr().out
    )
