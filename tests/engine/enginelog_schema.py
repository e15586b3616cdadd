"""Schema v1 check of train_log.jsonl records, written from the docs' schema section (docs/run-folder.md) (independent of the engine)."""

from __future__ import annotations

import json
import math
from pathlib import Path

NUM = (int, float)
FIELDS = {
    "meta": {
        "schema": int,
        "run": str,
        "world_size": int,
        "device": str,
        "recipe": dict,
        "argv": list,
        "host": str,
    },
    "train": {
        "loss": NUM,
        "ar_ce": NUM,
        "flow_loss": NUM,
        "lr": NUM,
        "grad_norm": NUM,
        "step_s": NUM,
        "data_s": NUM,
        "samples": int,
    },
    "eval": {
        "eval_chunk_mae": NUM,
        "train_chunk_mae": NUM,
        "eval_ar_ce": NUM,
        "eval_flow_loss": NUM,
        "breakdown": dict,
        "n_frames": int,
    },
    "checkpoint": {"path": str},
    "event": {"event": str, "detail": str},
    "alert": {"level": str, "title": str, "text": str},
}
EVENTS = {"start", "resume", "end", "error", "warning"}


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check(records: list[dict]) -> None:
    assert records and records[0]["kind"] == "meta", "meta must be the first line"
    for r in records:
        assert r["kind"] in FIELDS, r
        assert isinstance(r["step"], int) and not isinstance(r["step"], bool), r
        assert isinstance(r["time"], float) and r["time"] > 1e9, r
        for name, typ in FIELDS[r["kind"]].items():
            assert name in r, (name, r)
            assert isinstance(r[name], typ) and not isinstance(r[name], bool), (name, r)
        if r["kind"] == "meta":
            assert r["schema"] == 1 and r["world_size"] >= 1
        if r["kind"] == "event":
            assert r["event"] in EVENTS, r
        if r["kind"] == "eval":
            assert all(isinstance(v, float) for v in r["breakdown"].values())
        if r["kind"] == "train":
            assert 0 <= r["data_s"] <= r["step_s"] and math.isfinite(r["loss"])
