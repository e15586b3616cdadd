"""Command line: `python -m engine train ...` and `python -m engine parity ...`.

Bad flags print one line, `engine: error: ...`, and exit 2 (no usage dump, no traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")


class UsageExit(Exception):
    """Carries the one-line message of a bad invocation."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's two-line usage dump -> one line, exit 2
        raise UsageExit(message)


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
    t.add_argument("--run-name", help="the run's name in its log (default: the output folder's name)")
    t.add_argument("--output-dir", required=True)
    t.add_argument("--data-dir", default="", help="corpus cache (default: ~/.cache/fontaine-engine/corpus-v1)")
    t.add_argument("--model-size", choices=("tiny", "small", "base"), default="small")
    t.add_argument("--batch-size", type=_positive_int, default=96, help="effective batch")
    t.add_argument("--backward-chunks", type=_positive_int, default=8)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--image-augment", type=_probability, default=0.0)
    t.add_argument("--recompute-stats", action="store_true")
    t.add_argument("--objective", choices=("joint", "ar", "flow"), default="joint")
    t.add_argument("--insulate-flow", action="store_true")
    t.add_argument("--flow-decoder-init", choices=("inherit", "random"), default="inherit")
    t.add_argument("--init", default="", help="checkpoint of this engine to start from")
    t.add_argument("--lr", type=_positive_float, default=3e-4)
    t.add_argument("--warmup-steps", type=_non_negative_int, default=50)
    t.add_argument("--steps", type=_positive_int, default=1000)
    t.add_argument("--eval-every", type=_positive_int, default=250)
    t.add_argument("--eval-dataset-breakdown", action="store_true")
    t.add_argument("--save-every", type=_positive_int, default=500)
    t.add_argument("--chunk-grad-allreduce", action="store_true")
    t.add_argument("--num-workers", type=_non_negative_int, default=8)
    t.add_argument("--prefetch-factor", type=_positive_int, default=4)
    t.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    t.add_argument("--resume", action="store_true")
    p = sub.add_parser("parity", help="N ranks vs 1 process on the same data: max param diff")
    p.add_argument("--nproc", type=_positive_int, default=2)
    p.add_argument("--steps", type=_positive_int, default=3)
    p.add_argument("--data-dir", default="")
    p.add_argument("--model-size", choices=("tiny", "small", "base"), default="tiny")
    p.add_argument("--chunk-grad-allreduce", action="store_true")
    i = sub.add_parser("identity", help="print the code and data identity a run records (JSON)")
    i.add_argument("--data-dir", default="")
    return parser


def _check_writable(flag: str, path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-"):
            pass
    except OSError as exc:
        raise UsageExit(f"{flag} {path}: not a writable directory ({exc.strerror or exc})") from None


def _check_data_dir(args: argparse.Namespace) -> None:
    """The corpus folder must be ours to (re)build, empty, absent, or hold a valid corpus;
    anything else is refused before a byte is written."""
    from engine import corpus

    root = Path(args.data_dir) if args.data_dir else corpus.default_dir()
    try:
        corpus.check_dir(root.resolve())
    except corpus.CorpusError as exc:
        raise UsageExit(f"--data-dir {exc}") from None


def _check_fresh_output(args: argparse.Namespace) -> None:
    """A run without --resume never writes into another run's log or checkpoints."""
    out = Path(args.output_dir)
    log = out / "train_log.jsonl"
    steps = sorted(p.name for p in (out / "checkpoints").glob("step-*"))
    held = ([f"{log.name}"] if log.is_file() and log.stat().st_size else []) + steps[-1:]
    if held and not args.resume:
        raise UsageExit(f"--output-dir {out}: already holds a run ({', '.join(held)}); pass "
                        "--resume to continue it, or choose another folder")


def validate_train(args: argparse.Namespace) -> None:
    import torch

    from engine.distributed import world_from_env

    if args.run_name is None:
        args.run_name = Path(args.output_dir).resolve().name
    if not args.run_name.strip():
        raise UsageExit("--run-name: expected a name (the output folder's name is empty)")

    _, world, _ = world_from_env()
    if args.batch_size % (args.backward_chunks * world):
        raise UsageExit(
            f"--batch-size {args.batch_size}: expected a multiple of --backward-chunks x world size "
            f"({args.backward_chunks} x {world} = {args.backward_chunks * world})")
    if args.device == "cuda" and not torch.cuda.is_available():
        raise UsageExit("--device cuda: CUDA is not available on this machine (expected auto or cpu)")
    if args.device == "cuda" and world > torch.cuda.device_count():
        raise UsageExit(f"--device cuda: world size {world} exceeds the {torch.cuda.device_count()} "
                        "visible GPUs")
    if args.init:
        from engine.checkpoint import resolve

        try:
            resolve(Path(args.init))
        except FileNotFoundError:
            raise UsageExit(f"--init {args.init}: expected a checkpoint folder of this engine "
                            "(step-NNNNNN with model.safetensors) or a run folder holding one") from None
    _check_writable("--output-dir", Path(args.output_dir))
    _check_fresh_output(args)
    _check_data_dir(args)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(argv)
        if args.command == "train":
            validate_train(args)
        else:
            _check_data_dir(args)
    except UsageExit as exc:
        print(f"engine: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "identity":
        import json

        from engine import corpus
        from engine.identity import identity

        root = Path(args.data_dir) if args.data_dir else corpus.default_dir()
        print(json.dumps(identity(root.resolve()), sort_keys=True))
        return 0
    if args.command == "parity":
        from engine.parity import run_parity

        return run_parity(args)
    from engine.train import UsageError, run

    try:
        return run(args)
    except UsageError as exc:
        print(f"engine: error: {exc}", file=sys.stderr)
        return 2
