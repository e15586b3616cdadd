"""Real libraries writing foreign runs while the tool follows them (the live tests and
bench/foreign_latency.py): one writer process per kind takes run folders on its stdin, one a
line, and writes each with the real library (MLflow's SQLite and file stores, transformers'
TrainerState.save_to_json, Lightning's CSVLogger, tensorboardX's SummaryWriter, a JSONL
writer), printing `{"step": s, "t": time}` once each step is flushed, then `{"done": folder}`.

A run logs `train/loss` (`loss`) at each step and an eval key at each odd step from 3 and at
the last (the endpoint); FAIL_AT > 0 makes an MLflow run raise there (status FAILED)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats import SourceSpec
from fontaine_tui.core.log.records import Event
from fontaine_tui.core.log.store import RunStore

HEAD = """
import json, os, sys, time
steps, spacing, fail_at = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])

def emit(**kw):
    print(json.dumps(kw), flush=True)

def probe(s):
    return s == steps or (s >= 3 and s % 2 == 1)

def ev(s):
    return 3.0 - 0.01 * s

def loss(s):
    return 1.0 / s
"""

WRITERS = {
    "mlflow_sqlite": """
import mlflow

class Failure(Exception):
    pass

def run(folder, uri):
    mlflow.set_tracking_uri(uri)
    try:
        with mlflow.start_run(run_name="live"):
            for s in range(1, steps + 1):
                mlflow.log_metric("train/loss", loss(s), step=s)
                if probe(s):
                    mlflow.log_metric("eval/chunk_mae", ev(s), step=s)
                emit(step=s, t=time.time())
                if s == fail_at:
                    raise Failure(s)
                if s < steps:
                    time.sleep(spacing)
    except Failure:
        pass

for line in sys.stdin:
    folder = line.strip()
    uri = (f"sqlite:///{folder}/mlflow.db" if KIND == "mlflow_sqlite"
           else "file://" + os.path.join(folder, "mlruns"))
    run(folder, uri)
    emit(done=folder)
""",
    "hf_trainer": """
from transformers.trainer_callback import TrainerState

for line in sys.stdin:
    folder = line.strip()
    state = TrainerState()
    for s in range(1, steps + 1):
        state.global_step = s
        state.log_history.append({"loss": loss(s), "learning_rate": 0.1, "step": s})
        if probe(s):
            state.log_history.append({"eval_loss": ev(s), "step": s})
        ck = os.path.join(folder, f"checkpoint-{s}")
        os.makedirs(ck, exist_ok=True)
        state.save_to_json(os.path.join(ck, "trainer_state.json"))
        emit(step=s, t=time.time())
        if s < steps:
            time.sleep(spacing)
    emit(done=folder)
""",
    "csv": """
from lightning.pytorch.loggers import CSVLogger

for line in sys.stdin:
    folder = line.strip()
    logger = CSVLogger(folder, name="lit")
    for s in range(1, steps + 1):
        logger.log_metrics({"train_loss": loss(s)}, step=s)
        if probe(s):
            logger.log_metrics({"val_mae": ev(s)}, step=s)
        logger.save()
        emit(step=s, t=time.time())
        if s < steps:
            time.sleep(spacing)
    logger.finalize("success")
    emit(done=folder)
""",
    "tensorboard": """
from tensorboardX import SummaryWriter

for line in sys.stdin:
    folder = line.strip()
    w = SummaryWriter(folder)
    for s in range(1, steps + 1):
        w.add_scalar("train/loss", loss(s), s)
        if probe(s):
            w.add_scalar("eval/chunk_mae", ev(s), s)
        w.flush()
        emit(step=s, t=time.time())
        if s < steps:
            time.sleep(spacing)
    w.close()
    emit(done=folder)
""",
    "jsonl": """
