"""torch's SummaryWriter, its add_scalars: train and eval of one main tag on one chart, each
key in its own sub-folder of event files (`loss_train/`, `loss_eval/`), flushed each step."""

from __future__ import annotations

from torch.utils.tensorboard import SummaryWriter

from tests.writers.common import EVERY, STEPS, eval_loss, out_folder, pause, ready, train_loss

out = out_folder()
w = SummaryWriter(str(out))
ready(out)
for step in range(1, STEPS + 1):
    values = {"train": train_loss(step)}
    if step % EVERY == 0:
        values["eval"] = eval_loss(step)
    w.add_scalars("loss", values, step)
    w.flush()
    pause()
w.close()
