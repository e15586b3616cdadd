"""`fontaine-tui get` says how many distinct train keys were not kept, in a real subprocess.

Keys past the store's bound are each counted once, however many records log them again, and
those cut from a single record too wide to hold are counted as well."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fontaine_tui.core.log.extras import KEYS_KEPT


def said(folder: Path) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "get", str(folder), "-m", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and res.stdout == "", res.stderr
    return res.stderr


def write(folder: Path, recs: list[dict]) -> Path:
    folder.mkdir()
    (folder / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return folder


def train(step: int, extra: dict[str, float]) -> dict:
    return {"kind": "train", "step": step, "time": float(step), "loss": 1.0} | extra


def test_keys_varying_between_records_are_each_counted_once(tmp_path):
    """6,000 distinct keys, each record a shifting window of 600 of them."""
    recs = [train(s, {f"x{(s * 37 + j) % 6000}": 1.0 for j in range(600)}) for s in range(1, 161)]
    assert len({k for r in recs for k in r if k.startswith("x")}) == 6000
    assert f"; {6000 - KEYS_KEPT} more keys not kept)" in said(write(tmp_path / "run", recs))


def test_the_numbers_cut_from_one_wide_record_are_counted(tmp_path):
    recs = [train(1, {f"m{i}": float(i) for i in range(10_000)})]
    recs += [train(s, {"m9999": 2.0}) for s in (2, 3)]  # a key cut, logged again
    assert "; 5904 more keys not kept)" in said(write(tmp_path / "run", recs))
