"""The disambiguator of an AMBIGUOUS-BY-INSTRUMENT verdict: re-score the saved checkpoints.

The run's saved checkpoints are scored again on another probe surface with
`python -m fontaine_engine score` (engine/score.py), run as a subprocess with the run's
interpreter, and what it wrote is read back.

The surface offered is the other normalisation: the corpus's own pooled meta/stats.json for a
run that recomputed its stats (`--recompute-stats`), else the stats recomputed over its train
datasets (the run read the corpus's or its init checkpoint's). The stats are what turns
sampled actions into the raw units the eval MAE is read in, so a disagreement carried by the
instrument's units shows up there.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core import children
from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.enginename import ENGINE_MODULE
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.preset.checks import BY_INSTRUMENT
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.run.evidence import seen_probes
from fontaine_tui.core.run.logtail import newest_checkpoint
from fontaine_tui.core.runfolder import LOG, RunFolder
from fontaine_tui.core.text import literal

OUTPUT_PREFIX = "score-"
STATS_WORDS = {
    "corpus": "the corpus's own meta/stats.json instead of the stats the run recomputed",
    "recomputed": "stats recomputed over the train datasets instead of those the run used "
    "(the corpus's meta/stats.json, or its init checkpoint's)",
}


@dataclass(frozen=True, slots=True)
class ScoreOffer:
    """The command that re-scores a run's checkpoints on `surface` into `output_dir`."""

    run: Path
    surface: str
    stats: str
    output_dir: Path
    argv: tuple[str, ...]

    @property
    def command(self) -> str:
        """The command as a shell line, every path quoted."""
        return shlex.join(self.argv)

    def describe(self) -> list[str]:
        """What the offer is, in words, then the command (for plain output)."""
        return [
            f"disambiguator: re-score the saved checkpoints on the {self.surface} surface "
            f"({STATS_WORDS.get(self.stats, self.stats)}):",
            f"  {self.command}",
        ]


@dataclass(frozen=True, slots=True)
class ScoreRow:
    step: int
    run: float | None  # the run's own eval_chunk_mae at this step (None: not probed)
    rescored: float


@dataclass(frozen=True, slots=True)
class ScoreState:
    """A re-score's progress: running, done (with its rows) or failed (with why)."""

    offer: ScoreOffer
    status: str  # "running" | "done" | "failed"
    detail: str
    rows: tuple[ScoreRow, ...] = ()


def run_python(folder: RunFolder) -> str:
    """The run's interpreter.

    It is the one prereg.json's engine command starts (`PY -m ...`), else this one."""
    try:
        argv = json_loads(read_whole(folder.prereg)).get("argv")
    except (OSError, ValueError, AttributeError):
        argv = None
    if (
        isinstance(argv, list)
        and len(argv) > 2
        and argv[1] == "-m"
        and all(isinstance(a, str) for a in argv[:2])
        and argv[0]
    ):
        return argv[0]
    return sys.executable


def _recomputed(checkpoint: Path) -> bool:
    try:
        recipe = json_loads(read_whole(checkpoint / "meta.json")).get("recipe")
    except (OSError, ValueError, AttributeError):
        return True
    return bool(recipe.get("recompute_stats", True)) if isinstance(recipe, dict) else True


def score_offer(folder: RunFolder, verdict: str, python: str | None = None) -> ScoreOffer | None:
    """The re-score to run for a verdict of this run folder, if any.

    It is offered only for AMBIGUOUS-BY-INSTRUMENT, and only for an engine run with a saved
    checkpoint."""
    if verdict != BY_INSTRUMENT:
        return None
    found = newest_checkpoint(folder)
    if found is None or not (found[1] / "model.safetensors").is_file():
        return None
    stats = "corpus" if _recomputed(found[1]) else "recomputed"
    surface = f"stats-{stats}"
    out = folder.root / f"{OUTPUT_PREFIX}{surface}"
    argv = (
        python or run_python(folder),
        "-m",
        ENGINE_MODULE,
        "score",
        "--checkpoints",
        str(folder.root),
        "--stats",
        stats,
        "--output-dir",
        str(out),
    )
    return ScoreOffer(folder.root, surface, stats, out, argv)


async def run_score(offer: ScoreOffer, env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """Run the offer's command to its end without blocking the loop.

    Returns (exit code, the last line it printed, made literal). Cancelled (the console quits),
    it stops the process."""
    run_env = dict(os.environ if env is None else env)
    run_env.setdefault("PYTHONUNBUFFERED", "1")
    proc = await children.spawn(
        *offer.argv,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=child_env(run_env),
    )
    tail: deque[bytes] = deque(maxlen=20)
    try:
        assert proc.stdout is not None
        async for line in proc.stdout:
            if line.strip():
                tail.append(line)
        code = await proc.wait()
    finally:
        if proc.returncode is None:  # cancelled: its group stopped, then waited for
            await children.end(proc, group=True, first=signal.SIGTERM)
    last = tail[-1].decode("utf-8", "replace").strip() if tail else ""
    return code, literal(last)[:300]


def read_scores(output_dir: Path, own: Mapping[int, float]) -> tuple[ScoreRow, ...]:
    """The re-scored eval_chunk_mae per step beside the run's own (`own`: step -> value)."""
    store = load_log(output_dir / LOG)
    # the re-score's own log, which no preset blinds: the session offers no re-score of a
    # hidden read (model/session.py's score_offer)
    return tuple(
        ScoreRow(step, own.get(step), probe.eval_chunk_mae)
        for step, probe in sorted(seen_probes(store, hidden=False).items())
    )


async def rescore(offer: ScoreOffer, own: Mapping[int, float]) -> ScoreState:
    """Run the offer, then read its records: the state it ends in, done or failed."""
    try:
        code, last = await run_score(offer)
    except OSError as exc:
        return ScoreState(
            offer, "failed", f"cannot start {literal(offer.argv[0])}: {exc.strerror or exc}"
        )
    if code != 0:
        return ScoreState(offer, "failed", f"exit {code}: {last or 'no output'}")
    try:
        rows = await asyncio.to_thread(read_scores, offer.output_dir, own)
    except (OSError, InputError) as exc:
        return ScoreState(offer, "failed", f"cannot read its output: {literal(str(exc))}")
    return ScoreState(
        offer,
        "done",
        f"{len(rows)} checkpoint(s) re-scored into {literal(str(offer.output_dir))}",
        rows,
    )
