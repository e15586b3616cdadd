"""`inspect`: what a run folder holds, read from runs the real libraries wrote (Lightning's
Trainer with its CSV and TensorBoard loggers, MLflow's SQLite store with two runs), and a
JSONL log of a writer of its own (its step field not named "step", NaN and text values)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.inspect import cadence, inspect_run
from fontaine_tui.core.preset.checks import PresetError
from fontaine_tui.core.preset.draft import draft
from fontaine_tui.core.preset.find import load_preset
from tests.core.log.formats.conftest import EVAL, loss


@pytest.fixture(scope="module")
def lightning_run(tmp_path_factory) -> Path:
    """Lightning's Trainer, 40 steps, validation every 10, both loggers in one folder."""
    torch = pytest.importorskip("torch")
    L = pytest.importorskip("lightning")
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 1)

        def _loss(self, batch):
            x, y = batch
            return torch.nn.functional.mse_loss(self.lin(x).squeeze(-1), y)

        def training_step(self, batch, _):
            out = self._loss(batch)
            self.log("train_loss", out)
            return out

        def validation_step(self, batch, _):
            self.log("val_loss", self._loss(batch))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    folder = tmp_path_factory.mktemp("lit")
    g = torch.Generator().manual_seed(0)
    xs = torch.randn(64, 4, generator=g)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xs, xs.sum(1)), batch_size=8)
    trainer = L.Trainer(
        max_steps=40,
        val_check_interval=10,
        check_val_every_n_epoch=None,
        log_every_n_steps=5,
        accelerator="cpu",
        limit_val_batches=2,
        logger=[CSVLogger(str(folder), name="csv"), TensorBoardLogger(str(folder), name="tb")],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Tiny(), data, data)
    return folder


@pytest.fixture(scope="module")
def mlflow_store(tmp_path_factory) -> tuple[Path, list[str]]:
    """An MLflow SQLite store holding two runs (the second: a NaN eval value at step 30)."""
    mlflow = pytest.importorskip("mlflow")
    folder = tmp_path_factory.mktemp("mf")
    mlflow.set_tracking_uri(f"sqlite:///{folder / 'mlflow.db'}")
    from mlflow.entities import Metric

    client = mlflow.MlflowClient()
    ids = []
    for name in ("first", "second"):  # one batch per run: a metric a call is slow on SQLite
        run = client.create_run("0", run_name=name)
        metrics = [Metric("train/loss", loss(step), 1000 * step, step) for step in range(1, 81)]
        metrics += [
            Metric(
                "eval/chunk_mae",
                math.nan if name == "second" and step == 30 else value,
                1000 * step,
                step,
            )
            for step, value in EVAL.items()
        ]
        client.log_batch(run.info.run_id, metrics=metrics)
        ids.append(run.info.run_id)
    return folder, ids


def test_lightning_both_loggers_are_candidates_with_the_offset_cadence(lightning_run):
    ins = inspect_run(lightning_run)
    assert [(c.kind, c.path) for c in ins.candidates] == [("tensorboard", ""), ("csv", "")]
    assert ins.chosen.kind == "tensorboard"
    val = ins.stats("val_loss")
    assert val is not None and val.role == "eval"
    assert (val.first, val.last, val.count, val.nan) == (9, 39, 4, 0)  # global_step - 1
    assert ins.loss_key == "train_loss" and ins.stats("train_loss").role == "loss"
    assert ins.cadence.every == 10 and ins.cadence.first == 9 and not ins.cadence.off_grid
    assert "every 10 steps from 9" in ins.cadence.describe()
    assert ins.last_step == 39 and ins.ended is None
    # the CSV logger's copy of the same run reads the same keys at the same steps
    csv = inspect_run(lightning_run, kind="csv")
    assert csv.chosen.kind == "csv"
    assert csv.stats("val_loss").first == 9 and csv.cadence.steps == ins.cadence.steps


def test_the_written_preset_refuses_until_its_bounds_are_complete(lightning_run, tmp_path):
    ins = inspect_run(lightning_run, kind="csv")
    text = draft(ins)
    path = tmp_path / "lit.toml"
    path.write_text(text)
    with pytest.raises(
        PresetError,
        match=r"verdict\.healthy_max: .*complete the \[verdict\] "
        "bounds",
    ):
        load_preset(path)
    filled = text.replace('healthy_max = "COMPLETE: a number"', "healthy_max = 0.1").replace(
        'drift_min = "COMPLETE: a number"', "drift_min = 0.5"
    )
    path.write_text(filled)
    preset = load_preset(path)
    v = preset.verdict
    assert (v.metric, v.direction, v.read, v.anchor_step, v.endpoint_step) == (
        "val_loss",
        "lower",
        "delta",
        9,
        39,
    )
    assert preset.source.kind == "csv" and preset.source.fields.train["loss"] == "train_loss"


def test_several_mlflow_runs_are_candidates_each_with_its_run(mlflow_store):
    folder, ids = mlflow_store
    ins = inspect_run(folder)
    assert [(c.kind, c.run) for c in ins.candidates] == [("mlflow", i) for i in ids]
    assert ins.chosen.run == ids[0]
    second = inspect_run(folder, run=ids[1])
    mae = second.stats("eval/chunk_mae")
    assert (mae.first, mae.last, mae.count, mae.nan) == (10, 80, 8, 1)
    assert second.stats("train/loss").count == 80
    assert 'run = "' + ids[1] + '"' in draft(second)


