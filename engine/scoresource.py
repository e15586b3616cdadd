"""The checkpoints a re-score reads, found in a run folder, its checkpoints/ or one step folder.

find_checkpoints keeps the complete step folders, by step, and refuses checkpoints of different
models; run_meta reads the source run's last meta record (engine/score.py defaults its surface
and its `--stats init` to it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .surface import ScoreError

LOG = "train_log.jsonl"
STEP_DIR = re.compile(r"step-(\d+)")


@dataclass(frozen=True, slots=True)
class Source:
    """The checkpoints to re-score and the run they came from."""

    checkpoints: tuple[Path, ...]  # complete step folders, by step
    steps: tuple[int, ...]
    metas: tuple[dict, ...]
    run_dir: Path | None
    run_name: str
    skipped: tuple[str, ...]  # incomplete step folders left out

    @property
    def newest(self) -> dict:
        return self.metas[-1]

    @property
    def newest_dir(self) -> Path:
        return self.checkpoints[-1]


def _meta(folder: Path) -> dict:
    from . import checkpoint

    try:
        meta = checkpoint.load_meta(folder)
    except (OSError, ValueError) as exc:
        raise ScoreError(f"--checkpoints {folder}: meta.json unreadable ({exc})") from None
    if (
        not isinstance(meta, dict)
        or not isinstance(meta.get("step"), int)
        or not isinstance(meta.get("recipe"), dict)
    ):
        raise ScoreError(
            f"--checkpoints {folder}: meta.json records no step and recipe "
            "(expected a checkpoint of this engine)"
        )
    return meta


def model_shape(meta: dict) -> tuple[str, int, int, int]:
    """Read the model size, chunk, motors and state width a checkpoint's meta.json records."""
    from .corpus import CHUNK
    from .synthetic import MOTORS

    shape = meta.get("shape") or {}  # a checkpoint from before shapes were recorded: 8 x 6, 6
    size = meta.get("model_size") or meta["recipe"].get("model_size")
    try:
        return (
            str(size),
            int(shape.get("chunk", CHUNK)),
            int(shape.get("motors", MOTORS)),
            int(shape.get("state_dim", MOTORS)),
        )
    except (TypeError, ValueError):
        raise ScoreError(
            f"checkpoint step {meta['step']}: meta.json shape {shape!r} is not "
            "{chunk, motors, state_dim} integers"
        ) from None


def find_checkpoints(path: Path) -> Source:
    """A run folder, its checkpoints/ folder, or one step folder -> the complete checkpoints."""
    from . import checkpoint

    if not path.exists():
        raise ScoreError(f"--checkpoints {path}: no such folder")
    if not path.is_dir():
        raise ScoreError(
            f"--checkpoints {path}: not a folder (expected a run folder, its "
            "checkpoints/ folder or a step-NNNNNN checkpoint folder)"
        )
    if (path / "meta.json").is_file() or (path / "model.safetensors").is_file():
        if not checkpoint.is_complete(path):
            raise ScoreError(
                f"--checkpoints {path}: an incomplete checkpoint (expected "
                f"{', '.join(checkpoint.FILES)} and a step in meta.json)"
            )
        folders, root, skipped = [path], path.parent, []
    else:
        run_like = (path / "checkpoints").is_dir() or (path / LOG).is_file()
        root = path / "checkpoints" if run_like else path
        try:
            found = sorted(
                (
                    p
                    for p in (root.iterdir() if root.is_dir() else ())
                    if STEP_DIR.fullmatch(p.name) and p.is_dir()
                ),
                key=lambda p: int(p.name[5:]),
            )
        except OSError as exc:
            raise ScoreError(f"--checkpoints {path}: cannot list {root} ({exc.strerror})") from None
        if not found and not run_like:
            raise ScoreError(
                f"--checkpoints {path}: not a checkpoint folder of this engine, nor "
                "a run or checkpoints folder holding one (expected step-NNNNNN/ "
                "with meta.json and model.safetensors)"
            )
        folders = [p for p in found if checkpoint.is_complete(p)]
        skipped = [p.name for p in found if p not in folders]
        if not folders:
            why = f"{len(found)} incomplete step folder(s)" if found else "no step-NNNNNN folder"
            raise ScoreError(
                f"--checkpoints {path}: no complete checkpoint in {root} ({why}; "
                "the run saved none yet?)"
            )
    metas = [_meta(p) for p in folders]
    shapes = {
        (model_shape(m), json.dumps(m.get("architecture") or {}, sort_keys=True)) for m in metas
    }
    if len(shapes) > 1:
        raise ScoreError(
            f"--checkpoints {path}: checkpoints of different models "
            f"({'; '.join(str(s[0]) for s in sorted(shapes))}, or their recorded "
            "architecture); score one run at a time"
        )
    steps = [int(m["step"]) for m in metas]
    if len(set(steps)) != len(steps):
        raise ScoreError(f"--checkpoints {path}: two checkpoints record the same step")
    order = sorted(range(len(steps)), key=steps.__getitem__)
    run_dir = root.parent if root.name == "checkpoints" else None
    return Source(
        tuple(folders[i] for i in order),
        tuple(steps[i] for i in order),
        tuple(metas[i] for i in order),
        run_dir,
        _run_name(run_dir, path),
        tuple(skipped),
    )


def run_meta(run_dir: Path | None) -> dict:
    """The run's last meta record (its newest start), or {} without a readable log."""
    if run_dir is None:
        return {}
    found: dict = {}
    try:
        with open(run_dir / LOG, "rb") as fh:
            for line in fh:
                if b'"meta"' not in line:
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and rec.get("kind") == "meta":
                    found = rec
    except OSError:
        return {}
    return found


def _run_name(run_dir: Path | None, given: Path) -> str:
    name = run_meta(run_dir).get("run")
    if isinstance(name, str) and name:
        return name
    return (run_dir or given).resolve().name
