"""MLflow's log_metric into its SQLite store (`sqlite`) or its file store (`file`); the run
ends FINISHED."""

from __future__ import annotations

import os
import sys

os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # the file store, still what many runs hold
import mlflow  # noqa: E402

from tests.writers.common import EVERY, STEPS, eval_loss, out_folder, pause, ready, train_loss

store = sys.argv.pop(2)
out = out_folder()
out.mkdir(parents=True, exist_ok=True)
mlflow.set_tracking_uri(
    f"sqlite:///{out / 'mlflow.db'}" if store == "sqlite" else (out / "mlruns").as_uri()
)
with mlflow.start_run(run_name="live"):
    ready(out)
    for step in range(1, STEPS + 1):
        mlflow.log_metric("train/loss", train_loss(step), step=step)
        if step % EVERY == 0:
            mlflow.log_metric("eval/loss", eval_loss(step), step=step)
        pause()
