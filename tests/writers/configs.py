"""Each library's run config written by the library itself, into OUT/<kind>: Lightning's
CSVLogger hparams.yaml (`log_hyperparams`), an MLflow file store's params and tags
(`log_param`, `set_tag`), a W&B offline run's config (`wandb.init(config=...)` and one
`config.update`), a trackio store's config (`trackio.init(config=...)`). CONFIG holds what each
logs, a secret-named key among them. `lightning_odd` logs ODD: a value shaped like markup, a
list that reads as a tag, the rule's metric's value (what a blinded read hides)."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

TOKEN = "hf_" + "a1B2c3D4e5F6g7H8i9J0k"  # a token's shape under a secret name
CONFIG = {"lr": 0.0003, "batch_size": 16, "optimizer": "adamw", "hub_token": TOKEN}
ODD = {
    "best_eval_loss": 0.4123,
    "lr": 0.1,
    "boom": "[/bold]",
    "argv": ["train.py", "--lr", "0.1"],
    "[b]key[/b]": "k",
}


def lightning(out: Path) -> None:
    from lightning.pytorch.loggers import CSVLogger

    logger = CSVLogger(str(out), name="csv")
    logger.log_hyperparams({**CONFIG, "model": {"layers": 4, "dims": [64, 32]}})
    logger.log_metrics({"train_loss": 1.0}, step=0)
    logger.save()
    logger.finalize("success")


def lightning_odd(out: Path) -> None:
    from lightning.pytorch.loggers import CSVLogger

    logger = CSVLogger(str(out), name="csv")
    logger.log_hyperparams(ODD)
    logger.log_metrics({"train_loss": 1.0}, step=0)
    logger.save()
    logger.finalize("success")


def mlflow_store(out: Path) -> None:
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    import mlflow

    mlflow.set_tracking_uri(f"file:{out / 'mlruns'}")
    with mlflow.start_run(run_name="configured"):
        for key, value in CONFIG.items():
            mlflow.log_param(key, value)
        mlflow.set_tag("team", "vision")
        mlflow.log_metric("train_loss", 1.0, step=1)


def wandb_run(out: Path) -> None:
    os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
    import wandb

    run = wandb.init(
        project="p",
        dir=str(out),
        config=CONFIG,
        settings=wandb.Settings(x_disable_stats=True, x_disable_meta=True),
    )
    run.config.update({"warmup": 20})
    run.log({"train_loss": 1.0})
    run.finish()


def trackio_run(out: Path) -> None:
    os.environ["TRACKIO_DIR"] = str(out)
    import trackio

    trackio.init(project="proj", name="configured", config=CONFIG)
    trackio.log({"train_loss": 1.0})
    trackio.finish()


if __name__ == "__main__":
    out, kinds = Path(sys.argv[1]), sys.argv[2:]
    for kind in kinds:
        (out / kind).mkdir(parents=True, exist_ok=True)
        globals()[kind](out / kind)
