"""A probe surface: everything the eval probe measures with besides the weights.

That is the normalisation stats, the corpus, the frame set, the flow sampler's Euler steps,
the datasets the train slice and the stats are drawn from, and the precision.
`python -m fontaine_engine score` (engine/score.py) chooses it: each knob the run's own unless
a flag sets it apart."""

from __future__ import annotations

import argparse
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .flags import UsageExit

AS_RUN = "as-run"
SURFACE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


class ScoreError(UsageExit):
    """Bad input to `score`: one line, `engine: error: ...`, and exit code 2.

    It is handled as every flag check of engine/flags.py (whose checks `score` shares with
    `train`).
    """


@dataclass(frozen=True, slots=True)
class Surface:
    name: str
    stats: str
    data_dir: str
    frames: str
    sampling_steps: int
    datasets: tuple[str, ...] | None  # None: every sub-dataset
    breakdown: bool
    precision: str
    device: str
    differs: tuple[str, ...]  # the knobs set apart from the run's

    def to_json(self) -> dict:
        d = asdict(self)
        d["datasets"] = list(self.datasets) if self.datasets else "all"
        d["differs"] = list(self.differs)
        return d


def _datasets(text: str | None) -> tuple[str, ...] | None:
    from . import corpus

    names = corpus.dataset_names(text)
    return None if not names or names == ("all",) else names


def _same_dir(a: str, b: str) -> bool:
    from . import corpus

    def place(p: str) -> Path:
        return (Path(p) if p else corpus.default_dir()).resolve()

    return place(a) == place(b)


def surface_of(args: argparse.Namespace, recipe: dict, platform: dict | None) -> Surface:
    """The flags over the run's own surface (its checkpoint's `recipe` and `platform`).

    A knob left out is the run's.
    """
    from .model import EULER_STEPS

    platform = platform or {}
    run: dict[str, Any] = {
        "stats": "checkpoint",
        "data_dir": str(platform.get("data_dir") or ""),
        "frames": "draw",
        "sampling_steps": EULER_STEPS,
        "datasets": _datasets(recipe.get("datasets")),
        "precision": str(platform.get("precision") or "fp32"),
    }
    given = {
        "stats": args.stats,
        "data_dir": args.data_dir,
        "frames": args.frames,
        "sampling_steps": args.sampling_steps,
        "precision": args.precision,
    }
    chosen = {k: (run[k] if given.get(k) is None else given[k]) for k in run}
    if args.datasets is not None:  # `all` (None here): every sub-dataset, not the run's
        chosen["datasets"] = _datasets(args.datasets)
    differs = []
    for key in run:
        same = _same_dir(chosen[key], run[key]) if key == "data_dir" else chosen[key] == run[key]
        if not same:
            differs.append(key)
    if args.surface is not None:
        if not SURFACE_NAME.fullmatch(args.surface):
            raise ScoreError(
                f"--surface {args.surface!r}: expected a name of letters, digits "
                "and . _ + - (at most 64, starting with a letter or digit)"
            )
        name = args.surface
    else:
        name = surface_name(chosen, differs)
    breakdown = (
        bool(recipe.get("eval_dataset_breakdown", False))
        if args.breakdown is None
        else args.breakdown
    )
    return Surface(
        name,
        chosen["stats"],
        chosen["data_dir"],
        chosen["frames"],
        int(chosen["sampling_steps"]),
        chosen["datasets"],
        breakdown,
        chosen["precision"],
        args.device,
        tuple(differs),
    )


def surface_name(chosen: dict, differs: list[str]) -> str:
    """`as-run`, or the knobs set apart from the run's: stats-corpus_steps-2, ..."""
    words = []
    for key in differs:
        value = chosen[key]
        if key == "stats":
            words.append(f"stats-{value}")
        elif key == "data_dir":
            words.append("data-" + re.sub(r"[^A-Za-z0-9._+-]", "-", Path(value).name or "corpus"))
        elif key == "frames":
            words.append(f"frames-{value}")
        elif key == "sampling_steps":
            words.append(f"steps-{value}")
        elif key == "datasets":
            words.append("datasets-" + ("+".join(value) if value else "all"))
        elif key == "precision":
            words.append(str(value))
    return "_".join(words)[:64].strip("_") or AS_RUN
