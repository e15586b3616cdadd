"""Comparators from the bank: `[comparators.NAME] bank = "NAME"`, pinned by sha256 in the
canonical form, frozen into prereg.json, a later change of the bank detected."""

from __future__ import annotations

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.bank import store as bank
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.run.evidence import seen_reads
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import compare, freeze, read_prereg
from tests.core.launch.conftest import without_amendments
from tests.logs import RIGONLY_LIKE, SCALED_LIKE, records, write_log


def banked(tmp_path, name="rig", probes=RIGONLY_LIKE, extra=""):
    write_log(tmp_path / name / "train_log.jsonl", records(probes=probes))
    assert main(["bank", "add", str(tmp_path / name), "--as", "rig", *extra.split()]) == 0
    path = without_amendments(tmp_path)
    path.write_text(
        path.read_text().replace(
            "[gates]", '[comparators.rig]\nbank = "rig"\nlevel_step = 250\n\n[gates]'
        )
    )
    return path


def test_a_banked_comparator_is_read_from_the_bank_and_pinned(tmp_path, capsys):
    preset = load_preset(banked(tmp_path))
    entry = bank.get("rig")
    rig = preset.comparators["rig"]
    assert rig.delta == pytest.approx(RIGONLY_LIKE[1000][0] - RIGONLY_LIKE[500][0])
    assert (rig.eval_level, rig.train_level) == RIGONLY_LIKE[250]
    assert rig.bank == f"rig@{entry.sha256}"
    assert rig.where == "banked run, fixture-host, 1 rank(s), cpu"
    assert preset.canonical["comparators"]["rig"]["bank"] == f"rig@{entry.sha256}"
    assert preset.comparators["demosonly"].where == "typed into the preset"


def test_the_frozen_bank_reference_reads_without_the_bank_and_a_change_is_detected(
    tmp_path, monkeypatch, capsys
):
    path = banked(tmp_path)
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    freeze(folder, load_preset(path), ["engine"], "h", now=1.8e9)
    first = bank.get("rig").sha256
    # elsewhere, no bank: the frozen numbers stand
    monkeypatch.setenv("FONTAINE_BANK", str(tmp_path / "elsewhere"))
    frozen = read_prereg(folder).frozen_preset()
    assert frozen.comparators["rig"].where == "banked run (its bank entry is not here)"
    assert frozen.comparators["rig"].delta == pytest.approx(0.6929)
    monkeypatch.setenv("FONTAINE_BANK", str(tmp_path / "bank"))
    assert read_prereg(folder).frozen_preset().sha256 == load_preset(path).sha256
    # the bank's `rig` replaced by another run: the preset no longer matches the frozen one
    write_log(tmp_path / "other" / "train_log.jsonl", records(probes=SCALED_LIKE))
    assert main(["bank", "add", str(tmp_path / "other"), "--as", "rig", "--replace"]) == 0
    change = compare(read_prereg(folder), load_preset(path))
    assert change is not None and change.math_changed
    assert f'comparators.rig.bank: frozen "rig@{first}", given "rig@' in change.detail
    # the frozen version is still banked: the run reads with what it was launched against
    assert read_prereg(folder).frozen_preset().comparators["rig"].bank == f"rig@{first}"


def test_bad_bank_references_are_one_line(tmp_path, bank_path):
    path = banked(tmp_path)
    text = path.read_text()
    path.write_text(text.replace('bank = "rig"', 'bank = "nope"'))
    with pytest.raises(InputError, match=r"comparators.rig.bank: bank nope: no such banked run"):
        load_preset(path)
    path.write_text(text.replace('bank = "rig"', 'bank = "rig"\ndelta = 0.7'))
    with pytest.raises(
        InputError,
        match="comparators.rig.delta: a banked comparator's delta is "
        "read from the banked run; remove it",
    ):
        load_preset(path)
    entry = bank.get("rig")
    stored = bank_path / "rig" / f"{entry.sha256}.json"
    stored.write_text(stored.read_text().replace('"run":"fixture"', '"run":"edited"'))
    path.write_text(text)
    with pytest.raises(InputError, match=r"comparators.rig.bank: .*does not match its sha256"):
        load_preset(path)


