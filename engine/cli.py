"""Command line: `python -m fontaine_engine train ...`, `parity ...`, `identity` and `score ...`.

The flags are defined in engine/parser.py; this module checks them and runs the command. Bad
flags print one line, `engine: error: ...`, and exit 2 (no usage dump, no traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .flags import UsageExit, check_gpus, check_precision, check_writable
from .parser import build_parser

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")


def _check_data_dir(args: argparse.Namespace) -> None:
    """Check that the corpus folder is ours to (re)build, empty, absent, or holds a valid corpus.

    Anything else is refused before a byte is written.
    """
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
    """Check that --resume continues the newest checkpoint's recipe unchanged.

    The run goes on to the recipe's steps or, with --extend-to N, past them. Anything else is
    refused here, before a byte is written. A recipe key the checkpoint does not record (added
    to the engine later) stands at its default.
    """
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
    """Check that --init names an engine checkpoint of the recipe's model size, or an HF folder.

    A Hugging Face model folder is described in engine/init.py. `inherit` needs a decoder to
    inherit.
    """
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
