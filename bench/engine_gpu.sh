#!/usr/bin/env bash
# The demosonly recipe's pieces on CUDA, one short run per variant: fp32, bf16 autocast, bf16
# with activation checkpointing, bf16 with torch.compile (all on one GPU), and, when more than
# one GPU is visible, the same recipe under torchrun (2, 4 or 8 ranks: micro-batch 12 must
# divide the batch of 96). Per variant it prints the median s/step, the data-wait fraction,
# the first step's time (torch.compile compiles there), GPU utilisation and the peak memory
# NVML reports above idle (CUDA context and the caching allocator's reserve included), read
# by a pynvml sampler every 200 ms while the run trains. Before the runs, the NVML telemetry
# proof: pynvml's own reading of each GPU, and the console's (fontaine_tui.core.host.telemetry).
# Needs a CUDA build of torch==2.13.0 (pip install torch==2.13.0 --index-url .../cu12x).
# Usage: bench/engine_gpu.sh [OUT_DIR]   env: STEPS (100 per variant), MODEL_SIZE (small: the
#        recipe; base: 40M; large: ~0.29B, a GPU's work: its variants are bf16 with and
#        without activation checkpointing, tf32 and bf16 + compile, fp32 being slow and
#        not what it runs with), NUM_WORKERS (8), DATA_DIR (the corpus; default the
#        engine's cache), VARIANTS (comma list of names to run; default all)
# Without a CUDA GPU it prints one line saying so and exits 2 (nothing measured).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! why=$(python -c '
import sys
try:
    import torch
except ImportError as exc:
    sys.exit(f"torch is not importable ({exc})")
build = torch.version.cuda or "none"
if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
    sys.exit(f"torch {torch.__version__} (CUDA build {build}) sees none")
' 2>&1); then
  echo "bench: no CUDA GPU visible: ${why:-torch sees none} (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}); nothing measured" >&2
  exit 2
fi
OUT=${1:-$(mktemp -d /tmp/engine-gpu-XXXXXX)}
mkdir -p "$OUT"
export CUDA_DEVICE_ORDER=PCI_BUS_ID  # CUDA's device numbers = NVML's

echo "== NVML telemetry proof"
python -c '
import pynvml
pynvml.nvmlInit()
print(f"driver {pynvml.nvmlSystemGetDriverVersion()}, {pynvml.nvmlDeviceGetCount()} GPU(s)")
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    u, m = pynvml.nvmlDeviceGetUtilizationRates(h), pynvml.nvmlDeviceGetMemoryInfo(h)
    print(f"GPU {i}: {pynvml.nvmlDeviceGetName(h)}: util {u.gpu} %, memory {m.used >> 20} / "
          f"{m.total >> 20} MiB")
pynvml.nvmlShutdown()
'
python -c '
from fontaine_tui.core.host.telemetry import sample
snap = sample()
print("console telemetry:", snap.gpu_status)
for g in snap.gpus or ():
    print(f"  NVML {g.index} (CUDA {g.cuda_index}) {g.name}: util {g.util_pct} %, memory "
          f"{(g.mem_used or 0) >> 20} / {(g.mem_total or 0) >> 20} MiB, "
          f"{len(g.processes or ())} compute process(es)")
'

exec python - "$OUT" <<'PY'
import json, os, statistics, subprocess, sys, threading, time
from pathlib import Path

import torch

out = Path(sys.argv[1]).resolve()
steps = int(os.environ.get("STEPS", "100"))
size = os.environ.get("MODEL_SIZE", "small")
visible = torch.cuda.device_count()
pool = os.environ.get("CUDA_VISIBLE_DEVICES", "")
pool = [int(x) for x in pool.split(",") if x.strip().isdigit()] if pool else list(range(visible))
pool = pool[:visible] or list(range(visible))

# the demosonly recipe (presets/demosonly_1gpu.toml): effective batch 96, micro-batch 12
RECIPE = ["--model-size", size, "--datasets", "demos", "--batch-size", "96",
          "--micro-batch", "12", "--seed", "0", "--image-augment", "0.8", "--recompute-stats",
          "--objective", "joint", "--insulate-flow", "--lr", "3e-4", "--warmup-steps", "50",
          "--steps", str(steps), "--eval-every", str(steps), "--eval-dataset-breakdown",
          "--save-every", str(steps), "--num-workers", os.environ.get("NUM_WORKERS", "8"),
          "--prefetch-factor", "4", "--device", "cuda"]
if os.environ.get("DATA_DIR"):
    RECIPE += ["--data-dir", os.environ["DATA_DIR"]]
variants = [("fp32", 1, []), ("bf16", 1, ["--precision", "bf16"]),
            ("bf16+checkpointing", 1, ["--precision", "bf16", "--activation-checkpointing"]),
            ("bf16+compile", 1, ["--precision", "bf16", "--compile"])]
if size == "large":  # ~0.29B parameters: bf16 with checkpointing is how it runs
    variants = [("bf16+checkpointing", 1, ["--precision", "bf16", "--activation-checkpointing"]),
                ("bf16", 1, ["--precision", "bf16"]), ("tf32", 1, ["--precision", "tf32"]),
                ("bf16+checkpointing+compile", 1,
                 ["--precision", "bf16", "--activation-checkpointing", "--compile"])]
