"""A stopped and resumed run of each trainer format, end to end with the real libraries.

For each format whose library is installed, a tiny `[command]` trainer writes its log with the
real library and checkpoints its step every EVERY steps (state.json, or Lightning's own
checkpoint); on `resume_argv` it goes on from that checkpoint as the library resumes a run
(W&B: `wandb.init(id=..., resume="allow")` offline, into a second run folder; TensorBoard: a new
SummaryWriter in the same folder with `purge_step`; MLflow: `start_run(run_id=...)` in a file
store; trackio: `init(resume="allow")`; Lightning: `fit(ckpt_path=...)`, whose CSVLogger deletes
the first attempt's metrics.csv). `launch --detach`, `stop --yes` once the log is past the first
checkpoint, `launch --resume --plain` to the end: the steps logged after the checkpoint are
logged again by the resumed attempt. The verdict of the resumed run must be the verdict of the
same trainer run straight through in another folder, and `get` of the verdict's metric must
hold what the library's own reader reads of the resumed run, to the last bit. Every value is a
function of the step alone, so both runs log the same series."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.log.formats.test_wandb_resume import _wandb_history

STEPS = 30
EVERY = 5  # an eval probe and a checkpoint every EVERY steps
STOP_AFTER = 2 * EVERY  # stopped once a checkpoint at this step or later is written

TRAINER = """\
import argparse, json, math, os, sys, time
from pathlib import Path

p = argparse.ArgumentParser()
p.add_argument("--fmt", required=True)
p.add_argument("--out", type=Path, required=True)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--every", type=int, default=5)
p.add_argument("--pause", type=float, default=0.0)
p.add_argument("--resume", action="store_true")
a = p.parse_args()
out = a.out
out.mkdir(parents=True, exist_ok=True)
state_path = out / "state.json"


def train_loss(step):
    return 2.0 * math.exp(-step / 7) + 0.1 + step / 997


def eval_loss(step):
    return 0.9 + 0.001 * step + (step % 3) / 1009


def checkpoint(step, **extra):
    tmp = out / "state.json.tmp"
    tmp.write_text(json.dumps({"step": step, **extra}))
    os.replace(tmp, state_path)


state = json.loads(state_path.read_text()) if a.resume else {"step": 0}
start = state["step"] + 1

if a.fmt == "wandb":
    import wandb

    run = wandb.init(
        project="resume", mode="offline", dir=str(out), id="res1", resume="allow",
        settings=wandb.Settings(x_transaction_log_flush_interval=0.2),
    )
    for step in range(start, a.steps + 1):
        row = {"train/loss": train_loss(step)}
        if step % a.every == 0:
            row["eval/loss"] = eval_loss(step)
        run.log(row, step=step)
        if step % a.every == 0:
            checkpoint(step)
        time.sleep(a.pause)
    run.finish(exit_code=0)
elif a.fmt == "tensorboard":
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(out / "tb"), purge_step=start if a.resume else None)
    for step in range(start, a.steps + 1):
        w.add_scalar("train/loss", train_loss(step), step)
        if step % a.every == 0:
            w.add_scalar("eval/loss", eval_loss(step), step)
        w.flush()
        if step % a.every == 0:
            checkpoint(step)
        time.sleep(a.pause)
    w.close()
elif a.fmt == "mlflow":
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    import mlflow

    mlflow.set_tracking_uri((out / "mlruns").as_uri())
    kw = {"run_id": state["run_id"]} if a.resume else {"run_name": "resume"}
    with mlflow.start_run(**kw) as run:
        for step in range(start, a.steps + 1):
            mlflow.log_metric("train/loss", train_loss(step), step=step)
            if step % a.every == 0:
                mlflow.log_metric("eval/loss", eval_loss(step), step=step)
                checkpoint(step, run_id=run.info.run_id)
            time.sleep(a.pause)
elif a.fmt == "trackio":
    os.environ["TRACKIO_DIR"] = str(out)  # its store in the run folder
    import trackio

    trackio.init(project="resume", name="resume", resume="allow")
    for step in range(start, a.steps + 1):
        values = {"train/loss": train_loss(step)}
        if step % a.every == 0:
            values["eval/loss"] = eval_loss(step)
        trackio.log(values, step=step)
        if step % a.every == 0:
            checkpoint(step)
        time.sleep(a.pause)
    trackio.finish()
