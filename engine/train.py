"""The training run: the optimizer step (DDP + ZeRO-1 + accumulation) and the loop.

The session it steps (the model, its DDP wrapper, the optimizer) is built in engine/session.py.

A step whose loss is not finite stops the run there (every rank sees the same all-reduced
loss): an "error" event naming it, no probe or checkpoint of the poisoned weights, exit 3.
"""

from __future__ import annotations

import argparse
import base64
import math
import os
import signal
import socket
import sys
import time
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from . import accel, checkpoint, corpus, datastats, distributed, optim, status, text
from . import init as inits
from .evaluate import PROBE_SEED, Probe, eval_record
from .flags import UsageError
from .identity import identity
from .logwriter import SCHEMA, LogWriter
from .model import architecture, count_parameters
from .pipeline import StepBatches, loader
from .session import Session, build_session, load_init, shape_of
from .stats import NormStats
from .synthetic import IMAGE_SIZE

RECIPE_KEYS = (
    "model_size",
    "datasets",
    "cameras",
    "task_tokens",
    "history",
    "batch_size",
    "backward_chunks",
    "micro_batch",
    "seed",
    "image_augment",
    "recompute_stats",
    "objective",
    "insulate_flow",
    "flow_decoder_init",
    "init",
    "lr",
    "warmup_steps",
    "steps",
    "eval_every",
    "eval_dataset_breakdown",
    "save_every",
    "chunk_grad_allreduce",
    "probe_at_start",
)
PLATFORM_KEYS = (
    "num_workers",
    "prefetch_factor",
    "device",
    "data_dir",
    "precision",
    "activation_checkpointing",
    "compile",
    "eval_batch",
)
MIN_LR_FRACTION = 0.1
GRAD_CLIP = 1.0
NONFINITE_EXIT = 3  # a step's loss was NaN or infinite: the run stops, its weights unsaved
LOSS_KEYS = ("loss", "ar_ce", "flow_loss")


def lr_at(step: int, base: float, warmup: int, total: int) -> float:
    """The learning rate: linear warmup to base, then cosine down to MIN_LR_FRACTION * base.

    step is 0-based. A step at or past total (a run extended with --extend-to) stays at that
    floor.
    """
    if step >= total:
        return base * MIN_LR_FRACTION
    if warmup > 0 and step < warmup:
        return base * (step + 1) / warmup
    span = max(1, total - warmup)
    progress = min(1.0, (step - warmup) / span)
    return base * (
        MIN_LR_FRACTION + (1 - MIN_LR_FRACTION) * 0.5 * (1 + math.cos(math.pi * progress))
    )


def data_root(args: argparse.Namespace) -> Path:
    return Path(args.data_dir) if args.data_dir else corpus.default_dir()


def datasets_of(args: argparse.Namespace) -> tuple[str, ...] | None:
    """--datasets demos,rig as names (None: every sub-dataset)."""
    return corpus.dataset_names(getattr(args, "datasets", "")) or None


def cameras_of(args: argparse.Namespace) -> tuple[str, ...] | None:
    """--cameras as names, in their order (None: every camera feature of the data)."""
    return corpus.camera_names(getattr(args, "cameras", "")) or None


def resolve_stats(
    args,
    ctx: distributed.Context,
    data: corpus.Corpus,
    resume_from: Path | None,
    init: inits.Init | None = None,
) -> tuple[NormStats, str]:
    """Rank 0 decides the stats; every rank gets rank 0's copy."""
    source = "corpus"
    stats = None
    if ctx.main:
        if resume_from is not None:
            stats, source = (
                NormStats.load(resume_from / "stats.json"),
                f"checkpoint {resume_from.name}",
            )
        elif args.recompute_stats:
            stats, source = data.recomputed_stats(), f"recomputed over {','.join(data.train_names)}"
        elif init is not None and init.kind == "engine":
            stats, source = NormStats.load(init.path / "stats.json"), f"init {init.path}"
        else:
            stats, source = data.stats(), f"corpus meta/stats.json of {','.join(data.train_names)}"
    size = 2 * data.motors + 2 * data.states.shape[1]
    packed = stats.to_tensor() if stats is not None else torch.zeros(size, dtype=torch.float64)
    return NormStats.from_tensor(distributed.broadcast(ctx, packed), data.motors), source