ranks = max((n for n in (8, 4, 2) if n <= len(pool)), default=0)
if ranks:
    if size != "large":
        variants.append((f"fp32 torchrun x{ranks}", ranks, []))
    variants.append((f"bf16 torchrun x{ranks}", ranks, ["--precision", "bf16"]
                     + (["--activation-checkpointing"] if size == "large" else [])))
else:
    print("(one GPU visible: no torchrun variant)")
chosen = [v.strip() for v in os.environ.get("VARIANTS", "").split(",") if v.strip()]
if chosen:
    variants = [v for v in variants if v[0] in chosen]

try:
    import pynvml
    pynvml.nvmlInit()
    handles = {i: pynvml.nvmlDeviceGetHandleByIndex(i) for i in pool}
except Exception as exc:  # the runs still give s/step
    print(f"NVML: not readable ({type(exc).__name__}: {exc}); no utilisation or memory figures")
    handles = {}


class Sampler(threading.Thread):
    """(time, {gpu: (util %, memory used bytes)}) every 200 ms."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples, self.done = [], threading.Event()

    def read(self):
        return {i: (pynvml.nvmlDeviceGetUtilizationRates(h).gpu,
                    pynvml.nvmlDeviceGetMemoryInfo(h).used) for i, h in handles.items()}

    def run(self):
        while not self.done.wait(0.2):
            self.samples.append((time.time(), self.read()))


rows, failed = [], []
for name, n, extra in variants:
    folder = out / name.replace(" ", "_").replace("+", "_")
    gpus = pool[:n]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus))}
    head = [sys.executable, "-m"] + (["torch.distributed.run", "--nproc-per-node", str(n), "-m"]
                                     if n > 1 else [])
    argv = head + ["fontaine_engine", "train", "--run-name", "bench_engine_gpu", "--output-dir",
                   str(folder), *RECIPE, *extra]
    print(f"== {name}: {' '.join(argv[1:])}", flush=True)
    folder.mkdir(parents=True, exist_ok=True)
    idle = Sampler().read() if handles else {}
    sampler = Sampler()
    if handles:
        sampler.start()
    t0 = time.time()
    with open(folder / "engine.out.log", "w") as log:
        rc = subprocess.call(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    wall = time.time() - t0
    sampler.done.set()
    log_path = folder / "train_log.jsonl"
    recs = [json.loads(line) for line in open(log_path)] if log_path.exists() else []
    train = [r for r in recs if r["kind"] == "train"]
    if rc or not train:
        tail = (folder / "engine.out.log").read_text().strip().splitlines()[-3:]
        print(f"   FAILED (exit {rc}): {' | '.join(tail)}")
        failed.append(name)
        continue
    steady = train[max(3, len(train) // 10):] or train
    # utilisation and memory while it trained (not the corpus, model build or compile)
    t_first, t_last = steady[0]["time"] - steady[0]["step_s"], train[-1]["time"]
    window = [s for t, s in sampler.samples if t_first <= t <= t_last]
    util = [s[i][0] for s in window for i in gpus]
    peak = {i: max(s[i][1] for t, s in sampler.samples) - idle[i][1] for i in gpus} \
        if sampler.samples else {}
    row = {"variant": name, "ranks": n, "s_step": statistics.median(r["step_s"] for r in steady),
           "first_s": train[0]["step_s"],
           "data": statistics.median(r["data_s"] / r["step_s"] for r in steady),
           "util": statistics.mean(util) if util else float("nan"),
           "peak_mib": max(peak.values()) / 2**20 if peak else float("nan"),
           "loss": train[-1]["loss"], "wall": wall, "device": recs[0]["device"]}
    rows.append(row)
    print(f"   s/step {row['s_step']:.4f} (median of {len(steady)}); first step "
          f"{row['first_s']:.2f} s; data-wait {row['data']:.3f}; GPU util {row['util']:.0f} %; "
          f"peak memory {row['peak_mib']:.0f} MiB above idle"
          + (" per GPU (max)" if n > 1 else "") + f"; loss at {train[-1]['step']}: "
          f"{row['loss']:.4f}; wall {wall:.0f} s", flush=True)

print(f"\n== summary ({torch.cuda.get_device_name(0)}, model {size}, {steps} steps each)")
print(f"{'variant':24} {'ranks':>5} {'s/step':>8} {'1st s':>7} {'data':>6} {'util %':>6} "
      f"{'peak MiB':>9} {'loss':>8}")
for r in rows:
    print(f"{r['variant']:24} {r['ranks']:>5} {r['s_step']:>8.4f} {r['first_s']:>7.2f} "
          f"{r['data']:>6.3f} {r['util']:>6.0f} {r['peak_mib']:>9.0f} {r['loss']:>8.4f}")
if failed:
    print(f"failed: {', '.join(failed)} (their engine.out.log under {out})")
sys.exit(1 if failed else 0)
PY