elif a.fmt == "lightning":
    import warnings

    import lightning as L
    import torch
    from lightning.pytorch.callbacks import Callback, ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger

    warnings.filterwarnings("ignore")

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 1)

        def training_step(self, batch, batch_idx):
            time.sleep(a.pause)
            self.log("train_loss", train_loss(self.global_step + 1))
            return self.lin(batch).pow(2).mean()

        def validation_step(self, batch, batch_idx):
            self.log("val_loss", eval_loss(self.global_step))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    class Saved(Callback):  # the step of the last checkpoint, once it is on disk
        def on_save_checkpoint(self, trainer, module, ckpt):
            checkpoint(trainer.global_step)

    data = torch.utils.data.DataLoader(torch.zeros(a.steps, 2), batch_size=1)
    trainer = L.Trainer(
        max_steps=a.steps, val_check_interval=a.every, limit_val_batches=1,
        num_sanity_val_steps=0, log_every_n_steps=1, accelerator="cpu",
        enable_progress_bar=False, enable_model_summary=False,
        callbacks=[
            ModelCheckpoint(dirpath=out / "ckpt", every_n_train_steps=a.every, save_last=True),
            Saved(),
        ],
        logger=CSVLogger(out / "csv", name="", version="", flush_logs_every_n_steps=1),
    )
    ckpt = str(out / "ckpt" / "last.ckpt") if a.resume else None
    trainer.fit(Tiny(), data, data, ckpt_path=ckpt)
else:
    sys.exit(f"unknown format {a.fmt}")
"""

# format: (the library to import, the [source] table, the verdict's metric, anchor, endpoint)
# Lightning counts its steps from 0: its probes land at steps EVERY-1, 2*EVERY-1, ...
FORMATS = {
    "wandb": ("wandb", 'kind = "wandb"', "eval/loss", 10, 30),
    "tensorboard": ("tensorboard", 'kind = "tensorboard"\npath = "tb"', "eval/loss", 10, 30),
    "mlflow": ("mlflow", 'kind = "mlflow"', "eval/loss", 10, 30),
    "trackio": ("trackio", 'kind = "trackio"\nrun = "resume"', "eval/loss", 10, 30),
    "lightning": ("lightning", 'kind = "csv"\npath = "csv/metrics.csv"', "val_loss", 9, 29),
}


def _preset(tmp_path: Path, fmt: str, name: str) -> Path:
    _, source, metric, anchor, endpoint = FORMATS[fmt]
    common = (
        f'"{sys.executable}", "{tmp_path / "train.py"}", "--fmt", "{fmt}", '
        f'"--out", "{{output_dir}}", "--steps", "{STEPS}", "--every", "{EVERY}"'
    )
    path = tmp_path / f"{name}.toml"
    path.write_text(f"""[run]
name = "{name}"
output_dir = "runs/{name}"

[command]
argv = [{common}, "--pause", "0.3"]
resume_argv = [{common}, "--resume"]
env = {{ WANDB_SILENT = "true" }}

[source]
{source}

