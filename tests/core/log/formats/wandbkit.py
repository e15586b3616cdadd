"""W&B runs for the tests: written by the real wandb library in offline mode (in a child
process, so the suite's environment stays its own), and a run file framed here from
records wandb's own protobuf classes serialize, for the faults wandb will not write (a step
logged twice, a record that fails its checksum)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

BLOCK = 32768
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4

WRITER = r"""
import json, os, sys, time
import wandb

for run in json.loads(sys.argv[1]):
    settings = wandb.Settings(x_transaction_log_flush_interval=run.get("flush", 15.0))
    if run.get("resume"):  # a later attempt: its own folder (named by the second it began)
        began = int(time.time())
        while int(time.time()) == began:
            time.sleep(0.02)
    r = wandb.init(project=run["project"], mode="offline", dir=run["dir"], id=run.get("id"),
                   config=run.get("config"), settings=settings, resume=run.get("resume"))
    for step, row in run["rows"]:
        r.log(row, step=step)
        time.sleep(run.get("pace", 0))
    go = run.get("wait_for")
    while go and not os.path.exists(go):
        time.sleep(0.05)
    r.finish(exit_code=run.get("exit", 0))
"""


def writer_env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        WANDB_DIR=str(tmp),
        WANDB_CONFIG_DIR=str(tmp / ".config"),
        WANDB_CACHE_DIR=str(tmp / ".cache"),
        WANDB_DATA_DIR=str(tmp / ".data"),
    )
    env.pop("WANDB_API_KEY", None)
    return env


def write_runs(tmp: Path, runs: list[dict]) -> None:
    """Each run ({"project", "dir", "rows": [[step, {key: value}]], "exit", "id",
    "config", "resume"}) written by wandb, one after the other, in one child process.

    A run with "resume" ("allow") is `wandb.init(id=..., resume=...)` again: offline, wandb
    writes it into a folder of its own, begun in a later second than the one before."""
    subprocess.run(
        [sys.executable, "-c", WRITER, json.dumps(runs)],
        env=writer_env(tmp),
        check=True,
        timeout=120,
        capture_output=True,
    )


def start_writer(tmp: Path, runs: list[dict]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, json.dumps(runs)],
        env=writer_env(tmp),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def run_file(folder: Path) -> Path:
    (found,) = folder.glob("wandb/*run-*/run-*.wandb")
    return found


def frame(payloads: list[bytes], version: int = 0) -> bytes:
    """A run file: the header, then each record in LevelDB's log framing (split across
    32 KiB blocks, a block's last bytes padded), as wandb frames it."""
    out = bytearray(b":W&B\xe1\xbe" + bytes([version]))
    for payload in payloads:
        first, rest = True, payload
        while True:
            left = BLOCK - len(out) % BLOCK
            if left < 7:
                out += b"\0" * left
                continue
            chunk, rest = rest[: left - 7], rest[left - 7 :]
            kind = (FULL if not rest else FIRST) if first else (LAST if not rest else MIDDLE)
            crc = zlib.crc32(chunk, zlib.crc32(bytes([kind])))
            out += struct.pack("<IHB", crc, len(chunk), kind) + chunk
            first = False
            if not rest:
                break
    return bytes(out)


def history(step: int, values: dict[str, object], time: float = 1.8e9) -> bytes:
    """A history Record as wandb serializes it (wandb's own protobuf classes): the values
    as value_json, with `_step` and `_timestamp`; a str value is written as its JSON text
    as it is (so a test can write one that is not JSON)."""
    from wandb.proto import wandb_internal_pb2 as pb

    rec = pb.Record()
    for key, value in {**values, "_step": step, "_timestamp": time + step}.items():
        item = rec.history.item.add()
        item.nested_key.append(key)
        item.value_json = value if isinstance(value, str) else json.dumps(value)
    rec.history.step.num = step
    return rec.SerializeToString()


def run_record(run_id: str, project: str = "p") -> bytes:
    from wandb.proto import wandb_internal_pb2 as pb

    rec = pb.Record()
    rec.run.run_id, rec.run.project = run_id, project
    return rec.SerializeToString()


def exit_record(code: int) -> bytes:
    from wandb.proto import wandb_internal_pb2 as pb

    rec = pb.Record()
    rec.exit.exit_code = code
    return rec.SerializeToString()