for line in sys.stdin:
    folder = line.strip()
    with open(os.path.join(folder, "metrics.jsonl"), "a") as f:
        for s in range(1, steps + 1):
            f.write(json.dumps({"step": s, "train/loss": loss(s)}) + "\\n")
            if probe(s):
                f.write(json.dumps({"step": s, "eval/chunk_mae": ev(s)}) + "\\n")
            f.flush()
            emit(step=s, t=time.time())
            if s < steps:
                time.sleep(spacing)
    emit(done=folder)
""",
}
WRITERS["mlflow_file"] = WRITERS["mlflow_sqlite"]
SPECS = {"mlflow_sqlite": "mlflow", "mlflow_file": "mlflow", "hf_trainer": "hf_trainer",
         "csv": "csv", "tensorboard": "tensorboard", "jsonl": "jsonl"}
METRIC = {"hf_trainer": "eval_loss", "csv": "val_mae"}  # else eval/chunk_mae


def probe_steps(steps: int) -> list[int]:
    return [s for s in range(1, steps + 1) if s == steps or (s >= 3 and s % 2 == 1)]


def writer(kind: str, steps: int, spacing: float, fail_at: int = 0) -> subprocess.Popen:
    """The writer process of `kind`, waiting for run folders on its stdin."""
    env = {**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true", "HF_HUB_OFFLINE": "1",
           "WANDB_MODE": "offline", "PYTHONUNBUFFERED": "1"}
    code = f"KIND = {kind!r}\n" + HEAD + WRITERS[kind]
    return subprocess.Popen([sys.executable, "-c", code, str(steps), str(spacing),
                             str(fail_at)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env)


@dataclass
class Followed:
    """One run followed live: when each step was flushed (writer) and when each probe and
    end event came out of the follower (time.time())."""

    kind: str
    folder: Path
    written: dict[int, float] = field(default_factory=dict)
    probes: dict[int, float] = field(default_factory=dict)
    events: list[tuple[float, Event]] = field(default_factory=list)
    store: RunStore = field(default_factory=RunStore)

    def latency(self, step: int) -> float:
        return self.probes.get(step, float("inf")) - self.written[step]


async def follow(kind: str, folder: Path, proc: subprocess.Popen, steps: int,
                 timeout: float, linger: float = 2.5) -> Followed:
    """Follow the run `proc` writes into `folder` until the writer is done and every probe
    is in (or `linger` seconds past the writer's end, or `timeout`)."""
    folder.mkdir(parents=True, exist_ok=True)
    got = Followed(kind, folder)
    run = ForeignRun(folder, SourceSpec(SPECS[kind]), poll_s=None)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{folder}\n")
    proc.stdin.flush()
    done = asyncio.Event()
    loop = asyncio.get_running_loop()

    def lines() -> None:
        for line in _lines(proc):
            doc = json.loads(line)
            if "done" in doc:
                break
            got.written[doc["step"]] = doc["t"]
        loop.call_soon_threadsafe(done.set)

    reader = loop.run_in_executor(None, lines)
    want = set(probe_steps(steps))

    async def go() -> None:
        async for batch in run.follow():
            now = time.time()
            for rec in batch.records:
                got.store.add(rec)
                if isinstance(rec, Event):
                    got.events.append((now, rec))
            for s in got.store.probes:
                got.probes.setdefault(s, now)
            if done.is_set() and want <= got.probes.keys() and (
                    not kind.startswith("mlflow") or got.events):
                return

    async def until_done() -> None:
        await done.wait()
        await asyncio.sleep(linger)

    task = asyncio.ensure_future(go())
    stop = asyncio.ensure_future(until_done())
    try:
        await asyncio.wait({task, stop}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        task.cancel()
        stop.cancel()
        await run.close()
        await reader
    return got


def _lines(proc: subprocess.Popen) -> Iterator[str]:
    assert proc.stdout is not None
    while line := proc.stdout.readline():
        yield line


def close(proc: subprocess.Popen) -> int:
    assert proc.stdin is not None
    proc.stdin.close()
    return proc.wait(timeout=60)
