#!/usr/bin/env bash
# The demosonly_1gpu recipe (presets/demosonly_1gpu.toml, model small) on CPU, end to end.
# Prints wall time, CPU time, load average, median s/step, data-wait fraction and the probes.
# Usage: bench/engine_cpu.sh [OUT_DIR]      env: STEPS (1000, the recipe's length)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d /tmp/engine-cpu-XXXXXX)}
STEPS=${STEPS:-1000}
mkdir -p "$OUT"
exec python - "$OUT" "$STEPS" <<'PY'
import json, os, resource, statistics, subprocess, sys, time

out, steps = sys.argv[1], sys.argv[2]
argv = [sys.executable, "-m", "engine", "train", "--run-name", "grasp_sft_v2_demosonly_1gpu_disc",
        "--output-dir", out, "--model-size", "small", "--batch-size", "96",
        "--backward-chunks", "8", "--seed", "0", "--image-augment", "0.8", "--recompute-stats",
        "--objective", "joint", "--insulate-flow", "--flow-decoder-init", "inherit", "--init", "",
        "--lr", "3e-4", "--warmup-steps", "50", "--steps", steps, "--eval-every", "250",
        "--eval-dataset-breakdown", "--save-every", "500", "--num-workers", "8",
        "--prefetch-factor", "4", "--device", "auto"]
print("command:", " ".join(a if a else '""' for a in argv[1:]))
load0, t0 = os.getloadavg(), time.time()
with open(os.path.join(out, "engine.out.log"), "w") as log:
    rc = subprocess.call(argv, stdout=log, stderr=subprocess.STDOUT)
wall, load1 = time.time() - t0, os.getloadavg()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
recs = [json.loads(line) for line in open(os.path.join(out, "train_log.jsonl"))]
train = [r for r in recs if r["kind"] == "train"]
steady = train[len(train) // 10:]  # skip worker start-up and the first steps
print(f"exit code: {rc}; log: {out}/train_log.jsonl")
print(f"wall: {wall:.1f} s for {train[-1]['step']} steps (process start to exit)")
print(f"cpu: {ru.ru_utime + ru.ru_stime:.1f} s (engine + data workers); "
      f"load average before/after: {load0[0]:.2f}/{load1[0]:.2f} on {os.cpu_count()} cores")
print(f"median step_s: {statistics.median(r['step_s'] for r in steady):.3f}")
print(f"median data_s/step_s: {statistics.median(r['data_s'] / r['step_s'] for r in steady):.4f}")
print(f"sum data_s / sum step_s: "
      f"{sum(r['data_s'] for r in steady) / sum(r['step_s'] for r in steady):.4f}")
for r in recs:
    if r["kind"] == "eval":
        bd = " ".join(f"{k}={v:.3f}" for k, v in r["breakdown"].items())
        print(f"eval step {r['step']}: eval_chunk_mae {r['eval_chunk_mae']:.4f} "
              f"train_chunk_mae {r['train_chunk_mae']:.4f} eval_ar_ce {r['eval_ar_ce']:.4f} "
              f"eval_flow_loss {r['eval_flow_loss']:.4f} [{bd}]")
sys.exit(rc)
PY
