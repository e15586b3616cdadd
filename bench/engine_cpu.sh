#!/usr/bin/env bash
# The demosonly_1gpu recipe (presets/demosonly_1gpu.toml, model small) on CPU, end to end.
# Prints wall time, median s/step, median data-wait fraction and the eval probes.
# Usage: bench/engine_cpu.sh [OUT_DIR]      (STEPS=1000 by default; the recipe's length)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d /tmp/engine-cpu-XXXXXX)}
STEPS=${STEPS:-1000}
mkdir -p "$OUT"
start=$(date +%s.%N)
python -m engine train --run-name grasp_sft_v2_demosonly_1gpu_disc --output-dir "$OUT" \
  --model-size small --batch-size 96 --backward-chunks 8 --seed 0 --image-augment 0.8 \
  --recompute-stats --objective joint --insulate-flow --flow-decoder-init inherit --init "" \
  --lr 3e-4 --warmup-steps 50 --steps "$STEPS" --eval-every 250 --eval-dataset-breakdown \
  --save-every 500 --num-workers 8 --prefetch-factor 4 --device cpu \
  > "$OUT/engine.out.log" 2>&1
end=$(date +%s.%N)
python - "$OUT/train_log.jsonl" "$start" "$end" <<'PY'
import json, statistics, sys
path, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
recs = [json.loads(line) for line in open(path)]
train = [r for r in recs if r["kind"] == "train"]
steady = train[len(train) // 10:]  # skip worker start-up and the first steps
print(f"log: {path}")
print(f"wall: {end - start:.1f} s for {train[-1]['step']} steps (process start to exit)")
print(f"median step_s: {statistics.median(r['step_s'] for r in steady):.3f}")
print(f"median data_s/step_s: {statistics.median(r['data_s'] / r['step_s'] for r in steady):.4f}")
print(f"total data_s/step_s: {sum(r['data_s'] for r in steady) / sum(r['step_s'] for r in steady):.4f}")
for r in recs:
    if r["kind"] == "eval":
        bd = " ".join(f"{k}={v:.3f}" for k, v in r["breakdown"].items())
        print(f"eval step {r['step']}: eval_chunk_mae {r['eval_chunk_mae']:.4f} "
              f"train_chunk_mae {r['train_chunk_mae']:.4f} eval_ar_ce {r['eval_ar_ce']:.4f} "
              f"eval_flow_loss {r['eval_flow_loss']:.4f} [{bd}]")
PY
