"""Presets: the reference encoded faithfully; every bad preset is one line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.preset.checks import PresetError
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.validate import preset_from_canonical

ROOT = Path(__file__).resolve().parents[3]

BAD = Path(__file__).resolve().parents[2] / "data" / "presets_bad"
CASES = [line.split("\t") for line in (BAD / "expected.tsv").read_text().splitlines() if line]


def test_demosonly_encodes_the_preregistration(demosonly):
    r, p, v = demosonly.recipe, demosonly.platform, demosonly.verdict
    assert demosonly.run_name == "grasp_sft_v2_demosonly_1gpu_disc"
    assert (r["batch_size"], r["backward_chunks"], r["seed"]) == (96, 8, 0)
    assert r["batch_size"] // r["backward_chunks"] // p["nproc"] == 12  # micro-batch 12
    assert r["image_augment"] == 0.8 and r["recompute_stats"] and r["insulate_flow"]
    assert (r["objective"], r["flow_decoder_init"]) == ("joint", "inherit")
    assert (r["eval_every"], r["save_every"], r["steps"]) == (250, 500, 1000)
    assert r["eval_dataset_breakdown"]
    assert (p["num_workers"], p["prefetch_factor"], p["nproc"]) == (8, 4, 1)
    assert (v.anchor_step, v.endpoint_step, v.healthy, v.drift) == (500, 1000, 0.30, 1.0158)
    deltas = {n: c.delta for n, c in demosonly.comparators.items()}
    assert deltas == {
        "demosonly": 2.0317,
        "mixedv2": 2.3319,
        "run2_pooled": 0.4640,
        "rigonly": 0.6929,
    }
    ref = demosonly.reference
    assert (ref.level_step, ref.eval_level, ref.train_level) == (250, 3.4623, 3.6862)
    (a,) = demosonly.amendments
    assert (a.kind, a.from_step, a.comparator, a.declared_before_step) == (
        "scale",
        250,
        "demosonly",
        500,
    )
    assert demosonly.gates["gpu_hours"] == 12
    assert (demosonly.gates["step_s_estimate_min"], demosonly.gates["step_s_estimate_max"]) == (
        25,
        32,
    )
    assert demosonly.interpretation["HEALTHY"].startswith("CONVICTED")
    assert demosonly.interpretation["SAME-DRIFT"].startswith("EXONERATED")
    assert "escalate" in demosonly.interpretation["AMBIGUOUS"]


def test_canonical_form_round_trips_with_the_same_hash(demosonly):
    again = preset_from_canonical(demosonly.canonical, "prereg.json#demosonly_1gpu")
    assert again.sha256 == demosonly.sha256
    assert len(demosonly.sha256) == 64


@pytest.mark.parametrize("path", sorted((ROOT / "presets").glob("*.toml")), ids=lambda p: p.stem)
def test_every_shipped_preset_reads_back_as_frozen(path):
    """What prereg.json freezes is read back as the same preset: pretrain_so101's [labels]
    rename the classes its [interpretation] is keyed by, and the frozen form was refused."""
    if "bank = " in path.read_text():
        pytest.skip(f"{path.name} compares with a banked run, which this test's bank lacks")
    preset = load_preset(path)
    again = preset_from_canonical(preset.canonical, f"prereg.json#{path.stem}")
    assert again.sha256 == preset.sha256 and again.interpretation == preset.interpretation


def test_a_label_that_is_another_class_s_name_is_refused(tmp_path):
    """Labels swapping two class names would make the frozen interpretation (keyed by class)
    read back as the other class's words, and a reader take one class for the other."""
    text = (ROOT / "presets" / "pretrain_so101.toml").read_text()
    head, _, _ = text.partition("[labels]")
    path = tmp_path / "swap.toml"
    path.write_text(
        head + '[labels]\nHEALTHY = "AMBIGUOUS"\nAMBIGUOUS = "HEALTHY"\n\n[interpretation]\n'
        'AMBIGUOUS = "the healthy class\'s words"\nHEALTHY = "the ambiguous class\'s words"\n'
    )
    with pytest.raises(PresetError, match="labels.HEALTHY: expected a label that is no other"):
        load_preset(path)


def test_a_change_to_a_bound_changes_the_hash(demosonly, tmp_path):
    src = Path(demosonly.path).read_text().replace("healthy_max = 0.30", "healthy_max = 0.31")
    (tmp_path / "x.toml").write_text(src)
    assert load_preset(tmp_path / "x.toml").sha256 != demosonly.sha256


@pytest.mark.parametrize(("name", "key"), CASES, ids=[c[0] for c in CASES])
def test_bad_preset_is_one_line_naming_file_and_key(name, key, capsys):
    path = BAD / f"{name}.toml"
    with pytest.raises(PresetError) as info:
        load_preset(path)
    assert info.value.key == key
    assert main(["presets", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert str(path) in err and key in err and "Traceback" not in err


def test_bad_preset_through_the_real_command_exits_2():
    path = BAD / "wrong_type.toml"
    proc = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(path), "--preset", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "recipe.batch_size" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_preset_count():
    assert len(CASES) >= 12
