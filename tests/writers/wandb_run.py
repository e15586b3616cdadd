"""W&B in offline mode: wandb.init(dir=OUT), a row a step, the run finished with exit code 0.
Its transaction log is flushed every 0.2 s (wandb's default is 15 s), so a follower sees the
rows while the run goes."""

from __future__ import annotations

import wandb

from tests.writers.common import EVERY, STEPS, eval_loss, out_folder, pause, ready, train_loss

out = out_folder()
settings = wandb.Settings(x_transaction_log_flush_interval=0.2)
run = wandb.init(project="live", mode="offline", dir=str(out), id="live1", settings=settings)
ready(out)
for step in range(1, STEPS + 1):
    row = {"train/loss": train_loss(step)}
    if step % EVERY == 0:
        row["eval/loss"] = eval_loss(step)
    run.log(row, step=step)
    pause()
run.finish(exit_code=0)
