"""The reference experiment's two presets: the 2-rank run to bank and the single-process
discriminator read against it. The only delta between them is the distributed machinery."""

from __future__ import annotations

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.bank import store as bank
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.launch.engine_argv import build_argv
from fontaine_tui.core.preset.find import load_preset
from tests.logs import RIGONLY_LIKE, records, write_log


def test_the_discriminator_needs_the_banked_run_and_then_pins_it(tmp_path, capsys):
    with pytest.raises(
        InputError, match="comparators.dist2.bank: bank demosonly_2rank_cpu: no such banked run"
    ):
        load_preset("demosonly_1proc_cpu")
    write_log(tmp_path / "dist2" / "train_log.jsonl", records(probes=RIGONLY_LIKE))
    assert main(["bank", "add", str(tmp_path / "dist2"), "--as", "demosonly_2rank_cpu"]) == 0
    disc = load_preset("demosonly_1proc_cpu")
    dist2 = disc.comparators["dist2"]
    assert dist2.bank == f"demosonly_2rank_cpu@{bank.get('demosonly_2rank_cpu').sha256}"
    assert dist2.delta == pytest.approx(RIGONLY_LIKE[1000][0] - RIGONLY_LIKE[500][0])
    # the document's bounds, as the absolute numbers it froze; the banked run the reference
    v = disc.verdict
    assert (v.healthy, v.drift, v.reference) == (0.30, 1.0158, "dist2")


def test_the_two_runs_differ_only_in_the_distributed_machinery(tmp_path):
    write_log(tmp_path / "dist2" / "train_log.jsonl", records(probes=RIGONLY_LIKE))
    assert main(["bank", "add", str(tmp_path / "dist2"), "--as", "demosonly_2rank_cpu"]) == 0
    dist, disc = load_preset("demosonly_2rank_cpu"), load_preset("demosonly_1proc_cpu")
    machinery = {"backward_chunks", "chunk_grad_allreduce"}
    assert {k: v for k, v in dist.recipe.items() if k not in machinery} == {
        k: v for k, v in disc.recipe.items() if k not in machinery
    }
    for preset, ranks in ((dist, 2), (disc, 1)):  # effective batch 96, micro-batch 12
        r = preset.recipe
        assert preset.platform["nproc"] == ranks
        assert (r["batch_size"], r["batch_size"] // (ranks * r["backward_chunks"])) == (96, 12)
    argv = build_argv(dist, tmp_path / "run")
    assert argv[1:5] == ["-m", "torch.distributed.run", "--nproc-per-node", "2"]
    assert "--chunk-grad-allreduce" in argv
    assert "--chunk-grad-allreduce" not in build_argv(disc, tmp_path / "run")
    # the reference preset stays as the document froze it (its "same init" the released
    # checkpoint presets/pretrain_so101.toml makes, its data the demos sub-dataset)
    assert load_preset("demosonly_1gpu").sha256.startswith("cdddd9927f7f")
    for preset in (dist, disc):
        assert (preset.recipe["init"], preset.recipe["datasets"]) == (
            "outputs/train/pretrain_so101",
            "demos",
        )
