"""`fontaine-tui bank add` of a run the `[gates] stop_on_lock` gate stopped.

The gate stops a run once its decision locks: the engine, or another trainer, may never log its
end, and attempts.jsonl records the stop. `verdict` reads the locked read as final once the log
reached the recorded step; `bank add` takes the same stop as the run's end (no `--ended`), and
a log that has not reached it yet is not finished. Real run folders, the real CLI."""

from __future__ import annotations

import json
import time

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.commands.test_bank_blind import BLIND, write_log
from tests.commands.test_surfaces_agree import cli, gate_stop, make, records
from tests.logs import dumps

# a run whose decision locks HEALTHY at 750 (0.2 a probe at most: +0.0 can reach +0.2 of 0.3)
GATED = {
    "blind": False,
    "lock": 0.2,
    "stop_on_lock": True,
    "amend": None,
    "restart": False,
    "values": {250: 3.2, 500: 3.1, 750: 3.1, 1000: 3.1},
    "cut": "gated-760",
}


def test_bank_add_takes_the_gate_stop_as_the_end_of_a_run_of_ours(tmp_path):
    root = make(tmp_path, GATED)
    code, out, err = cli("verdict", str(root), "--json")
    doc = json.loads(out)
    assert (doc["verdict"], doc["provisional"], doc["read_step"]) == ("HEALTHY", False, 750), err
    code, out, err = cli("bank", "add", str(root), "--as", "gated")
    assert code == 0, err
    code, out, err = cli("bank", "show", "gated", "-j")
    assert code == 0 and [p["step"] for p in json.loads(out)["probes"]] == [250, 500, 750]


def test_a_log_short_of_the_gate_stop_is_not_finished(tmp_path):
    # the log as a follower still catching up holds it: the stop at 760 is not reached yet
    root = make(tmp_path, GATED)
    early = records(GATED, 600, time.time() - 200)
    (root / "train_log.jsonl").write_text("".join(dumps(r) + "\n" for r in early))
    code, out, err = cli("verdict", str(root), "--json")
    assert json.loads(out)["provisional"] is True
    code, out, err = cli("bank", "add", str(root), "--as", "early")
    assert code == 2 and "the run has not finished" in err and not out, err
    assert cli("bank", "show", "early", "-j")[0] == 2


def test_bank_add_takes_the_gate_stop_of_another_trainers_run_without_ended(tmp_path):
    # a [command] run's JSONL log never says its end; its decision locks at 40 (+0.01, two
    # probes of 0.05 left below 0.3) and the gate stops it at 45
    preset = tmp_path / "gated.toml"
    text = BLIND.replace("blind = true\n", "max_probe_change = 0.05\n")
    preset.write_text(text + "\n[gates]\nstop_on_lock = true\n")
    root = tmp_path / "run"
    root.mkdir()
    freeze(RunFolder(root), load_preset(preset), ["python", "train.py"], "h")
    write_log(root, 45, {10: 2.84, 20: 2.82, 30: 2.80, 40: 2.81})
    gate_stop(root, 45, 40)
    code, out, err = cli("verdict", str(root), "--json")
    doc = json.loads(out)
    assert (doc["verdict"], doc["provisional"], doc["read_step"]) == ("HEALTHY", False, 40), err
    code, out, err = cli("bank", "add", str(root), "--as", "theirs")
    assert code == 0, err
    code, out, err = cli("bank", "show", "theirs", "-j")
    banked = json.loads(out)
    assert [p["step"] for p in banked["probes"]] == [10, 20, 30, 40]
    assert "stopped it at step 45" in banked["ended"], banked["ended"]
