"""The seed-noise floor: banked seeds of one recipe as a group, on the card and in `doctor`."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from tests.core.launch.conftest import without_amendments
from tests.logs import RIGONLY_LIKE, records, write_log

WIDE = (0.10, 0.40, -0.20)  # deltas 500 -> 1000: mean 0.1 ± 0.3, sd 0.3 (healthy_max 0.3 inside)
TIGHT = (0.90, 0.95, 1.00)  # mean 0.95 ± 0.05: both bounds (0.3, 1.0158) outside
SKEWED = (0.0, 0.05, 1.0)  # mean 0.35 ± 0.5 is -0.15..0.85; the seeds span 0..1


def seed_probes(delta: float) -> dict[int, tuple[float, float]]:
    return {
        250: (3.4, 3.6),
        500: (3.1, 3.25),
        750: (3.1 + delta / 2, 3.3),
        1000: (3.1 + delta, 3.4),
    }


def bank_seeds(tmp_path: Path, deltas=WIDE, seeds=(1, 2, 3), recipe=None) -> list[str]:
    """Bank one finished run per delta, its meta record saying its seed; their bank names."""
    names = []
    for i, (delta, seed) in enumerate(zip(deltas, seeds, strict=True)):
        name = f"s{i + 1}"
        recs = records(probes=seed_probes(delta))
        recs[0]["recipe"] = {"batch_size": 96, "seed": seed, **(recipe or {}).get(name, {})}
        write_log(tmp_path / name / "train_log.jsonl", recs)
        assert main(["bank", "add", str(tmp_path / name), "--as", name]) == 0
        names.append(name)
    return names


def seed_preset(tmp_path: Path, names: list[str], base: str = "demosonly_1gpu") -> Path:
    """The preset without its amendments, the banked seeds as `ref-seeds`, its seed group."""
    path = without_amendments(tmp_path, base)
    tables = "".join(f'[comparators.{n}]\nbank = "{n}"\ngroup = "ref-seeds"\n\n' for n in names)
    text = path.read_text().replace("[gates]", f"{tables}[gates]")
    path.write_text(text.replace("[verdict]\n", '[verdict]\nseed_group = "ref-seeds"\n', 1))
    return path


def verdict(capsys, log: Path, preset: Path, *extra: str) -> tuple[int, str]:
    capsys.readouterr()  # what banking the seeds printed
    code = main(["verdict", str(log), "--preset", str(preset), *extra])
    return code, capsys.readouterr().out


def test_a_read_outside_the_seed_noise_is_said_and_keeps_its_verdict(tmp_path, capsys):
    preset = seed_preset(tmp_path, bank_seeds(tmp_path))
    log = write_log(tmp_path / "run" / "train_log.jsonl", probes=RIGONLY_LIKE)  # delta 0.6929
    code, out = verdict(capsys, log, preset)
    assert code == 4 and "VERDICT: AMBIGUOUS  [final]" in out
    assert (
        "seed noise: delta 0.6929 is outside the seed noise of ref-seeds "
        "(0.1 ± 0.3 at step 1000, 3 seeds: range -0.2..0.4)\n" in out
    )
    assert "seeds: s1 (seed 1) 0.1, s2 (seed 2) 0.4, s3 (seed 3) -0.2; sd 0.3;" in out
    assert "inside/outside by the seeds' range (min..max); the verdict is the rule's" in out
    # the bound inside the noise is said on the card too
    assert "WARNING: verdict.healthy_max 0.3 is inside the seed noise of ref-seeds" in out

    code, out = verdict(capsys, log, preset, "--json")
    noise = json.loads(out)["seed_noise"]
    assert code == 4
    assert noise["group"] == "ref-seeds" and noise["step"] == 1000 and noise["read"] == "delta"
    assert [(s["name"], s["seed"]) for s in noise["seeds"]] == [("s1", 1), ("s2", 2), ("s3", 3)]
    assert noise["n"] == 3 and noise["decided_by"] == "the seeds' range (min..max)"
    assert noise["mean"] == pytest.approx(0.1) and noise["half_range"] == pytest.approx(0.3)
    assert noise["sd"] == pytest.approx(statistics.stdev(WIDE))
    assert (noise["low"], noise["high"]) == (pytest.approx(-0.2), pytest.approx(0.4))
    assert noise["value"] == pytest.approx(0.6929) and noise["outside"] is True
    assert [line.split(" is ")[0] for line in noise["bounds_inside"]] == ["verdict.healthy_max 0.3"]


def test_a_read_inside_the_seed_noise_is_said_and_the_label_stays_the_rules(tmp_path, capsys):
    preset = seed_preset(tmp_path, bank_seeds(tmp_path))
    for delta, code_wanted, label in ((0.35, 4, "AMBIGUOUS"), (0.2, 0, "HEALTHY")):
        log = write_log(tmp_path / f"run{delta}" / "train_log.jsonl", probes=seed_probes(delta))
        code, out = verdict(capsys, log, preset)
        assert code == code_wanted and f"VERDICT: {label}  [final]" in out
        assert (
            f"seed noise: delta {delta} is inside the seed noise of ref-seeds (0.1 ± 0.3 at "
            "step 1000, 3 seeds: range -0.2..0.4): the rule cannot tell this read from seed noise"
            in out
        )
        code, out = verdict(capsys, log, preset, "-j")
        doc = json.loads(out)
        assert doc["verdict"] == label and doc["seed_noise"]["outside"] is False


def test_the_seeds_range_decides_so_a_seed_is_never_outside_its_own_noise(tmp_path, capsys):
    preset = seed_preset(tmp_path, bank_seeds(tmp_path, deltas=SKEWED))
    log = write_log(tmp_path / "run" / "train_log.jsonl", probes=seed_probes(0.95))
    code, out = verdict(capsys, log, preset, "--json")
    noise = json.loads(out)["seed_noise"]
    assert code == 4 and noise["mean"] == pytest.approx(0.35)
    assert (noise["low"], noise["high"]) == (pytest.approx(0.0), pytest.approx(1.0))
    assert noise["outside"] is False  # beyond mean + half-range 0.85, within the seeds' 0..1
    assert noise["text"].startswith("delta 0.95 is inside the seed noise of ref-seeds")


def test_one_seed_is_no_floor(tmp_path, capsys):
    preset = seed_preset(tmp_path, bank_seeds(tmp_path, deltas=(0.1,), seeds=(1,)))
    log = write_log(tmp_path / "run" / "train_log.jsonl", probes=RIGONLY_LIKE)
    code, out = verdict(capsys, log, preset)
    assert code == 4
    assert (
        "seed noise: no seed-noise floor at step 1000: need ≥ 2 seeds of ref-seeds, 1 measured"
        in out
    )
    code, out = verdict(capsys, log, preset, "--json")
    noise = json.loads(out)["seed_noise"]
    assert noise["n"] == 1 and noise["mean"] is None and noise["outside"] is None


def test_seeds_that_are_not_independent_are_one_line_exit_2(tmp_path, capsys):
    log = write_log(tmp_path / "run" / "train_log.jsonl", probes=RIGONLY_LIKE)
    preset = seed_preset(tmp_path, bank_seeds(tmp_path, seeds=(1, 2, 1)))
    assert main(["verdict", str(log), "--preset", str(preset)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "comparators.s3.bank: recipe.seed 1, the same as comparators.s1's (s1@" in err[0]
    assert "the seeds of verdict.seed_group 'ref-seeds' must be independent runs" in err[0]


def test_one_run_banked_twice_is_not_two_seeds(tmp_path, capsys):
    """A copy under another name (no seed in its meta): the same probes, refused."""
    names = bank_seeds(tmp_path, deltas=(0.1, 0.2), seeds=(None, None))
    capsys.readouterr()
    assert main(["bank", "add", str(tmp_path / "s1"), "--as", "s1copy"]) == 0
    log = write_log(tmp_path / "run" / "train_log.jsonl", probes=RIGONLY_LIKE)
    preset = seed_preset(tmp_path, [*names, "s1copy"])
    capsys.readouterr()
    assert main(["verdict", str(log), "--preset", str(preset)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "comparators.s1copy.bank: every probe the same as comparators.s1's" in err[0]


def test_seeds_of_other_recipes_are_refused(tmp_path, capsys):
    log = write_log(tmp_path / "run" / "train_log.jsonl", probes=RIGONLY_LIKE)
    names = bank_seeds(tmp_path, recipe={"s2": {"lr": 0.002}})
    assert main(["verdict", str(log), "--preset", str(seed_preset(tmp_path, names))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "comparators.s2.bank: recipe.lr 0.002, comparators.s1's None" in err[0]


def test_a_seed_group_naming_no_group_is_refused(tmp_path, capsys):
    log = write_log(tmp_path / "run" / "train_log.jsonl", probes=RIGONLY_LIKE)
    preset = seed_preset(tmp_path, bank_seeds(tmp_path))
    preset.write_text(preset.read_text().replace('seed_group = "ref-seeds"', 'seed_group = "x"'))
    assert main(["verdict", str(log), "--preset", str(preset)]) == 2
    err = capsys.readouterr().err
    assert "verdict.seed_group: expected the `group` of some [comparators.*] tables, got 'x'" in err


def test_a_preset_without_a_seed_group_keeps_its_sha256(tmp_path, capsys):
    from fontaine_tui.core.preset.find import load_preset

    plain = without_amendments(tmp_path)
    stated = tmp_path / "stated.toml"
    stated.write_text(plain.read_text().replace("[verdict]\n", '[verdict]\nseed_group = ""\n'))
    assert load_preset(stated).sha256 == load_preset(plain).sha256


def doctor(capsys, preset: Path, tmp_path: Path) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["doctor", str(preset), "--output-dir", str(tmp_path / "new")])
    return code, capsys.readouterr().out


def test_doctor_warns_of_a_bound_inside_the_seed_noise(tmp_path, capsys):
    preset = seed_preset(tmp_path, bank_seeds(tmp_path), base="smoke")
    smoke = preset.read_text().replace("anchor_step = 20", "anchor_step = 500")
    preset.write_text(smoke.replace("endpoint_step = 40", "endpoint_step = 1000"))
    preset.write_text(preset.read_text().replace("steps = 40", "steps = 1000"))
    code, out = doctor(capsys, preset, tmp_path)
    assert code == 0 and "launch would go ahead" in out  # a warning, as doctor's others are
    assert (
        "  warn  seeds  verdict.healthy_max 0.3 is inside the seed noise of ref-seeds "
        "(±0.3 around 0.1, range -0.2..0.4 at step 1000, 3 seeds): this rule cannot tell "
        "HEALTHY from noise"
    ) in out
    assert "drift_min 1.0158 is inside" not in out
    assert "seed noise of ref-seeds: 0.1 ± 0.3 at step 1000, 3 seeds: range -0.2..0.4;" in out


def test_doctor_says_nothing_of_bounds_outside_the_seed_noise(tmp_path, capsys):
    preset = seed_preset(tmp_path, bank_seeds(tmp_path, deltas=TIGHT), base="smoke")
    smoke = preset.read_text().replace("anchor_step = 20", "anchor_step = 500")
    preset.write_text(smoke.replace("endpoint_step = 40", "endpoint_step = 1000"))
    preset.write_text(preset.read_text().replace("steps = 40", "steps = 1000"))
    code, out = doctor(capsys, preset, tmp_path)
    assert code == 0
    assert "is inside the seed noise" not in out
    assert "ok  seeds  the rule's bounds lie outside the seed noise of ref-seeds" in out
