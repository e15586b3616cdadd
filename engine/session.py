"""One rank's training session: the model, its DDP wrapper and optimizer, and the init's weights.

build_session shapes the policy by the data, wraps it for DDP and torch.compile and builds the
(ZeRO-1) AdamW; load_init loads an engine init's weights into it. engine/train.py runs the loop
over the session, engine/parity.py compares one against N ranks.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from . import accel, checkpoint, corpus, distributed, optim
from . import init as inits
from .flags import UsageError
from .model import Policy
from .pipeline import Layout, LayoutError


@dataclass
class Session:
    """Everything one rank needs to take optimizer steps."""

    args: argparse.Namespace
    ctx: distributed.Context
    module: Policy  # unwrapped: eval and checkpoints use this
    model: torch.nn.Module  # DDP-wrapped when distributed
    optimizer: torch.optim.Optimizer
    layout: Layout
    inputs: dict = field(default_factory=dict)  # train.inputs_of: recorded in checkpoints


def shape_of(module: Policy) -> dict[str, int]:
    """What the policy's size depends on in the data, as a checkpoint's meta.json records it."""
    return {
        "chunk": module.chunk,
        "motors": module.motors,
        "state_dim": module.state_proj.in_features,
        "cameras": module.cameras,
        "history": module.history,
    }


def build_session(
    args,
    ctx: distributed.Context,
    data: corpus.Corpus | None = None,
    init: inits.Init | None = None,
) -> Session:
    """Build the model, its DDP wrapper and the (ZeRO-1) AdamW of one rank.

    The model gets the same init on every rank and is shaped by the data's chunk, motors and
    state. Its vision encoder and backbone come from a Hugging Face init, or are built as an
    engine init's architecture.
    """
    world = ctx.world_size
    try:
        layout = Layout.of(
            args.batch_size, world, ctx.rank, args.backward_chunks, getattr(args, "micro_batch", 0)
        )
    except LayoutError as exc:
        raise UsageError(str(exc)) from None
    accel.set_tf32(ctx.device, getattr(args, "precision", "fp32"))
    torch.manual_seed(args.seed)
    shape = (
        {}
        if data is None
        else {
            "chunk": data.chunk,
            "motors": data.motors,
            "state_dim": int(data.states.shape[1]),
            "cameras": len(data.cameras),
            "history": data.history,
        }
    )
    vision, backbone = inits.vision_backbone(init)
    arch = init.architecture() if init is not None and init.kind == "engine" else None
    module = Policy(
        args.model_size, **shape, vision=vision, backbone=backbone, architecture=arch
    ).to(ctx.device)
    if getattr(args, "activation_checkpointing", False):
        accel.enable_activation_checkpointing(module)
    model: torch.nn.Module = module
    if ctx.distributed:
        model = DDP(
            module,
            device_ids=[ctx.local_rank] if ctx.device.type == "cuda" else None,
            find_unused_parameters=args.objective != "joint",
        )
    if getattr(args, "compile", False):
        # the wrapper, after DDP's wrap: dynamo's DDPOptimizer then cuts the compiled graph at
        # DDP's buckets, so each bucket's all-reduce overlaps the rest of the backward
        accel.compile_module(model)
    optimizer = optim.build(module, args.lr, ctx.distributed)
    return Session(args, ctx, module, model, optimizer, layout)


def load_init(s: Session, args, init: inits.Init | None) -> str:
    """Load an engine init's weights into the model and return what the start event says of it.

    The flow decoder is loaded too unless --flow-decoder-init random. A Hugging Face init's
    parts are in place since build_session.
    """
    if init is None:
        return ""
    if init.kind == "hf":
        return (
            f"; init {init.path} ({' + '.join(init.parts)} from_pretrained, flow decoder "
            f"random){inits.resized_note(init)}"
        )
    want = shape_of(s.module)
    have = init.meta.get("shape")
    if isinstance(have, dict) and {"cameras": 1, "history": 0, **have} != want:
        raise UsageError(f"--init {init.path}: its shape {have} does not fit this corpus's {want}")
    skip = "flow." if args.flow_decoder_init == "random" else None
    try:
        checkpoint.load_weights(init.path, s.module, skip_prefix=skip)
    except RuntimeError as exc:  # a key or size mismatch: not this architecture
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UsageError(f"--init {init.path}: does not load into this model ({first})") from None
    return f"; init {init.path} (flow decoder {'random' if skip else 'inherited'})"