[verdict]
metric = "{metric}"
anchor_step = {anchor}
endpoint_step = {endpoint}
healthy_max = 0.05
drift_min = 0.5
""")
    return path


def _cli(*args: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "WANDB_SILENT": "true"},
    )


def _verdict(folder: Path, cwd: Path) -> dict:
    res = _cli("verdict", str(folder), "--json", cwd=cwd)
    assert res.stdout.strip(), res.stderr
    doc = json.loads(res.stdout)
    keep = ("verdict", "label", "provisional", "metric", "read_step", "anchor_step")
    keep += ("endpoint_step", "anchor_value", "read_value", "delta")
    return {k: doc[k] for k in keep}


def _get(folder: Path, metric: str, cwd: Path) -> dict[int, float]:
    res = _cli("get", str(folder), "-m", metric, "--json", cwd=cwd)
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    return dict(zip(doc["steps"], doc["values"], strict=True))


def _library_reads(fmt: str, folder: Path, metric: str) -> dict[int, float]:
    """`metric` by step as the library's own reader reads the run in `folder`."""
    if fmt == "wandb":
        return _wandb_history(folder, metric)
    if fmt == "tensorboard":
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        acc = EventAccumulator(str(folder / "tb"), size_guidance={"scalars": 0})
        acc.Reload()  # purge_orphaned_data (the default): a restart drops what it logs again
        return {e.step: e.value for e in acc.Scalars(metric)}
    if fmt == "mlflow":
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=(folder / "mlruns").as_uri())
        run_id = json.loads((folder / "state.json").read_text())["run_id"]
        history = sorted(client.get_metric_history(run_id, metric), key=lambda m: m.timestamp)
        return {m.step: m.value for m in history}  # the last logged at a step holds it
    if fmt == "trackio":
        # trackio takes TRACKIO_DIR as it is imported: its reader runs in a process of its own
        code = (
            "import json, sys\nfrom trackio.sqlite_storage import SQLiteStorage\n"
            "rows = SQLiteStorage.get_logs('resume', 'resume')\n"
            "json.dump([[r['step'], r[sys.argv[1]]] for r in rows if sys.argv[1] in r], sys.stdout)"
        )
        res = subprocess.run(
            [sys.executable, "-c", code, metric],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "TRACKIO_DIR": str(folder)},
        )
        assert res.returncode == 0, res.stderr
        return {step: value for step, value in json.loads(res.stdout)}
    # Lightning's CSVLogger: the file metrics.csv as csv reads it (the resumed attempt's rows)
    import csv

    with (folder / "csv" / "metrics.csv").open() as f:
        return {int(r["step"]): float(r[metric]) for r in csv.DictReader(f) if r.get(metric)}


def _runs(cwd: Path, name: str) -> dict:
    res = _cli("runs", "--json", cwd=cwd)
    rows = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    return next(r for r in rows if r.get("name") == name)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_resumed_run_reads_as_the_run_trained_straight_through(fmt, tmp_path, registry_path):
    pytest.importorskip(FORMATS[fmt][0])
    metric = FORMATS[fmt][2]
    (tmp_path / "train.py").write_text(TRAINER)

    straight = _preset(tmp_path, fmt, "straight")
    res = _cli("launch", str(straight), "--plain", cwd=tmp_path, timeout=300)
    assert f"command finished at step {STEPS}" in res.stdout or "exit 0" in res.stdout, (
        res.stdout[-3000:] + res.stderr[-3000:]
    )

    preset = _preset(tmp_path, fmt, "resumed")
    res = _cli("launch", str(preset), "--detach", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    folder = tmp_path / "runs" / "resumed"
    deadline = time.monotonic() + 120  # past its first checkpoints, short of its end
    state = folder / "state.json"
    while not (state.is_file() and json.loads(state.read_text())["step"] >= STOP_AFTER):
        assert time.monotonic() < deadline, (folder / "engine.out.log").read_text()[-3000:]
        time.sleep(0.05)
    time.sleep(0.4)  # a step or two past the checkpoint, logged again after the resume
    stop = _cli("stop", str(folder), "--yes", cwd=tmp_path)
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert _runs(tmp_path, "resumed")["state"] == "stopped"
    stopped_at = json.loads(state.read_text())["step"]
    assert stopped_at < STEPS, stopped_at

    res = _cli("launch", str(preset), "--resume", "--plain", cwd=tmp_path, timeout=300)
    out = res.stdout + res.stderr
    assert "command finished at step" in res.stdout and "exit 0" in res.stdout, out[-3000:]
    ends = [json.loads(x) for x in (folder / "attempts.jsonl").read_text().splitlines()]
    assert [
        (e["event"], e.get("kind") or e.get("cause")) for e in ends if e["event"] != "stop"
    ] == [
        ("begin", "launch"),
        ("end", "stopped"),
        ("begin", "resume"),
        ("end", "finished"),
    ]

    want = _verdict(tmp_path / "runs" / "straight", tmp_path)
    got = _verdict(folder, tmp_path)
    assert not want["provisional"] and want["label"] == "HEALTHY", want
    assert got == want

    values = _get(folder, metric, tmp_path)
    read = _library_reads(fmt, folder, metric)
    if fmt == "lightning":  # its file holds the resumed attempt's rows only
        assert {s: values[s] for s in read} == read
        read = _library_reads(fmt, tmp_path / "runs" / "straight", metric)
    assert values == read
    assert values == _get(tmp_path / "runs" / "straight", metric, tmp_path)
