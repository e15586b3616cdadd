"""`python -m fontaine_engine score`: re-score a run's saved checkpoints on a chosen probe surface.

A surface (engine/surface.py) is everything the eval probe measures with besides the
weights: the normalisation stats that turn sampled actions into raw units, the corpus, the
frame set, the flow sampler's Euler steps, the datasets the train slice and the stats are
drawn from, the precision. Each knob defaults to what the run itself used (the checkpoint's meta.json: its recipe and
platform; else the run's train_log.jsonl meta record), so a score on the defaults reproduces
the run's own eval records (tests/engine/test_score.py).

The output folder gets a train_log.jsonl in the engine's schema (engine/logwriter.py): a meta
record naming the source run, its checkpoints and the surface (field `score`), a start event,
one eval record per checkpoint step, an end event; the console reads it like a run. Only an
empty folder, or an earlier score output of ours, is written into.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from pathlib import Path

from .scoresource import LOG, Source, find_checkpoints, model_shape, run_meta
from .surface import ScoreError, Surface, surface_of

__all__ = ["ScoreError", "run_score"]
SCORE_KEY = "score"  # the meta record's field that marks a score output (ours to replace)


# -- the output folder ------------------------------------------------------------------------


def is_score_output(log: Path) -> bool:
    """Is this train_log.jsonl one `engine score` wrote (its first record a meta with `score`)?"""
    try:
        with open(log, "rb") as fh:
            first = json.loads(fh.readline() or b"null")
    except (OSError, ValueError):
        return False
    return (
        isinstance(first, dict)
        and first.get("kind") == "meta"
        and isinstance(first.get(SCORE_KEY), dict)
    )


def check_output(out: Path, src: Source) -> bool:
    """Check whether the score may write into `out`; True when it replaces an earlier output.

    True when an earlier score output of ours is there to be replaced. ScoreError (nothing
    touched) for anything else that is in the way.
    """
    here = out.resolve()
    if any(here == p or p in here.parents for p in (c.resolve() for c in src.checkpoints)) or (
        src.run_dir is not None and here == src.run_dir.resolve()
    ):
        raise ScoreError(
            f"--output-dir {out}: is the source run or inside one of its "
            "checkpoints; choose another folder"
        )
    if not out.exists():
        return False
    if not out.is_dir():
        raise ScoreError(f"--output-dir {out}: exists and is not a folder")
    try:
        entries = sorted(p.name for p in out.iterdir())
    except OSError as exc:
        raise ScoreError(f"--output-dir {out}: cannot list it ({exc.strerror})") from None
    if not entries:
        return False
    if entries == [LOG] and (out / LOG).is_file() and is_score_output(out / LOG):
        return True
    shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
    raise ScoreError(
        f"--output-dir {out}: not empty and not a score output of this engine "
        f"(holds {shown}); nothing was touched, choose another folder"
    )


# -- scoring ----------------------------------------------------------------------------------


def _corpus(surface: Surface, root: Path, image_size: int, cameras: tuple[str, ...] = ()):
    from . import corpus

    try:
        mode = corpus.check_dir(root)
        if mode != "use":
            if root != corpus.default_dir().resolve():
                raise ScoreError(
                    f"--data-dir {root}: no corpus to score on (expected the "
                    "corpus the run trained on, or a LeRobotDataset folder)"
                )
            corpus.ensure(root)  # the engine's own cache, rebuilt deterministically
        return corpus.load(root, surface.datasets, image_size, cameras or None)
    except corpus.CorpusError as exc:
        text = str(exc)  # a --datasets name not in the corpus names its own flag
        raise ScoreError(text if text.startswith("--") else f"--data-dir {text}") from None


def init_stats_file(src: Source) -> Path:
    """The stats.json of the engine checkpoint the run started from (`--stats init`).

    It is the checkpoint the run's meta record names, else its recipe's --init as found now.
    """
    from .init import InitError, describe

    named = run_meta(src.run_dir).get("init") or {}
    if isinstance(named, dict) and named.get("kind") == "engine" and named.get("path"):
        return Path(str(named["path"])) / "stats.json"
    value = str(src.newest["recipe"].get("init") or "")
    if not value:
        raise ScoreError(
            f"--stats init: run {src.run_name} started from no --init (expected a run "
            "trained from an engine checkpoint)"
        )
    try:
        init = describe(value)
    except InitError as exc:
        raise ScoreError(f"--stats init: {exc}") from None
    if init is None or init.kind != "engine":
        raise ScoreError(
            f"--stats init: --init {value} is a Hugging Face model folder, which has no "
            "stats (expected an engine checkpoint)"
        )
    return init.path / "stats.json"


def _with_text(src: Source, data):
    """The corpus as the run's model saw it: its task text tokenized and its history."""
    from dataclasses import replace

    from . import text

    try:
        data = text.as_recorded(data, src.newest)
    except text.TextError as exc:
        raise ScoreError(f"--checkpoints {src.newest_dir}: {exc}") from None
    return replace(data, history=int((src.newest.get("shape") or {}).get("history", 0)))


