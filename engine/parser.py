"""The engine's command line parser: each sub-command's flags, their types, defaults and help.

`train`, `parity`, `identity` and `score`; a bad flag raises UsageExit (engine/flags.py) instead
of argparse's usage dump, and engine/cli.py prints it as one line. Parsing imports no torch.
"""

from __future__ import annotations

import argparse

from .flags import UsageExit


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