def test_a_scale_against_a_banked_run_shows_the_ar_ce_beside_it(tmp_path):
    from fontaine_tui.core.log.read import load_lines
    from fontaine_tui.core.verdict.rules import compute_verdict
    from fontaine_tui.core.verdict.text import render
    from tests.logs import dumps

    ref = records(probes=RIGONLY_LIKE)
    for r in ref:
        if r["kind"] == "eval" and r["step"] == 250:
            r["eval_ar_ce"] = 0.6116
    write_log(tmp_path / "ref" / "train_log.jsonl", ref)
    assert main(["bank", "add", str(tmp_path / "ref"), "--as", "demos"]) == 0
    path = without_amendments(tmp_path)
    path.write_text(
        path.read_text().replace(
            "[gates]",
            """[comparators.demos]
bank = "demos"
level_step = 250

[[amendments]]
id = 1
kind = "scale"
from_step = 250
comparator = "demos"
declared_after_step = 250
declared_before_step = 500

[gates]""",
        )
    )
    ours = records(
        probes={
            250: (12.5087, 12.4202),
            500: (12.9, 12.6),
            750: (13.3, 12.7),
            1000: (13.5929, 12.76),
        }
    )
    for r in ours:
        if r["kind"] == "eval" and r["step"] == 250:
            r["eval_ar_ce"] = 0.6385
    store = load_lines([b"".join(dumps(r).encode() + b"\n" for r in ours)])
    v = compute_verdict(store, load_preset(path))
    assert v.scale is not None and v.scale.value == pytest.approx(12.5087 / 3.4623)
    assert v.scale.evidence == (
        "eval AR CE at step 250: this run 0.6385, demos 0.6116 "
        "(ratio 1.044): the model tracks it while the units differ"
    )
    assert f"scale evidence: {v.scale.evidence}" in render(v)
    assert "caveat:" not in render(v)  # a banked comparator: compared like with like


def test_the_probes_chart_draws_banked_curves_and_their_envelope(tmp_path):
    from fontaine_tui.core.charts.probes import probes_chart
    from fontaine_tui.core.log.read import load_lines
    from fontaine_tui.core.verdict.rules import compute_verdict, verdict_series
    from tests.logs import dumps

    a = {250: (3.4, 3.6), 500: (3.1, 3.2), 750: (3.5, 3.3), 1000: (3.8, 3.4)}
    b = {250: (3.4, 3.6), 500: (3.0, 3.2), 1000: (4.0, 3.4)}  # no probe at 750
    for name, probes in (("a", a), ("b", b)):
        write_log(tmp_path / name / "train_log.jsonl", records(probes=probes))
        assert main(["bank", "add", str(tmp_path / name), "--as", f"run_{name}"]) == 0
    path = without_amendments(tmp_path)
    path.write_text(
        path.read_text().replace(
            "[gates]",
            """[comparators.run_a]
bank = "run_a"
group = "drifting"

[comparators.run_b]
bank = "run_b"
group = "drifting"

[gates]""",
        )
    )
    preset = load_preset(path)
    store = load_lines([b"".join(dumps(r).encode() + b"\n" for r in records(probes=RIGONLY_LIKE))])
    spec = probes_chart(
        seen_reads(store, verdict_series(store, preset), hidden=False),
        preset,
        compute_verdict(store, preset),
        scaled=False,
    )
    by_label = {c.label.split(" ")[0]: c for c in spec.curves}
    assert list(by_label["run_a"].xs) == [500.0, 750.0, 1000.0]
    assert list(by_label["run_a"].ys) == pytest.approx([0.0, 0.4, 0.7])
    assert list(by_label["run_b"].xs) == [500.0, 1000.0]  # only where it was measured
    sha = bank.get("run_b").sha256
    assert by_label["run_b"].label == f"run_b (banked {sha[:8]})"
    [band] = spec.bands
    assert band.label == "drifting envelope (2 runs)"
    assert list(band.xs) == [500.0, 750.0, 1000.0]
    # at 750 run_b is interpolated between its 500 and 1000 probes: 0.0 + 1.0 / 2
    assert list(band.lo) == pytest.approx([0.0, 0.4, 0.7])
    assert list(band.hi) == pytest.approx([0.0, 0.5, 1.0])
    assert spec.curves[-1].label.startswith("this run")  # drawn on top
    assert {m.label.split(" ")[0] for m in spec.marks} == {
        "demosonly",
        "mixedv2",
        "run2_pooled",
        "rigonly",
    }


def test_before_the_anchor_the_levels_view_draws_the_banked_level_curves(tmp_path):
    from fontaine_tui.core.charts.probes import probes_chart
    from fontaine_tui.core.log.read import load_lines
    from tests.logs import dumps, records_upto

    preset = load_preset(banked(tmp_path))
    store = load_lines([b"".join(dumps(r).encode() + b"\n" for r in records_upto(260))])
    spec = probes_chart(seen_reads(store, [], hidden=False), preset, None, scaled=False)
    assert spec.title.startswith("eval levels before the anchor probe")
    [rig] = [c for c in spec.curves if c.label.startswith("rig eval_chunk_mae (banked ")]
    assert list(rig.xs) == [250.0, 500.0]  # within the view (to 1.1 x the anchor)
    assert list(rig.ys) == [RIGONLY_LIKE[250][0], RIGONLY_LIKE[500][0]]
    assert "rig" not in {m.label.split(" ")[0] for m in spec.marks}  # a curve, not a mark
    assert "demosonly" in {m.label.split(" ")[0] for m in spec.marks}


