"""When `[gates] stop_on_lock` asks for a stop: a locked decision, or the GPU-hours gate."""

from __future__ import annotations

from fontaine_tui.cli import main
from fontaine_tui.core.launch.alerts import RunWarning
from fontaine_tui.core.launch.gatestop import gate_stop
from fontaine_tui.core.log.read import load_lines
from fontaine_tui.core.verdict.rules import compute_verdict
from tests.core.verdict.test_stopped import CURVE, preset
from tests.logs import dumps, records

GATE = RunWarning("gpu-hours", "alert", 0.0, "GPU-hours 2.00 reached the gate 2 (1 GPU(s))", {})


def running_at(step: int):
    recs = [r for r in records(probes=CURVE) if r["step"] <= step and r.get("event") != "end"]
    return load_lines([b"".join(dumps(r).encode() + b"\n" for r in recs)])


def test_a_locked_decision_and_the_gpu_hours_gate_each_ask_for_a_stop(tmp_path):
    p = preset(tmp_path)
    locked, open_ = compute_verdict(running_at(760), p), compute_verdict(running_at(510), p)
    assert gate_stop(p, locked, ()) == ("decision-locked", "decision locked at step 750 (HEALTHY)")
    assert gate_stop(p, open_, ()) is None
    assert gate_stop(p, open_, (GATE,)) == (
        "gpu-hours-gate",
        "gpu-hours gate: GPU-hours 2.00 reached the gate 2 (1 GPU(s))",
    )
    warned = RunWarning("gpu-hours", "warn", 0.0, "past 80%", {})
    assert gate_stop(p, open_, (warned,)) is None  # the warning before the gate: no stop


def test_without_the_key_nothing_stops(tmp_path):
    p = preset(tmp_path, stop=False)
    assert gate_stop(p, compute_verdict(running_at(760), p), (GATE,)) is None


def test_presets_show_says_the_gate(tmp_path, capsys):
    assert main(["presets", "show", preset(tmp_path).path]) == 0
    assert (
        "# [gates] stop_on_lock: the run is stopped, with a checkpoint" in capsys.readouterr().out
    )
