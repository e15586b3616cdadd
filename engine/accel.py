"""Platform knobs of the forward and backward passes: bf16, TF32, checkpointing and compile.

The knobs are bf16 autocast, TF32 matmuls, activation checkpointing and torch.compile. None of
them changes the training math beyond rounding: parameters, gradients and optimizer state stay
fp32, and the losses are computed in fp32.

Precision: "fp32" is full fp32 (TF32 off on CUDA, cuBLAS and cuDNN alike, whatever the
process's defaults were), "tf32" lets CUDA matmuls and convolutions round their inputs to
TF32 (10-bit mantissa), "bf16" runs the forward passes under bf16 autocast (TF32 off for
what stays fp32). On CPU "tf32" is fp32."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import torch
from torch import nn

PRECISIONS = ("fp32", "tf32", "bf16")


def set_tf32(device: torch.device, precision: str) -> bool:
    """Turn TF32 on for "tf32" and off for the others, on a CUDA device; return whether it is on.

    On CPU nothing is touched and the answer is False.
    """
    if device.type != "cuda":
        return False
    on = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    return on


def autocast(device: torch.device, precision: str) -> AbstractContextManager:
    """The forward passes' autocast: bf16 on CPU and CUDA alike, nothing for fp32 and tf32."""
    if precision in ("fp32", "tf32"):
        return nullcontext()
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    raise ValueError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")


def enable_activation_checkpointing(module: nn.Module) -> list[str]:
    """Recompute the vision encoder's and the backbone's layer activations in backward.

    The checkpoints are non-reentrant. Returns the names of the submodules it applied to.
    """
    done = []
    for name in ("vision", "backbone"):
        sub = getattr(module, name)
        kwargs = {"use_reentrant": False}
        if hasattr(
            sub, "activation_checkpointing_enable"
        ):  # gradient_checkpointing_enable's new name
            sub.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
        else:
            sub.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        if getattr(sub.config, "use_cache", False):
            sub.config.use_cache = False  # a KV cache is never used in training
        done.append(name)
    return done


def compile_module(module: nn.Module) -> None:
    """torch.compile the module's forward in place (its state_dict keys stay the same).

    Under DDP it is given the DDP wrapper (engine/train.py build_session), never the module
    inside it, as PyTorch's DDP + compile guidance says.
    """
    module.compile()


def is_compile_error(exc: BaseException) -> bool:
    """Raised by torch.compile's machinery (dynamo, inductor), or caused by it."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if any(
            c.__module__.startswith(("torch._dynamo", "torch._inductor"))
            for c in type(seen).__mro__
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def first_line(exc: BaseException) -> str:
    """An exception as one short line: its type and its message's first non-empty line.

    A compiler backend's failure is named by the error it wraps.
    """
    exc = getattr(exc, "inner_exception", None) or exc
    text = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def compile_failure(exc: BaseException) -> str:
    return (
        f"--compile: torch.compile failed at the first step ({first_line(exc)}); "
        "run without --compile"
    )
