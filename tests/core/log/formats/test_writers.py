"""Foreign runs written by the real libraries: transformers.Trainer's trainer_state.json,
MLflow's log_metric into its file store and its SQLite store, Lightning's CSVLogger; and
JSONL from a writer of its own, read with a field map."""

from __future__ import annotations

import json
import math

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.locate import detect
from fontaine_tui.core.log.formats.registry import kinds
from fontaine_tui.core.log.formats.source import SourceSpec, read_spec
from tests.core.log.formats.conftest import EVAL, foreign_preset, loss


def test_a_real_trainer_run_reads_from_its_newest_checkpoint(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    pytest.importorskip("accelerate")
    from transformers import Trainer, TrainingArguments

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 1)

        def forward(self, x, labels=None):
            out = self.lin(x).squeeze(-1)
            return {"loss": torch.nn.functional.mse_loss(out, labels), "logits": out}

    g = torch.Generator().manual_seed(0)
    xs = torch.randn(64, 4, generator=g)
    data = [{"x": x, "labels": x.sum()} for x in xs]
    out = tmp_path / "hf"
    args = TrainingArguments(
        output_dir=str(out),
        max_steps=40,
        logging_steps=5,
        eval_strategy="steps",
        eval_steps=10,
        save_steps=20,
        per_device_train_batch_size=8,
        learning_rate=0.05,
        report_to="none",
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    trainer = Trainer(model=Tiny(), args=args, train_dataset=data, eval_dataset=data[:16])
    trainer.train()
    state = json.loads((out / "checkpoint-40" / "trainer_state.json").read_text())
    logged = [e for e in state["log_history"] if "loss" in e and "train_runtime" not in e]
    evals = {e["step"]: e["eval_loss"] for e in state["log_history"] if "eval_loss" in e}

    assert detect(out) == "hf_trainer"
    loaded = load_source(out, SourceSpec("hf_trainer"))
    assert loaded.files == (out / "checkpoint-40" / "trainer_state.json",)  # the newest
    store = loaded.store
    assert list(store.steps) == [e["step"] for e in logged] == list(range(5, 41, 5))
    assert list(store.columns["loss"]) == [e["loss"] for e in logged]
    assert list(store.columns["lr"]) == [e["learning_rate"] for e in logged]
    assert {s: p.fields["eval_loss"] for s, p in store.probes.items()} == evals
    assert sorted(evals) == [10, 20, 30, 40]
    # the verdict on the Trainer's own key
    preset = tmp_path / "hf.toml"
    preset.write_text(
        foreign_preset(tmp_path, 'kind = "hf_trainer"', metric="eval_loss")
        .read_text()
        .replace("anchor_step = 40", "anchor_step = 20")
        .replace("endpoint_step = 80", "endpoint_step = 40")
    )
    capsys.readouterr()  # the Trainer prints its logs
    code = main(["verdict", str(out), "--preset", str(preset), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["delta"] == pytest.approx(evals[40] - evals[20])
    assert code in (0, 3, 4) and doc["read_step"] == 40


def _mlflow_run(uri: str, name: str) -> str:
    mlflow = pytest.importorskip("mlflow")
    mlflow.set_tracking_uri(uri)
    with mlflow.start_run(run_name=name) as run:
        for step in range(1, 81):
            mlflow.log_metric("train/loss", loss(step), step=step)
            if step in EVAL:
                mlflow.log_metric("eval/chunk_mae", EVAL[step], step=step)
        return run.info.run_id


@pytest.mark.parametrize("store", ["sqlite", "file"])
def test_mlflow_log_metric_into_both_stores(store, tmp_path, monkeypatch, capsys):
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "ml"
    folder.mkdir()
    if store == "sqlite":
        pytest.importorskip("sqlalchemy")
        uri = f"sqlite:///{folder / 'mlflow.db'}"
    else:
        uri = (folder / "mlruns").as_uri()
    run_id = _mlflow_run(uri, "first")
    assert detect(folder) == "mlflow"
    loaded = load_source(folder, SourceSpec("mlflow"))
    assert loaded.detail.startswith(f"MLflow run {run_id[:12]} (first, experiment ")
    st = loaded.store
    assert list(st.steps) == list(range(1, 81))
    assert list(st.columns["loss"]) == pytest.approx([loss(s) for s in range(1, 81)])
    assert {s: p.fields["eval/chunk_mae"] for s, p in st.probes.items()} == pytest.approx(EVAL)
    preset = foreign_preset(tmp_path, 'kind = "mlflow"', drift=0.75)
    assert main(["verdict", str(folder), "--preset", str(preset)]) == 3  # SAME-DRIFT
    capsys.readouterr()
    # a second run in the store: which one is a choice the preset makes, never a guess
    second = _mlflow_run(uri, "second")
    assert main(["verdict", str(folder), "--preset", str(preset)]) == 2
    err = capsys.readouterr().err
    assert "2 runs and none chosen: set [source] run (bank: --run) to one of " in err
    assert len(err.strip().splitlines()) == 1
    chosen = foreign_preset(tmp_path, f'kind = "mlflow"\nrun = "{second[:8]}"', drift=0.75)
    assert main(["verdict", str(folder), "--preset", str(chosen)]) == 3
    capsys.readouterr()
    # bank makes the same choice with --run
    assert main(["bank", "add", str(folder), "--as", "ml", "--ended"]) == 2
    assert "2 runs and none chosen" in capsys.readouterr().err
    assert main(["bank", "add", str(folder), "--as", "ml", "--ended", "--run", second[:8]]) == 0
    assert main(["bank", "show", "ml"]) == 0
    assert f"MLflow run {second[:12]} (second" in capsys.readouterr().out


def test_the_sqlite_store_is_opened_read_only(tmp_path, monkeypatch):
    pytest.importorskip("sqlalchemy")
    monkeypatch.chdir(tmp_path)
    _mlflow_run(f"sqlite:///{tmp_path / 'mlflow.db'}", "only")
    before = (tmp_path / "mlflow.db").read_bytes()
    from fontaine_tui.core.log.formats.mlflow import connect

    db = connect(tmp_path / "mlflow.db")
    import sqlite3

    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        db.execute("DELETE FROM metrics")
    db.close()
    load_source(tmp_path, SourceSpec("mlflow"))
    assert (tmp_path / "mlflow.db").read_bytes() == before


def test_lightning_csvlogger_sparse_rows(tmp_path, capsys):
    pytest.importorskip("lightning")
    from lightning.pytorch.loggers import CSVLogger

    logger = CSVLogger(str(tmp_path), name="lit")
    for step in range(1, 81):
        logger.log_metrics({"train_loss": loss(step)}, step=step)
        if step in EVAL:  # a row of its own, as Lightning's validation loop logs it
            logger.log_metrics({"val_chunk_mae": EVAL[step], "epoch": 0}, step=step)
        if step == 40:
            logger.save()  # the file as it stands mid-run (rewritten when keys appear)
    logger.finalize("success")
    csv_path = tmp_path / "lit" / "version_0" / "metrics.csv"
    assert csv_path.exists()
    assert detect(tmp_path / "lit") == "csv"
    st = load_source(tmp_path / "lit", SourceSpec("csv")).store
    assert list(st.steps) == list(range(1, 81))
    assert list(st.columns["loss"]) == pytest.approx([loss(s) for s in range(1, 81)])
    assert {s: p.fields["val_chunk_mae"] for s, p in st.probes.items()} == pytest.approx(EVAL)
    preset = foreign_preset(tmp_path, 'kind = "csv"\npath = "lit"', metric="val_chunk_mae")
    assert main(["verdict", str(tmp_path), "--preset", str(preset)]) == 4  # AMBIGUOUS
    # a second version (the script run again): which one is the preset's choice
    again = CSVLogger(str(tmp_path), name="lit")
    again.log_metrics({"train_loss": 1.0}, step=1)
    again.save()
    with pytest.raises(InputError, match="2 runs"):
        load_source(tmp_path / "lit", SourceSpec("csv"))


def test_jsonl_from_another_writer_with_a_field_map(tmp_path, capsys):
    """A LeRobot-style log: its own step field, nested eval numbers, its own loss name."""
    log = tmp_path / "run" / "log.jsonl"
    log.parent.mkdir()
    with open(log, "w") as f:
        for step in range(1, 81):
            f.write(json.dumps({"update": step, "t": 1000.0 + step, "l1_loss": loss(step)}) + "\n")
            if step in EVAL:
                f.write(
                    json.dumps({"update": step, "eval": {"mae": EVAL[step], "success": 0.5}}) + "\n"
                )
        f.write('{"update": 81, "l1_loss": 0.2')  # torn: a line being written
    spec = read_spec(
        {"kind": "jsonl", "step": "update", "time": "t", "eval": "eval.*", "loss": "l1_loss"}
    )
    st = load_source(tmp_path / "run", spec).store
    assert list(st.steps) == list(range(1, 81))
    assert list(st.columns["loss"]) == pytest.approx([loss(s) for s in range(1, 81)])
    assert st.columns["step_s"][5] == pytest.approx(1.0)  # from the time field
    assert set(st.probes[40].fields) == {"eval.mae", "eval.success"}
    preset = foreign_preset(
        tmp_path,
        'kind = "jsonl"\nstep = "update"\neval = "eval.*"\nloss = "l1_loss"',
        metric="eval.mae",
    )
    assert main(["verdict", str(tmp_path / "run"), "--preset", str(preset)]) == 4
    assert math.isfinite(st.probes[80].value("eval.mae"))


@pytest.mark.parametrize(
    "table, message",
    [
        ({"kind": "comet"}, f"source.kind: expected one of {', '.join(kinds())}"),
        ({"kind": "comet"}, "got 'comet'"),
        ({"kind": "csv", "colour": "x"}, "source.colour: unknown key"),
        ({"kind": "csv", "eval": []}, "source.eval: expected a glob pattern or a list of them"),
        ({"kind": "csv", "step": 3}, "source.step: expected a string"),
    ],
)
def test_a_bad_source_table_is_one_line_naming_the_key(table, message, tmp_path, capsys):
    body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in table.items())
    preset = foreign_preset(tmp_path, body)
    assert main(["verdict", str(tmp_path), "--preset", str(preset)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_the_docs_foreign_preset_loads_and_is_not_launched(tmp_path, capsys):
    from pathlib import Path

    text = (Path(__file__).parents[4] / "docs" / "own-trainer.md").read_text()
    block = text[text.index("## A preset for another trainer's run") :].split("```toml\n", 1)[1]
    path = tmp_path / "hf_sft.toml"
    path.write_text(block.split("```", 1)[0])
    from fontaine_tui.core.preset.find import load_preset

    preset = load_preset(path)
    assert preset.foreign and preset.source.kind == "hf_trainer"
    assert preset.verdict.metric == "eval_loss" and "recipe" not in preset.canonical
    from fontaine_tui.core.preset.validate import preset_from_canonical

    assert preset_from_canonical(preset.canonical, "prereg.json").sha256 == preset.sha256
    assert main(["launch", str(path), "--plain"]) == 2
    err = capsys.readouterr().err
    assert (
        "source.kind: 'hf_trainer': this preset reads a run another trainer writes; it "
        "cannot be launched" in err
    )


def test_a_folder_of_ours_is_never_taken_for_a_foreign_run(tmp_path):
    """Before its log appears, or after it was rotated away, a run folder of ours is ours:
    its ledgers are not a JSONL run, and attach waits for train_log.jsonl."""
    from fontaine_tui.core.log.formats.locate import detect_foreign

    run = tmp_path / "run"
    run.mkdir()
    (run / "amendments.jsonl").write_text("{}\n")
    assert detect_foreign(run) == ""
    (run / "prereg.json").write_text("{}")
    (run / "theirs.jsonl").write_text('{"step": 1}\n')
    assert detect_foreign(run) == ""  # prereg.json: ours
    (run / "prereg.json").unlink()
    assert detect_foreign(run) == "jsonl"  # one JSONL file that is not a ledger of ours
    (run / "train_log.jsonl.1").write_text("")
    assert detect_foreign(run) == ""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert detect_foreign(empty) == ""


def test_a_trainer_state_read_mid_rewrite_is_retried_not_an_error():
    from fontaine_tui.core.log.formats.rows import FormatError, TrainerStateDecoder

    whole = json.dumps(
        {
            "global_step": 20,
            "log_history": [
                {"step": 10, "loss": 1.0, "learning_rate": 0.1},
                {"step": 10, "eval_loss": 2.0},
                {"step": 20, "loss": 0.5, "learning_rate": 0.05},
            ],
        }
    ).encode()
    dec = TrainerStateDecoder()
    with pytest.raises(FormatError, match="not JSON"):
        dec.feed(whole[: len(whole) // 2])  # caught while Trainer rewrote it
    first = dec.feed(whole)
    assert [(type(r).__name__, r.step) for r in first] == [("TrainPoint", 10), ("Probe", 10)]
    again = dec.feed(whole) + dec.finish()  # the next save: only what is new comes out
    assert [(type(r).__name__, r.step) for r in again] == [("TrainPoint", 20)]