def clip_warning(data: corpus.Corpus, stats: NormStats, source: str) -> str | None:
    """A line when the stats leave a large share of the train action targets beyond q01/q99.

    See engine/datastats.py.
    """
    return datastats.clip_warning(
        data.actions[data.train_index],
        stats.action_q01,
        stats.action_q99,
        list(data.action_names),
        source,
    )


def optimizer_step(s: Session, batches, step: int) -> dict:
    """One optimizer step over backward_chunks micro-batches; returns rank-averaged metrics."""
    args, chunks = s.args, s.layout.chunks
    lr = lr_at(step, args.lr, args.warmup_steps, args.steps)
    for group in s.optimizer.param_groups:
        group["lr"] = lr
    sums = torch.zeros(3, dtype=torch.float64, device=s.ctx.device)  # no per-chunk host sync
    t0 = time.perf_counter()
    step_batch = next(batches)
    data_s = time.perf_counter() - t0
    for k in range(chunks):
        batch = {key: v[k].to(s.ctx.device, non_blocking=True) for key, v in step_batch.items()}
        sync_later = s.ctx.distributed and k < chunks - 1 and not args.chunk_grad_allreduce
        with s.model.no_sync() if sync_later and isinstance(s.model, DDP) else nullcontext():
            with accel.autocast(s.ctx.device, getattr(args, "precision", "fp32")):
                out = s.model(batch, args.objective, args.insulate_flow)
            (out["loss"] / chunks).backward()
        sums += torch.stack([out["loss"].detach(), out["ar_ce"], out["flow_loss"]]).double()
    grad_norm = torch.nn.utils.clip_grad_norm_(s.module.parameters(), GRAD_CLIP)
    s.optimizer.step()
    s.optimizer.zero_grad(set_to_none=True)
    mean = distributed.all_sum(s.ctx, sums.cpu() / chunks) / s.ctx.world_size
    return {
        "loss": float(mean[0]),
        "ar_ce": float(mean[1]),
        "flow_loss": float(mean[2]),
        "lr": lr,
        "grad_norm": float(grad_norm),
        "data_s": data_s,
    }


def nonfinite(metrics: dict) -> str:
    """The step's losses that are not finite, as "loss=nan, ar_ce=inf"; "" when all are.

    They are the all-reduced means, so every rank gives the same answer."""
    return ", ".join(f"{k}={metrics[k]!r}" for k in LOSS_KEYS if not math.isfinite(metrics[k]))


def first_step(s: Session, batches, step: int, log: LogWriter) -> dict:
    """Take the first optimizer step, a --compile failure made one line and exit 2.

    It is optimizer_step. Under --compile a compiler failure (torch.compile compiles on the
    first forward and backward) becomes one line and exit 2 instead of its traceback.
    """
    try:
        return optimizer_step(s, batches, step)
    except Exception as exc:
        if not getattr(s.args, "compile", False) or not accel.is_compile_error(exc):
            raise
        message = accel.compile_failure(exc)
        log.event(step, "error", message)
        raise UsageError(message) from None


def _rng_meta() -> dict:
    return {
        "torch": base64.b64encode(torch.get_rng_state().numpy().tobytes()).decode(),
        "numpy": base64.b64encode(repr(np.random.get_state()).encode()).decode(),
    }


def save_checkpoint(s: Session, step: int, stats: NormStats, log: LogWriter) -> None:
    opt_state = checkpoint.optimizer_state(s.optimizer)  # collective under ZeRO
    if s.ctx.main and opt_state is not None:  # rank 0 holds the whole state
        recipe = {k: getattr(s.args, k) for k in RECIPE_KEYS}
        meta = {
            "step": step,
            "samples": step * s.args.batch_size,
            "recipe": recipe,
            "extend_to": getattr(s.args, "extend_to", 0),  # --extend-to N, 0 when not extended
            "world_size": s.ctx.world_size,
            "model_size": s.args.model_size,
            # what a re-score (engine/score.py) defaults its surface to
            "platform": {k: getattr(s.args, k, None) for k in PLATFORM_KEYS},
            "shape": shape_of(s.module),
            "inputs": s.inputs,
            "architecture": architecture(s.module),
            "rng": _rng_meta(),
            "time": time.time(),
        }
        path = checkpoint.save(
            Path(s.args.output_dir) / "checkpoints", step, s.module, opt_state, stats, meta
        )
        log.write("checkpoint", step, path=str(path))
    distributed.barrier(s.ctx)


