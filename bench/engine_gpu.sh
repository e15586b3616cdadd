#!/usr/bin/env bash
# The demosonly recipe on one CUDA GPU for a few hundred steps: s/step, data-wait fraction
# and GPU utilization (nvidia-smi sampled every 500 ms while the engine runs).
# Needs a CUDA build of torch==2.13.0 (pip install torch==2.13.0 --index-url .../cu12x).
# Usage: bench/engine_gpu.sh [OUT_DIR]    env: STEPS (300), MODEL_SIZE (small: the recipe;
#        base: a GPU-sized model), NUM_WORKERS (8), GPU (0)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d /tmp/engine-gpu-XXXXXX)}
STEPS=${STEPS:-300}
MODEL_SIZE=${MODEL_SIZE:-small}
GPU=${GPU:-0}
mkdir -p "$OUT"
command -v nvidia-smi >/dev/null || { echo "bench: nvidia-smi not found: needs a CUDA machine" >&2; exit 2; }
python -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' \
  || { echo "bench: this torch build sees no CUDA device" >&2; exit 2; }
nvidia-smi -i "$GPU" --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits \
  -lms 500 > "$OUT/gpu.csv" &
SMI=$!
trap 'kill "$SMI" 2>/dev/null || true' EXIT
start=$(date +%s.%N)
CUDA_VISIBLE_DEVICES=$GPU python -m engine train --run-name bench_engine_gpu \
  --output-dir "$OUT/run" --model-size "$MODEL_SIZE" --batch-size 96 --backward-chunks 8 \
  --seed 0 --image-augment 0.8 --recompute-stats --objective joint --insulate-flow \
  --flow-decoder-init inherit --init "" --lr 3e-4 --warmup-steps 50 --steps "$STEPS" \
  --eval-every 100 --eval-dataset-breakdown --save-every "$STEPS" \
  --num-workers "${NUM_WORKERS:-8}" --prefetch-factor 4 --device cuda \
  > "$OUT/engine.out.log" 2>&1
end=$(date +%s.%N)
kill "$SMI" 2>/dev/null || true
python - "$OUT" "$start" "$end" "$MODEL_SIZE" <<'PY'
import json, statistics, sys
out, start, end, size = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
recs = [json.loads(line) for line in open(f"{out}/run/train_log.jsonl")]
meta = recs[0]
train = [r for r in recs if r["kind"] == "train"]
steady = train[len(train) // 10:]
util = []
for line in open(f"{out}/gpu.csv"):
    parts = [p.strip() for p in line.split(",")]
    if len(parts) == 2 and parts[0].isdigit():
        util.append((int(parts[0]), float(parts[1])))
busy = util[len(util) // 10:] or util  # skip start-up (corpus, model build)
print(f"device: {meta['device']}  model: {size}  steps: {train[-1]['step']}  wall: {end - start:.1f} s")
print(f"s/step (median): {statistics.median(r['step_s'] for r in steady):.4f}")
print(f"data-wait fraction (median data_s/step_s): "
      f"{statistics.median(r['data_s'] / r['step_s'] for r in steady):.4f}")
if busy:
    print(f"GPU util: mean {statistics.mean(u for u, _ in busy):.1f} %, "
          f"median {statistics.median(u for u, _ in busy):.0f} %  "
          f"({len(busy)} samples); memory max {max(m for _, m in busy):.0f} MiB")
else:
    print("GPU util: no nvidia-smi samples")
for r in recs:
    if r["kind"] == "eval":
        print(f"eval step {r['step']}: eval_chunk_mae {r['eval_chunk_mae']:.4f}")
PY
