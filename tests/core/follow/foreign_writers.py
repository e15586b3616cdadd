"""Real libraries writing foreign runs while the tool follows them (the live tests and
bench/foreign_latency.py): one writer process per kind takes run folders on its stdin, one a
line, and writes each with the real library (MLflow's SQLite and file stores, transformers'
TrainerState.save_to_json, Lightning's CSVLogger, tensorboardX's SummaryWriter, a JSONL
writer, wandb offline, trackio, LeRobot's printed lines, torch's SummaryWriter.add_scalars),
printing `{"step": s, "t": time}` once each step is flushed (the library's call returned),
`{"landed": s, "t": time}` once a probe's row is in the file where the library buffers it
(wandb, trackio), then `{"done": folder}`.

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
from fontaine_tui.core.log.formats.grouper import FieldMap
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.log.records import Event
from fontaine_tui.core.log.store import RunStore

HEAD = """
import json, os, sys, threading, time
steps, spacing, fail_at = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
said = threading.Lock()

def emit(**kw):
    with said:  # one whole line at a time, also from a watching thread
        sys.stdout.write(json.dumps(kw) + "\\n")
        sys.stdout.flush()

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
WANDB_FLUSH_S = 0.1  # the run's x_transaction_log_flush_interval (wandb's default: 15 s)

# wandb: the real library offline (its config, cache and data in a temp folder), each step
# logged as users log it, `run.log(row, step=s)`: wandb holds that row until the next step
# (the last until finish). A thread notes when each probe's row lands in the run file (its
# eval item, serialized by wandb's own protobuf classes, found in the file's bytes).
WRITERS["wandb"] = """
import glob, shutil, tempfile
home = tempfile.mkdtemp(prefix="fontaine-wandb-")
os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=home,
                  WANDB_CONFIG_DIR=os.path.join(home, "config"),
                  WANDB_CACHE_DIR=os.path.join(home, "cache"),
                  WANDB_DATA_DIR=os.path.join(home, "data"))
os.environ.pop("WANDB_API_KEY", None)
import wandb
from wandb.proto import wandb_internal_pb2 as pb

def mark(s):
    item = pb.HistoryItem()
    item.nested_key.append("eval/chunk_mae")
    item.value_json = json.dumps(ev(s))
    return item.SerializeToString()

def watch(folder, finished):
    want = {s: mark(s) for s in range(1, steps + 1) if probe(s)}
    deadline = None
    while want and (deadline is None or time.time() < deadline):
        if deadline is None and finished.is_set():
            deadline = time.time() + 10
        data = b""
        for path in glob.glob(os.path.join(folder, "wandb", "*run-*", "run-*.wandb")):
            with open(path, "rb") as f:
                data = f.read()
        now = time.time()
        for s, m in list(want.items()):
            if m in data:
                emit(landed=s, t=now)
                del want[s]
        time.sleep(0.005)

for line in sys.stdin:
    folder = line.strip()
    settings = wandb.Settings(x_transaction_log_flush_interval=FLUSH_S)
    run = wandb.init(project="live", mode="offline", dir=folder, settings=settings)
    finished = threading.Event()
    watcher = threading.Thread(target=watch, args=(folder, finished))
    watcher.start()
    for s in range(1, steps + 1):
        row = {"train/loss": loss(s)}
        if probe(s):
            row["eval/chunk_mae"] = ev(s)
        run.log(row, step=s)
        emit(step=s, t=time.time())
        if s < steps:
            time.sleep(spacing)
    run.finish()
    finished.set()
    watcher.join()
    emit(done=folder)
shutil.rmtree(home, ignore_errors=True)
""".replace("FLUSH_S", repr(WANDB_FLUSH_S))

