"""A script of its own writing JSON lines: one line a step, the probe's keys on it."""

from __future__ import annotations

import json
import time

from tests.writers.common import EVERY, STEPS, eval_loss, out_folder, pause, ready, train_loss

out = out_folder()
out.mkdir(parents=True, exist_ok=True)
with open(out / "metrics.jsonl", "a", encoding="utf-8") as f:
    ready(out)
    for step in range(1, STEPS + 1):
        line = {"step": step, "time": time.time(), "train/loss": train_loss(step)}
        if step % EVERY == 0:
            line["eval/loss"] = eval_loss(step)
        f.write(json.dumps(line) + "\n")
        f.flush()
        pause()