def test_the_per_dataset_view_draws_each_datasets_delta_and_the_banked_ones(tmp_path):
    from fontaine_tui.core.charts.probes import datasets_chart
    from fontaine_tui.core.log.read import load_lines
    from tests.logs import dumps, records_upto

    preset = load_preset(banked(tmp_path))  # `rig`, banked from a RIGONLY_LIKE run
    store = load_lines([b"".join(dumps(r).encode() + b"\n" for r in records(probes=SCALED_LIKE))])
    spec = datasets_chart(seen_reads(store, [], hidden=False), preset, scaled=True)
    by_label = {c.label: c for c in spec.curves}
    assert set(by_label) == {
        "this run demos",
        "this run rig",
        "rig demos (banked)",
        "rig rig (banked)",
    }
    ours = by_label["this run demos"]  # the fixture logs demos at 0.9 x the eval MAE
    assert list(ours.xs) == [500.0, 750.0, 1000.0]
    assert list(ours.ys) == pytest.approx(
        [0.9 * (SCALED_LIKE[s][0] - SCALED_LIKE[500][0]) for s in (500, 750, 1000)]
    )
    theirs = by_label["rig rig (banked)"]
    assert theirs.faint and theirs.color == by_label["this run rig"].color
    assert list(theirs.ys) == pytest.approx(
        [1.1 * (RIGONLY_LIKE[s][0] - RIGONLY_LIKE[500][0]) for s in (500, 750, 1000)]
    )
    assert spec.hlines == () and spec.title.startswith("per-dataset delta(500->s)")
    assert spec.note == (
        "bounds apply to eval_chunk_mae, not drawn here; per-dataset curves are in raw units"
    )
    # before the anchor probe: the datasets' levels, the banked ones included
    early = load_lines([b"".join(dumps(r).encode() + b"\n" for r in records_upto(260))])
    spec = datasets_chart(seen_reads(early, [], hidden=False), preset)
    levels = {c.label: c for c in spec.curves}
    assert list(levels["rig demos (banked)"].ys) == pytest.approx(
        [0.9 * RIGONLY_LIKE[s][0] for s in (250, 500, 750, 1000)]
    )
    assert spec.note == "levels until the anchor probe (step 500); deltas from it"


def test_the_rules_read_the_banked_run_the_preset_read_not_the_bank(tmp_path, monkeypatch):
    """A loaded preset carries the banked run it read: the verdict's comparator curve, the
    decision lock and the chart come from it, so a bank moved away after loading (or another
    FONTAINE_BANK) changes nothing the rules say about this preset."""
    from fontaine_tui.core.charts.envelope import banked_series
    from fontaine_tui.core.log.read import load_lines
    from fontaine_tui.core.verdict.rules import compute_verdict
    from tests.logs import dumps

    # a banked run of its own (a sha256 no other test banks), so nothing read before counts
    probes = dict(RIGONLY_LIKE)
    probes[750] = (3.5 + (abs(hash(str(tmp_path))) % 10_000) * 1e-9, 3.3)
    preset = load_preset(banked(tmp_path, probes=probes))
    store = load_lines([b"".join(dumps(r).encode() + b"\n" for r in records(probes=probes))])
    monkeypatch.setenv("FONTAINE_BANK", str(tmp_path / "elsewhere"))  # the bank moved away
    v = compute_verdict(store, preset)
    [rig] = [c for c in v.comparators if c["name"] == "rig"]
    assert rig["curve"] == [
        [s, pytest.approx(probes[s][0] - probes[500][0])] for s in (500, 750, 1000)
    ]
    assert v.decision is not None
    assert v.decision.source.startswith("the largest among the banked comparators: rig")
    curves, _ = banked_series(preset, False)
    assert [c.label.split(" ")[0] for c in curves] == ["rig"]


def test_a_banked_curve_the_run_covers_says_so_in_the_legend(tmp_path):
    """A comparator banked from a run with the same probes lies exactly under this run's curve:
    its label says so, where a differing one's does not."""
    from fontaine_tui.core.charts.probes import SAME, probes_chart
    from fontaine_tui.core.log.read import load_lines
    from fontaine_tui.core.verdict.rules import compute_verdict, verdict_series
    from tests.logs import dumps

    for name, probes in (("same", RIGONLY_LIKE), ("other", SCALED_LIKE)):
        write_log(tmp_path / name / "train_log.jsonl", records(probes=probes))
        assert main(["bank", "add", str(tmp_path / name), "--as", f"run_{name}"]) == 0
    path = without_amendments(tmp_path)
    path.write_text(
        path.read_text().replace(
            "[gates]",
            '[comparators.run_same]\nbank = "run_same"\n\n'
            '[comparators.run_other]\nbank = "run_other"\n\n[gates]',
        )
    )
    preset = load_preset(path)
    store = load_lines([b"".join(dumps(r).encode() + b"\n" for r in records(probes=RIGONLY_LIKE))])
    spec = probes_chart(
        seen_reads(store, verdict_series(store, preset), hidden=False),
        preset,
        compute_verdict(store, preset),
        scaled=False,
    )
    labels = {c.label.split(" ")[0]: c.label for c in spec.curves}
    assert labels["run_same"].endswith(SAME) and not labels["run_other"].endswith(SAME), labels