def _stats_for(surface: Surface, data, folder: Path, src: Source):
    from . import corpus
    from .stats import NormStats

    file = init_stats_file(src) if surface.stats == "init" else folder / "stats.json"
    try:
        if surface.stats in ("checkpoint", "init"):
            return NormStats.load(file)
        if surface.stats == "corpus":
            return data.stats()
        return data.recomputed_stats()
    except corpus.CorpusError as exc:
        raise ScoreError(f"--stats {surface.stats}: {exc}") from None
    except (OSError, ValueError, KeyError) as exc:
        raise ScoreError(f"--stats {surface.stats}: {file} unreadable ({exc})") from None


def _frames(surface: Surface, data):
    import numpy as np

    if surface.frames == "draw":
        return data.eval_draw(), data.train_slice()
    return np.flatnonzero(data.split == 1), data.train_slice()


def _device(requested: str, precision: str):
    """The device to score on, checked as `train` checks it (engine/cli.py): one process."""
    import torch

    from .distributed import pick_device
    from .flags import check_gpus, check_precision

    available = torch.cuda.is_available()
    check_gpus(requested, {}, available, torch.cuda.device_count() if available else 0)
    device = pick_device(requested, 0)
    if precision == "bf16" and device.type == "cuda":
        check_precision(
            precision,
            torch.cuda.is_bf16_supported(including_emulation=False),
            torch.cuda.get_device_name(),
        )
    return device


def _model(src: Source, device):
    """The policy the checkpoints hold (their recorded architecture), the first one's weights.

    A checkpoint that does not load is refused before a byte is written.
    """
    from . import checkpoint
    from .init import Init
    from .model import Policy

    size, chunk, motors, state_dim = model_shape(src.newest)
    arch = Init("engine", src.checkpoints[-1], meta=src.newest).architecture()
    try:
        shape = src.newest.get("shape") or {}
        cameras, history = int(shape.get("cameras", 1)), int(shape.get("history", 0))
        model = Policy(
            size,
            chunk,
            motors,
            state_dim,
            architecture=arch or None,
            cameras=cameras,
            history=history,
        ).to(device)
        checkpoint.load_weights(src.checkpoints[0], model)
    except KeyError:
        raise ScoreError(
            f"--checkpoints {src.checkpoints[0]}: unknown model size {size!r}"
        ) from None
    except Exception as exc:
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise ScoreError(
            f"--checkpoints {src.checkpoints[0]}: cannot load its weights ({first.strip()[:200]})"
        ) from None
    return model