class Stopped(BaseException):
    """A stop asked for before the first step: nothing trained yet, so nothing to keep."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class StopFlag:
    """SIGINT/SIGTERM ask for a clean stop after the current optimizer step.

    Before the training loop is `armed` (building the corpus, decoding its frames, building
    the model: a minute on a busy CPU) there is no step to finish nor weights to save: the
    signal stops the run at once (`Stopped`), what was half built discarded as on any error.
    """

    def __init__(self) -> None:
        self.signum = 0
        self.armed = False
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handle)

    def arm(self) -> None:
        """From now on a signal waits for the step under way (a stop asked already stops)."""
        self.armed = True

    def _handle(self, signum, _frame) -> None:
        self.signum = signum
        if not self.armed:  # once: a second signal while it unwinds only sets signum
            self.armed = True
            raise Stopped(signum)


def cpu_threads() -> int:
    """Intra-op threads for a CPU run: half the cores (at least one).

    The rest are left to the data workers and whatever else shares the machine. Measured on
    2 shared cores, one thread was as fast as two when idle and faster under load.
    OMP_NUM_THREADS wins.
    """
    if os.environ.get("OMP_NUM_THREADS"):
        return torch.get_num_threads()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 2) // 2)


def run(args: argparse.Namespace) -> int:
    ctx = distributed.setup(args.device)
    if ctx.device.type == "cpu":
        torch.set_num_threads(cpu_threads())
    out = Path(args.output_dir)
    log = LogWriter(out / "train_log.jsonl" if ctx.main else None)
    stop = StopFlag()
    step = 0
    try:
        resume_from = checkpoint.latest(out / "checkpoints") if args.resume else None
        if resume_from is not None:
            step = int(checkpoint.load_meta(resume_from)["step"])
        recipe = {k: getattr(args, k) for k in RECIPE_KEYS}
        root = data_root(args)
        init = inits.describe(args.init)  # validated by the CLI
        size = init.image_size(IMAGE_SIZE) if init is not None else IMAGE_SIZE
        data = None
        said = status.say if ctx.main else None  # what it does until the first record
        if ctx.main:  # builds the corpus and decodes its frames into the cache, once
            corpus.ensure(root, say=said)
            data = corpus.load(root, datasets_of(args), size, cameras_of(args), say=said)
        distributed.barrier(ctx)
        if data is None:  # the other ranks read what rank 0 built and decoded
            data = corpus.load(root, datasets_of(args), size, cameras_of(args))
        try:
            tok = text.for_init(init)
            data = replace(text.attach(data, tok, args.task_tokens), history=args.history)
            if said is not None:
                said("building the model")
            s = build_session(args, ctx, data, init)
            text.check_vocab(data, tok, int(s.module.backbone.config.vocab_size))
        except text.TextError as exc:
            raise UsageError(str(exc)) from None
        s.inputs = inputs = text.inputs(data, tok, args.task_tokens)
        stats, stats_source = resolve_stats(args, ctx, data, resume_from, init)
        # after the corpus is in place, so the meta names the data it trains on
        ident = identity(root.resolve())
        log.write(
            "meta",
            step,
            schema=SCHEMA,
            run=args.run_name,
            world_size=ctx.world_size,
            device=str(ctx.device),
            recipe=recipe,
            extend_to=args.extend_to,
            argv=list(sys.argv),
            host=socket.gethostname(),
            code=ident["code"],
            data=ident["data"],
            versions=ident["versions"],
            init=init.identity() if init is not None else None,
            optimizer=optim.describe(s.module),
            inputs=inputs,
            platform={
                **{k: getattr(args, k) for k in PLATFORM_KEYS},
                "threads": torch.get_num_threads(),
                "tf32": accel.set_tf32(ctx.device, args.precision),
            },
            stats={"source": stats_source, "datasets": data.stats_origin},
        )
        if ctx.main and (warning := clip_warning(data, stats, stats_source)):
            log.event(step, "warning", warning)
            log.alert(step, "warn", "normalisation stats saturate the action tokens", warning)
            print(f"engine: warning: {warning}", file=sys.stderr)
        if resume_from is not None:
            checkpoint.load_weights(resume_from, s.module)
            s.optimizer.load_state_dict(
                optim.regroup(checkpoint.load_optimizer(resume_from), s.module)
            )
            log.event(
                step,
                "resume",
                f"resumed from checkpoint {resume_from.name} (step {step}); "
                f"stats from {stats_source}",
            )
        else:
            note = load_init(s, args, init)
            note += " (--resume: no checkpoint yet)" if args.resume else ""
            log.event(
                0,
                "start",
                f"model {args.model_size} {count_parameters(s.module)} params, "
                f"device {ctx.device}, world {ctx.world_size}, stats {stats_source}{note}",
            )
        torch.manual_seed(args.seed + ctx.rank + 7919 * step)
        eval_probe, train_probe = (
            Probe(data, idx, stats, seed, ctx, args.precision, batch=args.eval_batch)
            for idx, seed in ((data.eval_draw(), PROBE_SEED), (data.train_slice(), PROBE_SEED + 1))
        )
        if args.probe_at_start and step == 0:  # the starting weights, before any update
            log.write(
                "eval",
                0,
                **eval_record(eval_probe, train_probe, s.module, args.eval_dataset_breakdown),
            )
        dataset = StepBatches(data, stats, s.layout, args.seed, args.image_augment)
        # --extend-to N trains past the recipe's steps: lr_at keeps the schedule to `steps` and
        # holds its floor after it; the recipe's endpoint keeps its probe and checkpoint
        endpoint = args.extend_to or args.steps
        batches = iter(
            loader(
                dataset,
                step,
                endpoint,
                args.num_workers,
                args.prefetch_factor,
                pin=ctx.device.type == "cuda",
            )
        )
        first = True  # a --compile failure surfaces in the first step
        stop.arm()
        while step < endpoint:
            t0 = time.perf_counter()
            metrics = (
                first_step(s, batches, step, log) if first else optimizer_step(s, batches, step)
            )
            first = False
            if ctx.device.type == "cuda":
                torch.cuda.synchronize(ctx.device)
            step += 1
            log.write(
                "train",
                step,
                step_s=time.perf_counter() - t0,
                samples=step * args.batch_size,
                **metrics,
            )
            if bad := nonfinite(metrics):
                # the optimizer step already took these weights: no probe, no checkpoint
                message = f"non-finite loss: {bad} at step {step}"
                log.event(step, "error", message)
                if ctx.main:
                    print(f"engine: {message}; stopped, its weights not saved", file=sys.stderr)
                distributed.barrier(ctx)  # the event is written before any rank exits
                return NONFINITE_EXIT
            last = step in (args.steps, endpoint)
            if step % args.eval_every == 0 or last:
                log.write(
                    "eval",
                    step,
                    **eval_record(eval_probe, train_probe, s.module, args.eval_dataset_breakdown),
                )
            # Any rank's signal stops every rank at the same step, after its probe.
            stopping = distributed.all_sum(ctx, torch.tensor([1.0 if stop.signum else 0.0]))[0] > 0
            if stopping or step % args.save_every == 0 or last:
                save_checkpoint(s, step, stats, log)
            if stopping:
                signum = stop.signum or signal.SIGTERM
                log.event(step, "end", f"stopped by {signal.Signals(signum).name} at step {step}")
                return 128 + int(signum)
        log.event(step, "end", f"finished at step {step}")
        return 0
    except Stopped as exc:  # before the first step: nothing trained, nothing to save
        name = signal.Signals(exc.signum).name
        log.event(step, "end", f"stopped by {name} before the first step")
        return 128 + int(exc.signum)
    except UsageError as exc:  # found once the data and model are in hand: logged, exit 2
        log.event(step, "error", str(exc))
        raise
    except corpus.CorpusError as exc:  # a dataset that cannot be read: logged, exit 2
        log.event(step, "error", str(exc))
        raise UsageError(str(exc)) from None
    except Exception as exc:  # logged for the console, then a non-zero exit
        return log.failed(step, exc)
    finally:
        log.close()
        distributed.teardown()
