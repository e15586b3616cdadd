"""A run that raises an alert through its own library at ALERT_STEP, then goes on logging and
stays open until the test says `stop` (beside OUT): the alert must reach a follower while its
writer still runs. LIBRARY is trackio (`trackio.alert`), wandb (offline, `run.alert`) or
jsonl (a script of its own writing `{"kind": "alert", ...}` lines)."""

from __future__ import annotations

import json
import sys
import time

from tests.writers.common import EVERY, STEPS, eval_loss, out_folder, pause, ready, train_loss

ALERT_STEP = 6
TITLE = "loss spike"
TEXT = "batch 17 skipped: its loss was 1e9"

library = sys.argv.pop(2)
out = out_folder()
out.mkdir(parents=True, exist_ok=True)
stop = out.parent / "stop"


def rows():
    for step in range(1, STEPS + 1):
        values = {"train/loss": train_loss(step)}
        if step % EVERY == 0:
            values["eval/loss"] = eval_loss(step)
        yield step, values


def hold() -> None:
    deadline = time.monotonic() + 60
    while not stop.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


if library == "trackio":
    import trackio

    trackio.init(project="live", name="live")
    ready(out)
    for step, values in rows():
        trackio.log(values, step=step)
        if step == ALERT_STEP:
            trackio.alert(TITLE, text=TEXT, level=trackio.AlertLevel.ERROR)
        pause()
    hold()
    trackio.finish()
elif library == "wandb":
    import wandb

    settings = wandb.Settings(x_transaction_log_flush_interval=0.2)
    run = wandb.init(project="live", mode="offline", dir=str(out), id="live1", settings=settings)
    ready(out)
    for step, values in rows():
        run.log(values, step=step)
        if step == ALERT_STEP:
            run.alert(title=TITLE, text=TEXT, level=wandb.AlertLevel.ERROR)
        pause()
    hold()
    run.finish(exit_code=0)
else:
    with open(out / "metrics.jsonl", "a", encoding="utf-8") as f:
        ready(out)
        for step, values in rows():
            f.write(json.dumps({"step": step, "time": time.time(), **values}) + "\n")
            if step == ALERT_STEP:
                alert = {"kind": "alert", "level": "error", "title": TITLE, "text": TEXT}
                f.write(json.dumps({"step": step, **alert}) + "\n")
            f.flush()
            pause()
        hold()