def run_score(args: argparse.Namespace) -> int:
    """Validate everything (ScoreError: nothing written), then score and write the log."""
    import torch

    from . import accel, corpus, distributed, synthetic
    from .flags import check_writable
    from .init import Init
    from .train import cpu_threads

    src = find_checkpoints(Path(args.checkpoints))
    surface = surface_of(
        args,
        src.newest["recipe"],
        src.newest.get("platform") or run_meta(src.run_dir).get("platform"),
    )
    out = Path(args.output_dir)
    replace = check_output(out, src)
    root = (Path(surface.data_dir) if surface.data_dir else corpus.default_dir()).resolve()
    init = Init("engine", src.checkpoints[-1], meta=src.newest)
    cameras = corpus.camera_names(src.newest["recipe"].get("cameras"))  # the run's
    data = _with_text(src, _corpus(surface, root, init.image_size(synthetic.IMAGE_SIZE), cameras))
    _, chunk, motors, state_dim = model_shape(src.newest)
    have = (data.chunk, data.motors, int(data.states.shape[1]))
    if have != (chunk, motors, state_dim):
        raise ScoreError(
            f"--data-dir {root}: incompatible shape: the checkpoints predict "
            f"{chunk} x {motors} actions from a {state_dim}-d state, the corpus has "
            f"{have[0]} x {have[1]} and {have[2]}"
        )
    want = int((src.newest.get("shape") or {}).get("cameras", 1))
    if len(data.cameras) != want:
        raise ScoreError(
            f"--data-dir {root}: the checkpoints see {want} camera(s), the corpus has "
            f"{len(data.cameras)} ({', '.join(data.cameras)})"
        )
    device = _device(surface.device, surface.precision)
    accel.set_tf32(device, surface.precision)  # TF32 only for a "tf32" surface
    if device.type == "cpu":
        torch.set_num_threads(cpu_threads())
    model = _model(src, device)
    shared = (
        None if surface.stats == "checkpoint" else _stats_for(surface, data, src.newest_dir, src)
    )
    stats = [shared or _stats_for(surface, data, p, src) for p in src.checkpoints]
    check_writable("--output-dir", out)
    if replace:
        (out / LOG).unlink()
    ctx = distributed.Context(rank=0, world_size=1, local_rank=0, device=device)
    return _score(src, surface, out, root, data, model, ctx, stats)


def _score(
    src: Source, surface: Surface, out: Path, root: Path, data, model, ctx, stats: list
) -> int:
    """Write the meta record, then an eval record per checkpoint as it is scored."""
    import torch

    from . import checkpoint
    from .evaluate import PROBE_SEED, Probe, eval_record
    from .identity import identity
    from .logwriter import SCHEMA, LogWriter

    eval_idx, train_idx = _frames(surface, data)
    log = LogWriter(out / LOG)
    step = src.steps[0]
    try:
        ident = identity(root)
        log.write(
            "meta",
            0,
            schema=SCHEMA,
            run=f"{src.run_name}:score-{surface.name}",
            world_size=1,
            device=str(ctx.device),
            recipe=src.newest["recipe"],
            argv=list(sys.argv),
            host=socket.gethostname(),
            code=ident["code"],
            data=ident["data"],
            versions=ident["versions"],
            platform={
                "device": surface.device,
                "precision": surface.precision,
                "data_dir": str(root),
                "threads": torch.get_num_threads(),
            },
            score={
                "source_run": src.run_name,
                "source": str(src.run_dir or src.checkpoints[0].parent),
                "checkpoints": [str(p) for p in src.checkpoints],
                "steps": list(src.steps),
                "skipped": list(src.skipped),
                "surface": surface.to_json(),
            },
        )
        skipped = f"; skipped {', '.join(src.skipped)} (incomplete)" if src.skipped else ""
        log.event(
            0,
            "start",
            f"re-scoring {len(src.checkpoints)} checkpoint(s) of "
            f"{src.run_name} on surface {surface.name} (stats {surface.stats}"
            + (f" {init_stats_file(src)}" if surface.stats == "init" else "")
            + ", "
            f"frames {surface.frames}, {surface.sampling_steps} Euler steps, "
            f"data {root}){skipped}",
        )
        probes = None
        for i, (folder, step, meta) in enumerate(
            zip(src.checkpoints, src.steps, src.metas, strict=True)
        ):
            if i:
                checkpoint.load_weights(folder, model)
            if probes is None or probes[0] is not stats[i]:  # frames normalised by the stats
                probes = (
                    stats[i],
                    *(
                        Probe(
                            data,
                            idx,
                            stats[i],
                            seed,
                            ctx,
                            surface.precision,
                            surface.sampling_steps,
                        )
                        for idx, seed in ((eval_idx, PROBE_SEED), (train_idx, PROBE_SEED + 1))
                    ),
                )
            record = eval_record(probes[1], probes[2], model, surface.breakdown)
            log.write(
                "eval",
                step,
                **record,
                checkpoint=str(folder),
                surface=surface.name,
                samples=meta.get("samples"),
            )
        log.event(
            step,
            "end",
            f"finished: {len(src.checkpoints)} checkpoint(s) scored on surface {surface.name}",
        )
        return 0
    except KeyboardInterrupt:
        log.event(step, "error", f"interrupted (SIGINT) at step {step}")
        return 130
    except Exception as exc:  # logged for the console, then a non-zero exit
        return log.failed(step, exc)
    finally:
        log.close()
