"""A trainer that only prints its metrics, through Python's logging as LeRobot's does: a
train line each step and an eval line every EVERY steps, on stdout (the test sends stdout to
the run folder's train.out)."""

from __future__ import annotations

import logging
import sys

from tests.writers.common import EVERY, STEPS, eval_loss, out_folder, pause, ready, train_loss

out = out_folder()
ready(out)
handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(logging.Formatter("%(levelname)s %(asctime)s %(message)s"))
log = logging.getLogger("train")
log.addHandler(handler)
log.setLevel(logging.INFO)
for step in range(1, STEPS + 1):
    log.info("step:%d loss:%.4f lr:1.0e-04", step, train_loss(step))
    if step % EVERY == 0:
        log.info("step:%d eval_loss:%.4f", step, eval_loss(step))
    handler.flush()
    pause()
log.info("End of training")
