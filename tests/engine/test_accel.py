"""The GPU-path flags, on CPU: --precision bf16 (autocast), --activation-checkpointing and
--compile (engine/accel.py), and the device checks that read the local world size."""

from __future__ import annotations

import json
import math
import os

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.engine

from tests.engine.conftest import run_engine, run_engines, tiny_argv  # noqa: E402


def _argv(out, data, *extra, steps=2):
    argv = tiny_argv(out, data, *extra, steps=steps)
    argv[argv.index("--num-workers") + 1] = "0"
    return argv


def _log(run):
    return [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines()]


def _train(run):
    return [r for r in _log(run) if r["kind"] == "train"]


# -- pure checks ------------------------------------------------------------------------------


def test_the_gpu_count_is_checked_against_the_ranks_on_this_node():
    from fontaine_engine.flags import UsageExit, check_gpus

    # two nodes of 8 x ... here: 16 ranks in all, 2 on this node, 2 GPUs: fine
    check_gpus("cuda", {"WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "2"}, True, 2)
    check_gpus("auto", {"WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "2"}, True, 2)
    check_gpus("cpu", {"WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "4"}, True, 2)
    check_gpus("auto", {"WORLD_SIZE": "4"}, False, 0)  # auto without CUDA runs on CPU
    with pytest.raises(UsageExit) as info:
        check_gpus("cuda", {"WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "4"}, True, 2)
    assert str(info.value) == (
        "--device cuda: local world size 4 (ranks on this node) exceeds the 2 visible GPUs"
    )
    with pytest.raises(UsageExit, match="local world size 3"):  # one node: WORLD_SIZE is local
        check_gpus("auto", {"WORLD_SIZE": "3"}, True, 2)
    with pytest.raises(UsageExit, match="CUDA is not available"):
        check_gpus("cuda", {}, False, 0)


def test_bf16_on_a_gpu_without_it_is_one_line():
    from fontaine_engine.cli import UsageExit, check_precision

    check_precision("bf16", True, "NVIDIA H100 80GB HBM3")
    check_precision("fp32", False, "Tesla T4")
    with pytest.raises(UsageExit) as info:
        check_precision("bf16", False, "Tesla T4")
    assert (
        str(info.value)
        == "--precision bf16: the GPU (Tesla T4) has no bf16 support (expected fp32)"
    )


def test_an_unknown_precision_is_one_line(tmp_path, corpus_dir, capsys):
    from fontaine_engine.cli import main

    assert main(_argv(tmp_path, corpus_dir, "--precision", "fp16")[3:]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("engine: error: argument --precision: invalid choice: 'fp16'")


# -- activation checkpointing: the same numbers, fewer saved activations ----------------------


def _batch(n=4):
    from fontaine_engine.corpus import CHUNK
    from fontaine_engine.pipeline import BINS, FLOW_SAMPLES
    from fontaine_engine.synthetic import IMAGE_SIZE, MOTORS

    g = torch.Generator().manual_seed(1)
    return {
        "images": torch.rand(n, 3, IMAGE_SIZE, IMAGE_SIZE, generator=g) * 2 - 1,
        "state": torch.randn(n, MOTORS, generator=g),
        "actions": torch.randn(n, CHUNK, MOTORS, generator=g).clamp(-1, 1),
        "tokens": torch.randint(0, BINS, (n, CHUNK * MOTORS), generator=g),
        "flow_t": torch.rand(n, FLOW_SAMPLES, generator=g),
        "flow_noise": torch.randn(n, FLOW_SAMPLES, CHUNK, MOTORS, generator=g),
    }


def _loss_and_grads(checkpointing: bool):
    from fontaine_engine.model import Policy

    from fontaine_engine import accel

    torch.manual_seed(0)
    model = Policy("tiny")
    applied = accel.enable_activation_checkpointing(model) if checkpointing else []
    assert model.training and model.backbone.training and model.vision.training
    calls = []  # the first decoder layer's MLP: run again in backward when recomputed
    mlp = model.backbone.layers[0].mlp
    forward = mlp.forward
    mlp.forward = lambda *a, **k: calls.append(1) or forward(*a, **k)
    saved = []  # bytes autograd keeps for backward
    with torch.autograd.graph.saved_tensors_hooks(
        lambda t: saved.append(t.numel() * t.element_size()) or t, lambda t: t
    ):
        out = model(_batch(), "joint", True)
    out["loss"].backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return out["loss"].item(), grads, len(calls), sum(saved), applied


def test_activation_checkpointing_gives_the_same_loss_and_gradients():
    loss, grads, calls, saved, _ = _loss_and_grads(False)
    loss_ac, grads_ac, calls_ac, saved_ac, applied = _loss_and_grads(True)
    assert applied == ["vision", "backbone"]
    assert (calls, calls_ac) == (1, 2)  # recomputed in backward
    assert saved_ac < 0.5 * saved  # what it is for: the layers' activations are not kept
    assert math.isfinite(loss) and abs(loss_ac - loss) <= 1e-6
    assert grads.keys() == grads_ac.keys() and len(grads) > 50
    worst = max((grads[n] - grads_ac[n]).abs().max().item() for n in grads)
    assert worst <= 1e-6, worst


# -- real tiny runs ---------------------------------------------------------------------------


def test_bf16_and_checkpointed_runs_against_fp32(tmp_path, corpus_dir):
    """Three 2-step runs of one recipe: fp32, bf16 autocast, fp32 with activation
    checkpointing. bf16's first loss (before any update) is fp32's up to bf16 rounding, and
    not the same number (autocast did run); checkpointing changes nothing."""
    runs = {"fp32": [], "bf16": ["--precision", "bf16"], "ac": ["--activation-checkpointing"]}
    results = run_engines(
        [_argv(tmp_path / name, corpus_dir, *extra) for name, extra in runs.items()]
    )
    for name, done in zip(runs, results, strict=True):
        assert done.returncode == 0, (name, done.stderr)
    fp32, bf16, ac = (_train(tmp_path / n) for n in runs)
    assert len(fp32) == len(bf16) == len(ac) == 2
    for r in bf16:
        assert all(math.isfinite(r[k]) for k in ("loss", "ar_ce", "flow_loss", "grad_norm"))
    first, first_bf16 = fp32[0]["loss"], bf16[0]["loss"]
    assert first_bf16 != first and abs(first_bf16 - first) <= 1e-3 * abs(first)
    assert [r["loss"] for r in ac] == pytest.approx([r["loss"] for r in fp32], abs=1e-6)
    meta = _log(tmp_path / "bf16")[0]
    assert meta["platform"]["precision"] == "bf16" and not meta["platform"]["compile"]
    assert _log(tmp_path / "ac")[0]["platform"]["activation_checkpointing"] is True
    probe = [r for r in _log(tmp_path / "bf16") if r["kind"] == "eval"][-1]
    assert math.isfinite(probe["eval_chunk_mae"])


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("FONTAINE_TEST_COMPILE"),
    reason="inductor's first CPU compile of the policy takes about a minute, "
    "over the suite's budget: FONTAINE_TEST_COMPILE=1 runs it (the compiler-"
    "failure test below runs --compile's path every time)",
)
def test_compile_on_cpu_runs_two_steps(tmp_path, corpus_dir, monkeypatch):
    """torch.compile (inductor, the machine's C++ compiler) on CPU: a 2-step run completes
    with fp32's losses up to the compiled kernels' rounding. Its own inductor cache, so the
    compile really happens."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    for name, extra in (("eager", []), ("compiled", ["--compile"])):
        done = run_engine(_argv(tmp_path / name, corpus_dir, *extra), timeout=600)
        assert done.returncode == 0, (name, done.stderr)
    eager, compiled = _train(tmp_path / "eager"), _train(tmp_path / "compiled")
    assert [r["loss"] for r in compiled] == pytest.approx([r["loss"] for r in eager], rel=1e-4)
    assert _log(tmp_path / "compiled")[0]["platform"]["compile"] is True
    assert any((tmp_path / "inductor").rglob("*.py"))  # inductor wrote its kernels


def test_a_compiler_failure_is_one_line_and_exit_2(tmp_path, corpus_dir, monkeypatch):
    """No working C++ compiler for inductor: the first step's compile fails, and that is one
    line naming --compile, an error event in the log, and exit 2 (no traceback)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    done = run_engine(_argv(tmp_path / "run", corpus_dir, "--compile"), timeout=300)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("engine: error: --compile: torch.compile failed at the first step (")
    assert line.endswith("; run without --compile") and "no-such-compiler" in line
    events = [r for r in _log(tmp_path / "run") if r["kind"] == "event"]
    assert events[-1]["event"] == "error" and events[-1]["detail"] == line[len("engine: error: ") :]
    assert not _train(tmp_path / "run")


def test_fp32_means_tf32_off_and_tf32_turns_it_on():
    """On a CUDA device "fp32" turns TF32 off (cuBLAS and cuDNN, whatever the process had),
    "tf32" on, "bf16" off; build_session applies it before the model is built. On CPU the
    flags are left alone."""
    from fontaine_engine.session import build_session

    from fontaine_engine import accel, distributed

    flags = torch.backends.cuda.matmul, torch.backends.cudnn
    saved = [f.allow_tf32 for f in flags]
    cuda = torch.device("cuda")
    try:
        for f in flags:
            f.allow_tf32 = True
        assert accel.set_tf32(cuda, "fp32") is False
        assert [f.allow_tf32 for f in flags] == [False, False]
        assert accel.set_tf32(cuda, "tf32") is True
        assert [f.allow_tf32 for f in flags] == [True, True]
        assert accel.set_tf32(cuda, "bf16") is False
        assert accel.set_tf32(torch.device("cpu"), "tf32") is False
        assert [f.allow_tf32 for f in flags] == [False, False]  # CPU: left as they were
        ns = type("Args", (), {"batch_size": 4, "backward_chunks": 1, "seed": 0})()
        ns.model_size, ns.precision, ns.lr = "tiny", "fp32", 1e-3
        ctx = distributed.Context(rank=0, world_size=1, local_rank=0, device=cuda)
        for f in flags:
            f.allow_tf32 = True
        try:
            build_session(ns, ctx)
        except (AssertionError, RuntimeError):  # a torch without CUDA cannot move the model
            pass
        assert [f.allow_tf32 for f in flags] == [False, False]
    finally:
        for f, value in zip(flags, saved, strict=True):
            f.allow_tf32 = value


def test_compile_wraps_ddp_not_the_module_inside_it(tmp_path):
    """--compile under DDP compiles the DDP wrapper, after the wrap (dynamo's DDPOptimizer
    then splits the graph at DDP's buckets, so all-reduce overlaps backward); the module it
    wraps, which eval and checkpoints use, stays eager. A 1-rank gloo group stands for the
    ranks (DDP wraps the same way); nothing is compiled until a forward runs."""
    import argparse

    import torch.distributed as dist
    from fontaine_engine.session import build_session
    from torch.nn.parallel import DistributedDataParallel as DDP

    from fontaine_engine import distributed

    store = f"file://{tmp_path / 'store'}"
    dist.init_process_group("gloo", init_method=store, rank=0, world_size=1)
    try:
        ns = argparse.Namespace(
            model_size="tiny",
            batch_size=8,
            backward_chunks=1,
            micro_batch=0,
            seed=0,
            lr=1e-3,
            objective="joint",
            compile=True,
        )
        ctx = distributed.Context(rank=0, world_size=2, local_rank=0, device=torch.device("cpu"))
        s = build_session(ns, ctx)
        assert isinstance(s.model, DDP) and s.model.module is s.module
        assert s.model._compiled_call_impl is not None  # the wrapper is compiled
        assert s.module._compiled_call_impl is None  # the module inside it is not
    finally:
        dist.destroy_process_group()


def test_the_large_size_is_hundreds_of_millions_of_parameters():
    """`--model-size large`: ~0.29B parameters (built on the meta device, nothing allocated),
    a GPU's work; checkpointing applies to its vision encoder and backbone as to the others."""
    from fontaine_engine.model import Policy, count_parameters
    from fontaine_engine.parser import build_parser

    from fontaine_engine import accel

    with torch.device("meta"):
        model = Policy("large")
    assert 250e6 < count_parameters(model) < 350e6
    assert count_parameters(model.backbone) > 150e6 and count_parameters(model.vision) > 80e6
    assert accel.enable_activation_checkpointing(model) == ["vision", "backbone"]
    assert model.backbone.is_gradient_checkpointing and model.vision.is_gradient_checkpointing
    args = build_parser().parse_args(["train", "--output-dir", "o", "--model-size", "large"])
    assert args.model_size == "large"
