#!/usr/bin/env bash
# The reference recipe on CPU, end to end, as the presets say it: first the "released"
# checkpoint (presets/pretrain_so101.toml: a short pretraining run on demos + rig), then the
# demosonly_1gpu recipe (presets/demosonly_1gpu.toml) starting from it, on the LeRobot-format
# corpus. The engine commands are the launcher's own (fontaine_tui.core.launch.engine_argv
# build_argv), with --init pointed at this bench's pretraining run.
# Prints per run: wall time, CPU time, load average, median s/step, data-wait fraction and the
# probes; then whether the eval MAE fell over the first 500 steps.
# Usage: bench/engine_cpu.sh [OUT_DIR]      env: STEPS (the demosonly recipe's 1000),
#        DATA_DIR (the corpus; default the engine's cache), INIT (an existing init: skip the
#        pretraining run)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d /tmp/engine-cpu-XXXXXX)}
mkdir -p "$OUT"
exec python - "$OUT" <<'PY'
import json, os, resource, statistics, subprocess, sys, time
from pathlib import Path

from fontaine_tui.core.launch.engine_argv import build_argv
from fontaine_tui.core.preset.find import load_preset

out = Path(sys.argv[1]).resolve()


def argv_of(preset_name, folder, **override):
    argv = build_argv(load_preset(preset_name), folder)
    for flag, value in override.items():
        flag = "--" + flag.replace("_", "-")
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    if os.environ.get("DATA_DIR"):
        argv += ["--data-dir", os.environ["DATA_DIR"]]
    return argv


def run(name, argv):
    folder = Path(argv[argv.index("--output-dir") + 1])
    print(f"== {name}")
    print("command:", " ".join(a if a else '""' for a in argv[1:]))
    load0, t0 = os.getloadavg(), time.time()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "engine.out.log", "w") as log:
        rc = subprocess.call(argv, stdout=log, stderr=subprocess.STDOUT)
    wall, load1 = time.time() - t0, os.getloadavg()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ru.ru_utime + ru.ru_stime - cpu0.ru_utime - cpu0.ru_stime
    recs = [json.loads(line) for line in open(folder / "train_log.jsonl")]
    train = [r for r in recs if r["kind"] == "train"]
    steady = train[len(train) // 10:]  # skip worker start-up and the first steps
    print(f"exit code: {rc}; log: {folder}/train_log.jsonl")
    if not train:
        print((folder / "engine.out.log").read_text()[-2000:])
        sys.exit(rc or 1)
    print(f"wall: {wall:.1f} s for {train[-1]['step']} steps (process start to exit)")
    print(f"cpu: {cpu:.1f} s (engine + data workers); load average before/after: "
          f"{load0[0]:.2f}/{load1[0]:.2f} on {os.cpu_count()} cores")
    print(f"median step_s: {statistics.median(r['step_s'] for r in steady):.3f}")
    print(f"median data_s/step_s: {statistics.median(r['data_s'] / r['step_s'] for r in steady):.4f}")
    print(f"sum data_s / sum step_s: "
          f"{sum(r['data_s'] for r in steady) / sum(r['step_s'] for r in steady):.4f}")
    for r in recs:
        if r["kind"] == "event" and r["event"] in ("start", "error"):
            print(f"{r['event']}: {r['detail']}")
    evals = [r for r in recs if r["kind"] == "eval"]
    for r in evals:
        bd = " ".join(f"{k}={v:.3f}" for k, v in r["breakdown"].items())
        print(f"eval step {r['step']}: eval_chunk_mae {r['eval_chunk_mae']:.4f} "
              f"train_chunk_mae {r['train_chunk_mae']:.4f} eval_ar_ce {r['eval_ar_ce']:.4f} "
              f"eval_flow_loss {r['eval_flow_loss']:.4f} [{bd}]")
    if rc:
        sys.exit(rc)
    return evals


init = os.environ.get("INIT")
if not init:
    run("pretrain_so101 (the released checkpoint)", argv_of("pretrain_so101", out / "pretrain"))
    init = str(out / "pretrain")
steps = os.environ.get("STEPS", "1000")
evals = run("demosonly_1gpu from the released checkpoint",
            argv_of("demosonly_1gpu", out / "demosonly", init=init, steps=steps))
first = [r["eval_chunk_mae"] for r in evals if r["step"] <= 500]
if len(first) >= 2:
    falling = all(b < a for a, b in zip(first, first[1:]))
    print(f"eval MAE over the first 500 steps: {' -> '.join(f'{v:.4f}' for v in first)} "
          f"({'falling' if falling else 'NOT falling'})")
PY