def test_json_reads_back(mlflow_store):
    folder, ids = mlflow_store
    doc = json.loads(json.dumps(inspect_run(folder, run=ids[1]).to_json()))
    assert doc["schema"] == 1 and doc["format"]["kind"] == "mlflow"
    assert doc["format"]["run"] == ids[1]
    assert [c["source"] for c in doc["candidates"]] == [
        ['kind = "mlflow"', f'run = "{i}"'] for i in ids
    ]
    keys = {k["key"]: k for k in doc["keys"]}
    assert keys["eval/chunk_mae"] == {
        "key": "eval/chunk_mae",
        "role": "eval",
        "first": 10,
        "last": 80,
        "count": 8,
        "nan": 1,
        "not_number": 0,
    }
    assert keys["train/loss"]["role"] == "loss" and doc["loss_key"] == "train/loss"
    assert doc["probes"]["every"] == 10 and doc["probes"]["first"] == 10
    assert doc["probes"]["keys"] == ["eval/chunk_mae"]
    assert doc["last_step"] == 80 and doc["ended"] is None and doc["step_key"] == "step"


def test_a_jsonl_step_field_of_another_name_and_what_is_not_read(tmp_path):
    log = tmp_path / "metrics.jsonl"
    lines = []
    for s in range(1, 31):
        row: dict = {"global_step": s, "train/loss": loss(s), "note": "text"}
        if s % 10 == 5:
            row["val/score"] = "n/a" if s == 15 else 0.5 + s / 100
        lines.append(json.dumps(row))
    lines.insert(3, "{not json")
    log.write_text("\n".join(lines) + "\n")
    ins = inspect_run(tmp_path)
    assert ins.chosen.kind == "jsonl" and ins.step_key == "global_step"
    score = ins.stats("val/score")
    # the text at 15 is a probe whose value is not a number: counted as one, never dropped
    assert (score.first, score.last, score.count, score.not_number) == (5, 25, 3, 1)
    assert ins.cadence.describe().startswith("every 10 steps from 5")
    assert any("unreadable entr" in n for n in ins.notices)
    text = draft(ins)
    assert 'step = "global_step"' in text and 'direction = "higher"' in text
    assert "healthy_min" in text and "eval_every" not in text.split("[verdict]")[0].replace(
        "# probes", ""
    )


def test_an_end_event_is_reported(tmp_path):
    log = tmp_path / "train_log.jsonl"
    rec = [{"kind": "train", "step": s, "time": s, "loss": 1.0 / s} for s in range(1, 21)]
    rec += [
        {"kind": "eval", "step": s, "time": s, "eval_chunk_mae": 1.0, "n_frames": 3}
        for s in (10, 20)
    ]
    rec.append({"kind": "event", "step": 20, "time": 21, "event": "end", "detail": "done"})
    log.write_text("".join(json.dumps(r) + "\n" for r in sorted(rec, key=lambda r: r["time"])))
    ins = inspect_run(tmp_path)
    assert ins.chosen.kind == "fontaine" and ins.ended is not None
    assert (ins.ended.event, ins.ended.step, ins.ended.detail) == ("end", 20, "done")
    assert ins.stats("eval_chunk_mae").count == 2 and ins.stats("loss").count == 20


@pytest.mark.parametrize(
    "steps, every, off",
    [
        ((), 0, ()),
        ((5,), 0, ()),
        ((9, 19, 29, 39), 10, ()),
        ((10, 20, 30, 35), 10, (35,)),
        ((0, 100, 200, 300, 350, 400), 100, (350,)),
    ],
)
def test_cadence(steps, every, off):
    c = cadence(steps)
    assert (c.every, c.off_grid) == (every, off)


def test_bad_input_is_one_line(tmp_path):
    with pytest.raises(InputError, match="no such folder"):
        inspect_run(tmp_path / "nope")
    (tmp_path / "readme.txt").write_text("nothing here")
    with pytest.raises(InputError, match="no log this console reads"):
        inspect_run(tmp_path)
    assert not os.listdir(tmp_path) == []  # nothing removed


def test_several_event_folders_are_each_a_candidate_path(tmp_path):
    tbx = pytest.importorskip("tensorboardX")
    for name, steps in (("a", 30), ("b", 50)):
        writer = tbx.SummaryWriter(str(tmp_path / "runs" / name))
        for step in range(1, steps + 1):
            writer.add_scalar("loss", loss(step), step)
            if step % 10 == 0:
                writer.add_scalar("eval/mae", 1.0 / step, step)
        writer.close()
    ins = inspect_run(tmp_path)
    assert [(c.kind, c.path) for c in ins.candidates] == [
        ("tensorboard", "runs/a"),
        ("tensorboard", "runs/b"),
    ]
    assert ins.last_step == 30
    other = inspect_run(tmp_path, path="runs/b")
    assert other.last_step == 50 and other.stats("eval/mae").count == 5
    assert 'path = "runs/b"' in draft(other)


def test_the_preset_for_one_mlflow_run_reads_that_run(mlflow_store, tmp_path, capsys):
    from fontaine_tui.cli import main

    folder, ids = mlflow_store
    path = tmp_path / "mf.toml"
    path.write_text(
        draft(inspect_run(folder, run=ids[1]))
        .replace('"COMPLETE: a number"', "0.1", 1)
        .replace('"COMPLETE: a number"', "0.9", 1)
    )
    capsys.readouterr()
    code = main(["verdict", str(folder), "--preset", str(path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert (doc["anchor_step"], doc["read_step"]) == (10, 80)
    assert doc["delta"] == pytest.approx(EVAL[80] - EVAL[10]) and code == 4  # AMBIGUOUS