# trackio: the real library, local only (no Space, no server): one child per run with
# TRACKIO_DIR the run folder (trackio reads it at import). trackio sends its queued logs to
# its SQLite store every 0.5 s (trackio.run.BATCH_SEND_INTERVAL); a thread notes when each
# probe's row lands in the store (read-only).
TRACKIO_RUN = """
import sqlite3
import trackio

def watch(db, finished):
    want = {s for s in range(1, steps + 1) if probe(s)}
    deadline = None
    while want and (deadline is None or time.time() < deadline):
        if deadline is None and finished.is_set():
            deadline = time.time() + 10
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                got = {r[0] for r in con.execute(
                    "SELECT step FROM metrics"
                    " WHERE CAST(metrics AS TEXT) LIKE '%eval/chunk_mae%'")}
            finally:
                con.close()
        except sqlite3.Error:
            got = set()
        now = time.time()
        for s in sorted(want & got):
            emit(landed=s, t=now)
        want -= got
        time.sleep(0.005)

folder = sys.argv[4]
trackio.init(project="proj", name="live")
finished = threading.Event()
watcher = threading.Thread(target=watch, args=(os.path.join(folder, "proj.db"), finished))
watcher.start()
for s in range(1, steps + 1):
    row = {"train/loss": loss(s)}
    if probe(s):
        row["eval/chunk_mae"] = ev(s)
    trackio.log(row, step=s)
    emit(step=s, t=time.time())
    if s < steps:
        time.sleep(spacing)
trackio.finish()
finished.set()
watcher.join()
"""
WRITERS["trackio"] = """
import subprocess
env = {k: v for k, v in os.environ.items()
       if not k.startswith(("TRACKIO_", "HF_TOKEN", "GRADIO_"))}
env.update(HF_HUB_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1",
           GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
for line in sys.stdin:
    folder = line.strip()
    subprocess.run([sys.executable, "-c", HEAD + CHILD, *sys.argv[1:4], folder],
                   env={**env, "TRACKIO_DIR": folder}, check=True)
    emit(done=folder)
"""

# LeRobot's printed training lines (as tests/core/log/formats/test_printed.py prints them:
# init_logging's format, MetricsTracker with format_big_number), appended to the run's
# engine.out.log and flushed each step; the eval line at each probe.
WRITERS["lines"] = r"""
from datetime import datetime

def format_big_number(num, precision=0):
    for suffix in ["", "K", "M", "B", "T", "Q"]:
        if abs(num) < 1000.0:
            return f"{num:.{precision}f}{suffix}"
        num /= 1000.0
    return num

for line in sys.stdin:
    folder = line.strip()
    with open(os.path.join(folder, "engine.out.log"), "a", encoding="utf-8") as out:
        def info(msg, at):
            dt = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
            where = f"lerobot/scripts/train.py:{at}"
            out.write(f"INFO {dt} {where[-15:]:>15} {msg}\n")
        out.write("Loading dataset ...\n")
        info("Start offline training on a fixed dataset", 190)
        for s in range(1, steps + 1):
            smpl = s * 8
            head = (f"step:{format_big_number(s)} smpl:{format_big_number(smpl)} "
                    f"ep:{format_big_number(smpl / 400)} epch:{smpl / 20000:.2f}")
            info(f"{head} loss:{loss(s):.3f} grdn:{10.0 / s:.3f} lr:{1e-4:0.1e} "
                 f"updt_s:{0.123:.3f} data_s:{0.004:.3f}", 232)
            if probe(s):
                info(f"{head} \u2211rwrd:{12.345:.3f} success:{ev(s):.2f} eval_s:{1.5:.3f}", 250)
            out.flush()
            emit(step=s, t=time.time())
            if s < steps:
                time.sleep(spacing)
        out.write("End of training\n")
    emit(done=folder)
"""

