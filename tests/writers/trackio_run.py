"""trackio, local only: its project store in $TRACKIO_DIR (the run folder), one run named
"live", trackio.finish() at the end."""

from __future__ import annotations

import trackio

from tests.writers.common import EVERY, STEPS, eval_loss, out_folder, pause, ready, train_loss

out = out_folder()
trackio.init(project="live", name="live")
ready(out)
for step in range(1, STEPS + 1):
    values = {"train/loss": train_loss(step)}
    if step % EVERY == 0:
        values["eval/loss"] = eval_loss(step)
    trackio.log(values, step=step)
    pause()
trackio.finish()
