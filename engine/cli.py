"""Command line: `python -m fontaine_engine train ...`, `parity ...`, `identity` and `score ...`.

Bad flags print one line, `engine: error: ...`, and exit 2 (no usage dump, no traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .flags import UsageExit, check_gpus, check_precision, check_writable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's two-line usage dump -> one line, exit 2
        raise UsageExit(message)


SIZES = ("tiny", "small", "base", "large")  # engine/model.py SIZES, without importing torch


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text}")
    return value


def _probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1], got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def build_parser() -> Parser:
    parser = Parser(prog="engine", description="Fontaine grasp-policy training engine")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    t = sub.add_parser("train", help="train (also under torchrun --nproc-per-node N)")
    t.add_argument(
        "--run-name", help="the run's name in its log (default: the output folder's name)"
    )
    t.add_argument("--output-dir", required=True)
    t.add_argument(
        "--data-dir",
        default="",
        help="a LeRobotDataset folder or a folder of several (default: the generated corpus in ~/.cache/fontaine-engine/corpus-v3)",
    )
    t.add_argument(
        "--model-size",
        choices=SIZES,
        default="small",
        help="tiny, small (0.32M parameters, the CPU recipe's), base, or large (~300M: a GPU's, "
        "with --precision bf16 --activation-checkpointing)",
    )
    t.add_argument(
        "--datasets",
        default="",
        help="sub-datasets to train on, e.g. demos,rig "
        "(default: all; the eval draw always covers all)",
    )
    t.add_argument(
        "--cameras",
        default="",
        help="camera features read, in the order the model sees them, e.g. "
        "observation.images.front,observation.images.wrist "
        "(default: every video and image feature, in info.json's order)",
    )
    t.add_argument(
        "--task-tokens",
        type=_non_negative_int,
        default=48,
        metavar="N",
        help="each frame's task text as at most N language tokens (the backbone's tokenizer "
        "from a Hugging Face --init, else bytes); 0: no task text",
    )
    t.add_argument(
        "--history",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="each sample also sees the frames and states of its N past frames (clamped to "
        "the episode's start, those before it masked)",
    )
    t.add_argument("--batch-size", type=_positive_int, default=96, help="effective batch")
    t.add_argument(
        "--backward-chunks",
        type=_positive_int,
        default=None,
        help="backward chunks per rank (default 8; with --micro-batch: batch-size / "
        "(micro-batch x world size), and it must agree if given too)",
    )
    t.add_argument(
        "--micro-batch",
        type=_positive_int,
        default=0,
        help="per-rank micro-batch; backward chunks per rank = batch-size / "
        "(micro-batch x world size), a whole number",
    )
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--image-augment", type=_probability, default=0.0)
    t.add_argument("--recompute-stats", action="store_true")
    t.add_argument("--objective", choices=("joint", "ar", "flow"), default="joint")
    t.add_argument("--insulate-flow", action="store_true")
    t.add_argument(
        "--flow-decoder-init",
        choices=("inherit", "random"),
        default=None,
        help="inherit: the --init checkpoint's flow decoder; random: a fresh one (default: "
        "random for a Hugging Face --init, which has none; inherit otherwise)",
    )
    t.add_argument(
        "--init",
        default="",
        help="what to start from: a checkpoint of this engine (or a run folder holding one) "
        "or a Hugging Face model folder (a SigLIP vision tower, a Qwen2 backbone, or vision/ "
        "and backbone/ sub-folders); its weights are loaded as fp32",
    )
    t.add_argument("--lr", type=_positive_float, default=3e-4)
    t.add_argument("--warmup-steps", type=_non_negative_int, default=50)
    t.add_argument("--steps", type=_positive_int, default=1000)
    t.add_argument("--eval-every", type=_positive_int, default=250)
    t.add_argument("--eval-dataset-breakdown", action="store_true")
    t.add_argument(
        "--probe-at-start",
        action="store_true",
        help="an eval probe at step 0, of the starting weights before any update",
    )
    t.add_argument(
        "--eval-batch",
        type=_positive_int,
        default=64,
        help="frames per forward pass of the eval probe (memory only; default 64)",
    )
    t.add_argument("--save-every", type=_positive_int, default=500)
    t.add_argument("--chunk-grad-allreduce", action="store_true")
    t.add_argument("--num-workers", type=_non_negative_int, default=8)
    t.add_argument("--prefetch-factor", type=_positive_int, default=4)
    t.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    t.add_argument(
        "--precision",
        choices=("fp32", "tf32", "bf16"),
        default="fp32",
        help="fp32: full fp32 (TF32 off on CUDA); tf32: CUDA matmuls and convolutions in "
        "TF32; bf16: forward passes under bf16 autocast (parameters, optimizer state "
        "and losses stay fp32)",
    )
    t.add_argument(
        "--activation-checkpointing",
        action="store_true",
        help="recompute the vision encoder's and backbone's activations in backward",
    )
    t.add_argument("--compile", action="store_true", help="torch.compile the model's forward")
    t.add_argument("--resume", action="store_true")
    t.add_argument(
        "--extend-to",
        type=_positive_int,
        default=0,
        metavar="N",
        help="with --resume: train past the recipe's steps to step N, the schedule "
        "kept to its endpoint and then at its final (floor) learning rate",
    )
    p = sub.add_parser(
        "parity",
        help="N ranks vs 1 process on the same data: step-1 gradient and parameters after --steps",
    )
    p.add_argument("--nproc", type=_positive_int, default=2)
    p.add_argument("--steps", type=_positive_int, default=20)
    p.add_argument("--data-dir", default="")
    p.add_argument("--model-size", choices=SIZES, default="tiny")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--mode",
        choices=("no_sync", "chunk", "both"),
        default="both",
        help="no_sync accumulation, --chunk-grad-allreduce, or both",
    )
    p.add_argument(
        "--inject-grad-scale", type=_positive_float, default=None, help=argparse.SUPPRESS
    )  # self-test: the N-rank run's gradients x this factor
    p.add_argument("--inject-rank", type=_non_negative_int, default=None, help=argparse.SUPPRESS)
    i = sub.add_parser("identity", help="print the code and data identity a run records (JSON)")
    i.add_argument("--data-dir", default="")
    _add_score(sub)
    return parser


def _add_score(sub) -> None:
    """`score`: engine/score.py. Every surface knob defaults to the run's own (None here)."""
    s = sub.add_parser(
        "score",
        help="re-score a run's saved checkpoints on a chosen probe surface",
        description="Re-score every saved checkpoint of a run on a probe surface and write "
        "the eval records (train_log.jsonl, the engine's schema) into --output-dir. Each "
        "surface knob defaults to what the run used, so the defaults reproduce the run's own "
        "eval records.",
    )
    s.add_argument(
        "--checkpoints",
        required=True,
        metavar="RUN",
        help="a run folder, its checkpoints/ folder, or one step-NNNNNN folder",
    )
    s.add_argument(
        "--output-dir",
        required=True,
        metavar="OUT",
        help="an empty or new folder, or an earlier score output (replaced)",
    )
    s.add_argument(
        "--surface",
        metavar="NAME",
        help="the surface's name in the output "
        "(default: as-run, or the knobs set apart, e.g. stats-corpus_steps-2)",
    )
    s.add_argument(
        "--stats",
        choices=("checkpoint", "corpus", "recomputed", "init"),
        default=None,
        help="normalisation stats: each checkpoint's stats.json (the run's: default), "
        "the corpus's pooled meta/stats.json, recomputed over the train datasets, or the "
        "--init checkpoint's stats.json. Not only the units: the stats normalise the "
        "model's state input and the actions, so the AR target bins and flow targets "
        "change too",
    )
    s.add_argument(
        "--data-dir",
        default=None,
        metavar="DIR",
        help="the corpus to score on (default: the run's)",
    )
    s.add_argument(
        "--frames",
        choices=("draw", "eval-split"),
        default=None,
        help="draw: the fixed 256-frame eval draw (the run's); eval-split: every "
        "frame of the eval split (the train slice stays the fixed one)",
    )
    s.add_argument(
        "--sampling-steps",
        type=_positive_int,
        default=None,
        metavar="N",
        help="the flow sampler's Euler steps (default: engine.model.EULER_STEPS)",
    )
    s.add_argument(
        "--datasets",
        default=None,
        help="sub-datasets the train slice and the "
        "corpus/recomputed stats are drawn from, e.g. demos,rig, or all "
        "(default: the run's --datasets; the eval frames cover every one)",
    )
    s.add_argument(
        "--breakdown",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the per-dataset eval breakdown (default: the run's --eval-dataset-breakdown)",
    )
    s.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    s.add_argument(
        "--precision",
        choices=("fp32", "tf32", "bf16"),
        default=None,
        help="the forward passes' precision (default: the run's)",
    )


def _check_data_dir(args: argparse.Namespace) -> None:
    """The corpus folder must be ours to (re)build, empty, absent, or hold a valid corpus;
    anything else is refused before a byte is written."""
    from . import corpus

    root = Path(args.data_dir) if args.data_dir else corpus.default_dir()
    try:
        corpus.check_dir(root.resolve())
    except corpus.CorpusError as exc:
        raise UsageExit(f"--data-dir {exc}") from None


def _check_datasets(args: argparse.Namespace) -> None:
    """--datasets names sub-datasets the data folder holds (or the generated corpus will)."""
    from . import corpus, synthetic

    chosen = corpus.dataset_names(args.datasets)
    if not chosen:
        return
    root = Path(args.data_dir) if args.data_dir else corpus.default_dir()
    found = [p.name for p in corpus.dataset_folders(root)] if root.is_dir() else []
    try:
        corpus.check_datasets(chosen, found or synthetic.DATASETS, root)
    except corpus.CorpusError as exc:
        raise UsageExit(str(exc)) from None


def _check_cameras(args: argparse.Namespace) -> None:
    """--cameras names camera features (video or image) of every dataset in the data folder."""
    from . import corpus, lerobot

    chosen = corpus.camera_names(args.cameras)
    root = Path(args.data_dir) if args.data_dir else corpus.default_dir()
    if not chosen or not root.is_dir():
        return
    for folder in corpus.dataset_folders(root):
        try:
            info = json.loads((folder / lerobot.INFO_PATH).read_text())
        except (OSError, ValueError):
            continue  # reading the dataset names what is wrong with it
        found = lerobot.cameras_of(info) if isinstance(info, dict) else []
        missing = [c for c in chosen if c not in found]
        if missing:
            raise UsageExit(
                f"--cameras {args.cameras}: {', '.join(missing)} not a camera of "
                f"{folder / lerobot.INFO_PATH} (its cameras: {', '.join(found) or 'none'})"
            )


def _check_fresh_output(args: argparse.Namespace) -> None:
    """A run without --resume never writes into another run's log or checkpoints."""
    out = Path(args.output_dir)
    log = out / "train_log.jsonl"
    steps = sorted(p.name for p in (out / "checkpoints").glob("step-*"))
    held = ([f"{log.name}"] if log.is_file() and log.stat().st_size else []) + steps[-1:]
    if held and not args.resume:
        raise UsageExit(
            f"--output-dir {out}: already holds a run ({', '.join(held)}); pass "
            "--resume to continue it, or choose another folder"
        )


def _show(value: object) -> str:
    return json.dumps(value)


def _check_resume(args: argparse.Namespace) -> None:
    """--resume continues the newest checkpoint's recipe unchanged, to its steps or, with
    --extend-to N, past them; anything else is refused here, before a byte is written. A
    recipe key the checkpoint does not record (added to the engine later) stands at its
    default."""
    if args.extend_to and not args.resume:
        raise UsageExit(
            f"--extend-to {args.extend_to}: only with --resume (it extends a run "
            "that has checkpoints past its recipe's steps)"
        )
    if args.extend_to and args.extend_to <= args.steps:
        raise UsageExit(
            f"--extend-to {args.extend_to}: expected a step after the recipe's --steps {args.steps}"
        )
    if not args.resume:
        return
    from . import checkpoint

    found = checkpoint.latest(Path(args.output_dir) / "checkpoints")
    if found is None:
        return
    meta = checkpoint.load_meta(found)
    saved = meta.get("recipe")
    if not isinstance(saved, dict):
        raise UsageExit(
            f"--resume: checkpoint {found.name} records no recipe in its meta.json; "
            "cannot tell whether the recipe changed"
        )
    from .train import RECIPE_KEYS

    defaults = vars(build_parser().parse_args(["train", "--output-dir", str(args.output_dir)]))
    changed = []
    micro = args.micro_batch and saved.get("micro_batch", 0) == args.micro_batch
    for key in RECIPE_KEYS:
        if key == "backward_chunks" and micro:
            continue  # derived from the same micro-batch for this world size (pipeline.Layout)
        then, now = saved.get(key, defaults.get(key)), getattr(args, key)
        if then != now:
            changed.append(f"{key} {_show(then)} -> {_show(now)}")
    if changed:
        hint = (
            " (to train past its steps: the same --steps and --extend-to N)"
            if any(c.startswith("steps ") for c in changed)
            else ""
        )
        raise UsageExit(
            f"--resume: the recipe changed since checkpoint {found.name}: "
            f"{', '.join(changed)}; resume with the checkpoint's recipe{hint}"
        )
    step, endpoint = int(meta["step"]), args.extend_to or args.steps
    if step > endpoint:
        was = meta.get("extend_to") or 0
        if args.extend_to:
            raise UsageExit(
                f"--extend-to {args.extend_to}: checkpoint {found.name} is already "
                f"past it (step {step})"
            )
        raise UsageExit(
            f"--resume: checkpoint {found.name} (step {step}) is past the recipe's "
            f"steps {args.steps}: the run was extended"
            + (f" to {was}; pass --extend-to {was}" if was else "; pass --extend-to N")
        )


def _check_init(args: argparse.Namespace) -> None:
    """--init names an engine checkpoint of the recipe's model size, or a Hugging Face model
    folder (engine/init.py); `inherit` needs a decoder to inherit."""
    from .init import InitError, describe

    try:
        init = describe(args.init)
    except InitError as exc:
        raise UsageExit(str(exc)) from None
    if args.flow_decoder_init is None:  # nothing to inherit from a Hugging Face folder
        args.flow_decoder_init = "random" if init is not None and init.kind == "hf" else "inherit"
    if init is None:
        return
    if init.kind == "hf" and args.flow_decoder_init == "inherit":
        raise UsageExit(
            f"--flow-decoder-init inherit: --init {args.init} is a Hugging Face "
            f"model folder ({' and '.join(init.parts)}), which has no flow decoder "
            "(expected --flow-decoder-init random, or an engine checkpoint)"
        )
    size = init.meta.get("model_size")
    if init.kind == "engine" and size and size != args.model_size:
        raise UsageExit(
            f"--init {init.path}: a {size!r} model (expected the recipe's "
            f"--model-size {args.model_size!r})"
        )


def validate_train(args: argparse.Namespace) -> None:
    import torch

    from .distributed import world_from_env
    from .pipeline import LayoutError, chunks_per_rank

    if args.run_name is None:
        args.run_name = Path(args.output_dir).resolve().name
    if not args.run_name.strip():
        raise UsageExit("--run-name: expected a name (the output folder's name is empty)")

    _, world, _ = world_from_env()
    try:  # from here on backward_chunks is the chunks per rank this run takes
        args.backward_chunks = chunks_per_rank(
            args.batch_size, world, args.backward_chunks, args.micro_batch
        )
    except LayoutError as exc:
        raise UsageExit(str(exc)) from None
    available = torch.cuda.is_available()
    check_gpus(args.device, os.environ, available, torch.cuda.device_count() if available else 0)
    if args.precision == "bf16" and (
        args.device == "cuda" or (args.device == "auto" and available)
    ):
        # native bf16 (compute capability 8.0+): an emulated one is slower than fp32
        check_precision(
            args.precision,
            torch.cuda.is_bf16_supported(including_emulation=False),
            torch.cuda.get_device_name(),
        )
    _check_init(args)
    _check_datasets(args)
    _check_cameras(args)
    _check_resume(args)
    check_writable("--output-dir", Path(args.output_dir))
    _check_fresh_output(args)
    _check_data_dir(args)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(argv)
        if args.command == "train":
            validate_train(args)
        elif args.command != "score":  # score checks its corpus itself (engine/score.py)
            _check_data_dir(args)
    except UsageExit as exc:
        print(f"engine: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "identity":
        import json

        from . import corpus
        from .identity import identity

        root = Path(args.data_dir) if args.data_dir else corpus.default_dir()
        print(json.dumps(identity(root.resolve()), sort_keys=True))
        return 0
    if args.command == "parity":
        from .parity import run_parity

        return run_parity(args)
    if args.command == "score":
        from .score import run_score

        try:
            return run_score(args)
        except UsageExit as exc:  # engine/surface.py ScoreError among them
            print(f"engine: error: {exc}", file=sys.stderr)
            return 2
    from .flags import UsageError
    from .train import run

    try:
        return run(args)
    except UsageError as exc:
        print(f"engine: error: {exc}", file=sys.stderr)
        return 2
