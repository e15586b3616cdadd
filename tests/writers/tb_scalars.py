"""torch's SummaryWriter: the train loss by add_scalar, the probe by add_scalars (one
sub-folder of event files per key), flushed at each step."""

from __future__ import annotations

from torch.utils.tensorboard import SummaryWriter

from tests.writers.common import EVERY, STEPS, eval_loss, out_folder, pause, train_loss

out = out_folder()
w = SummaryWriter(str(out))
for step in range(1, STEPS + 1):
    w.add_scalar("train/loss", train_loss(step), step)
    if step % EVERY == 0:
        w.add_scalars("eval", {"loss": eval_loss(step), "loss_x2": 2 * eval_loss(step)}, step)
    w.flush()
    pause()
w.close()