# torch's SummaryWriter with add_scalars: each of its tags in a sub-folder of its own
# (mae_train/, mae_eval/), all flushed each step.
WRITERS["tensorboard_scalars"] = """
from torch.utils.tensorboard import SummaryWriter

for line in sys.stdin:
    folder = line.strip()
    w = SummaryWriter(folder)
    for s in range(1, steps + 1):
        w.add_scalar("train/loss", loss(s), s)
        if probe(s):
            w.add_scalars("mae", {"train": loss(s), "eval": ev(s)}, s)
        w.flush()
        emit(step=s, t=time.time())
        if s < steps:
            time.sleep(spacing)
    w.close()
    emit(done=folder)
"""
LINES_PATTERNS = (
    r"^INFO (?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) .*step:(?P<step>\S+) .* "
    r"loss:(?P<loss>\S+) grdn:(?P<grad_norm>\S+) lr:(?P<lr>\S+)",
    r"step:(?P<step>\S+) .* success:(?P<success>\S+)",
)
SPECS = {
    "mlflow_sqlite": SourceSpec("mlflow"),
    "mlflow_file": SourceSpec("mlflow"),
    **{k: SourceSpec(k) for k in ("hf_trainer", "csv", "tensorboard", "jsonl", "wandb", "trackio")},
    "lines": SourceSpec("lines", fields=FieldMap(eval=("success",)), patterns=LINES_PATTERNS),
    "tensorboard_scalars": SourceSpec("tensorboard", fields=FieldMap(eval=("mae_eval/*",))),
}
METRIC = {
    "hf_trainer": "eval_loss",
    "csv": "val_mae",
    "lines": "success",
    "tensorboard_scalars": "mae_eval/mae",
}  # else eval/chunk_mae


def probe_steps(steps: int) -> list[int]:
    return [s for s in range(1, steps + 1) if s == steps or (s >= 3 and s % 2 == 1)]


def writer(kind: str, steps: int, spacing: float, fail_at: int = 0) -> subprocess.Popen:
    """The writer process of `kind`, waiting for run folders on its stdin."""
    env = {
        **os.environ,
        "MLFLOW_ALLOW_FILE_STORE": "true",
        "HF_HUB_OFFLINE": "1",
        "WANDB_MODE": "offline",
        "PYTHONUNBUFFERED": "1",
    }
    code = f"KIND = {kind!r}\nHEAD = {HEAD!r}\nCHILD = {TRACKIO_RUN!r}\n" + HEAD + WRITERS[kind]
    return subprocess.Popen(
        [sys.executable, "-c", code, str(steps), str(spacing), str(fail_at)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


@dataclass
class Followed:
    """One run followed live: when each step was flushed (writer: just after the library's
    call returned), when a probe's row landed in the file (`landed`: the writers of libraries
    that buffer, wandb and trackio), and when each probe and end event came out of the
    follower (time.time())."""

    kind: str
    folder: Path
    written: dict[int, float] = field(default_factory=dict)
    landed: dict[int, float] = field(default_factory=dict)
    probes: dict[int, float] = field(default_factory=dict)
    events: list[tuple[float, Event]] = field(default_factory=list)
    store: RunStore = field(default_factory=RunStore)

    def latency(self, step: int, since: str = "written") -> float:
        """From the writer's flush (`written`) or the row's landing in the file (`landed`)
        to the probe; inf when the probe never came."""
        return self.probes.get(step, float("inf")) - getattr(self, since)[step]


async def follow(
    kind: str, folder: Path, proc: subprocess.Popen, steps: int, timeout: float, linger: float = 2.5
) -> Followed:
    """Follow the run `proc` writes into `folder` until the writer is done and every probe
    is in (or `linger` seconds past the writer's end, or `timeout`)."""
    folder.mkdir(parents=True, exist_ok=True)
    got = Followed(kind, folder)
    run = ForeignRun(folder, SPECS[kind], poll_s=None)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{folder}\n")
    proc.stdin.flush()
    done = asyncio.Event()
    loop = asyncio.get_running_loop()

    def lines() -> None:
        for line in _lines(proc):
            if not line.startswith("{"):
                continue  # a library's own words on stdout (trackio's)
            doc = json.loads(line)
            if "done" in doc:
                break
            if "landed" in doc:
                got.landed[doc["landed"]] = doc["t"]
            else:
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
            if (
                done.is_set()
                and want <= got.probes.keys()
                and (not kind.startswith("mlflow") or got.events)
            ):
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
