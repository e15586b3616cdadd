"""`fontaine-tui verdict` and `presets` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

from fontaine_tui.cli import main
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.logs import RIGONLY_LIKE, write_log


def test_verdict_text_shows_both_rules_side_by_side(tmp_path, capsys):
    log = write_log(tmp_path / "train_log.jsonl", probes=RIGONLY_LIKE)
    assert main(["verdict", str(log), "--preset", "demosonly_1gpu"]) == 4
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "raw rule" in line)
    assert "scale-adjusted" in header
    reads = next(line for line in out.splitlines() if line.startswith("reads"))
    assert reads.split()[1:] == ["AMBIGUOUS", "AMBIGUOUS"]
    assert "VERDICT: AMBIGUOUS  [final]" in out
    assert "Rigonly-class" in out


def test_verdict_json_and_at_step(tmp_path, capsys):
    log = write_log(tmp_path / "train_log.jsonl", probes=RIGONLY_LIKE)
    assert (
        main(["verdict", str(log), "--preset", "demosonly_1gpu", "--json", "--at-step", "750"])
        == 14
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["provisional"] is True and doc["read_step"] == 750
    assert doc["verdict"] == "AMBIGUOUS"


def test_verdict_on_a_run_folder_uses_prereg(tmp_path, capsys, demosonly):
    write_log(tmp_path / "train_log.jsonl", probes=RIGONLY_LIKE)
    freeze(RunFolder(tmp_path), demosonly, ["python", "-m", "fontaine_engine", "train"], "host")
    assert main(["verdict", str(tmp_path)]) == 4
    assert demosonly.sha256[:12] in capsys.readouterr().out
    doc = json.loads((tmp_path / "prereg.json").read_text())
    doc["preset"]["verdict"]["healthy_max"] = 0.7  # loosen a bound after launch
    (tmp_path / "prereg.json").write_text(json.dumps(doc))
    assert main(["verdict", str(tmp_path)]) == 2
    assert "prereg.json was edited" in capsys.readouterr().err


def test_bad_inputs_exit_2_with_one_line(tmp_path, capsys):
    log = write_log(tmp_path / "train_log.jsonl", probes=RIGONLY_LIKE)
    cases = [
        ["verdict", str(tmp_path / "missing.jsonl"), "--preset", "demosonly_1gpu"],
        ["verdict", str(log), "--preset", "no_such_preset"],
        ["verdict", str(log), "--preset", "demosonly_1gpu", "--at-step", "600"],
        ["verdict", str(log)],
        ["presets", "show"],
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("fontaine-tui: error:"), err


def test_installed_command_exit_codes(tmp_path):
    healthy = write_log(
        tmp_path / "h.jsonl", probes={250: (3.4623, 3.6), 500: (3.0, 3.1), 1000: (3.1, 3.1)}
    )
    drift = write_log(
        tmp_path / "d.jsonl", probes={250: (3.4623, 3.6), 500: (3.0, 3.1), 1000: (4.5, 3.1)}
    )
    codes = [
        subprocess.run(
            [sys.executable, "-m", "fontaine_tui", "verdict", str(p), "--preset", "demosonly_1gpu"],
            capture_output=True,
            timeout=60,
        ).returncode
        for p in (healthy, drift)
    ]
    assert codes == [0, 3]


def test_presets_list_and_show(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "demosonly_1gpu" in out and "smoke" in out
    assert main(["presets", "show", "demosonly_1gpu"]) == 0
    out = capsys.readouterr().out
    assert "sha256 (canonical form):" in out and "[recipe]" in out


def test_a_run_folder_refuses_a_preset_that_differs_from_its_frozen_one(
    tmp_path, capsys, demosonly
):
    from tests.core.launch.conftest import preset_variant

    run = tmp_path / "run"
    run.mkdir()
    write_log(run / "train_log.jsonl", probes=RIGONLY_LIKE)
    freeze(RunFolder(run), demosonly, ["python", "-m", "fontaine_engine", "train"], "host")
    loose = preset_variant(tmp_path, "demosonly_1gpu", name="loose", healthy_max="0.7")
    for target in (run, run / "train_log.jsonl"):
        assert main(["verdict", str(target), "--preset", str(loose)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "verdict.healthy_max: frozen 0.3, given 0.7" in err[0]
    knobs = preset_variant(tmp_path, "demosonly_1gpu", name="knobs", num_workers="2")
    assert main(["verdict", str(run), "--preset", str(knobs)]) == 4  # machinery only: frozen read
    assert main(["verdict", str(run), "--preset", "demosonly_1gpu"]) == 4
    # a bare log with no prereg.json beside it is read with the preset given (here: HEALTHY)
    bare = write_log(tmp_path / "bare.jsonl", probes=RIGONLY_LIKE)
    assert main(["verdict", str(bare), "--preset", str(loose)]) == 0


def test_a_foreign_source_preset_cannot_bypass_the_frozen_prereg(tmp_path, capsys, demosonly):
    # a launched run (prereg.json) that drifted: delta +1.5 at the endpoint
    write_log(
        tmp_path / "train_log.jsonl", probes={250: (3.4623, 3.6), 500: (3.0, 3.1), 1000: (4.5, 3.1)}
    )
    freeze(RunFolder(tmp_path), demosonly, ["python", "-m", "fontaine_engine", "train"], "host")
    assert main(["verdict", str(tmp_path)]) == 3
    capsys.readouterr()
    text = open(demosonly.path).read()
    for was, now in (
        ("drift_min = 1.0158", "drift_min = 5.0"),
        ("healthy_max = 0.30", "healthy_max = 3.0"),
        ('reference = "demosonly"', ""),
        ("drift_fraction = 0.5", ""),
    ):
        text = text.replace(was, now)
    loose = tmp_path.parent / "loose.toml"
    loose.write_text(
        text + '\n[source]\nkind = "jsonl"\npath = "train_log.jsonl"\neval = ["eval_chunk_mae"]\n'
    )
    copy = tmp_path.parent / "copy"  # the same log without a prereg.json: the loose read
    copy.mkdir()
    (copy / "train_log.jsonl").write_bytes((tmp_path / "train_log.jsonl").read_bytes())
    assert main(["verdict", str(copy), "--preset", str(loose)]) == 0
    capsys.readouterr()
    for target in (tmp_path, tmp_path / "train_log.jsonl"):
        assert main(["verdict", str(target), "--preset", str(loose)]) == 2
        err = capsys.readouterr().err
        assert "frozen pre-registration" in err and "healthy_max" in err, err
