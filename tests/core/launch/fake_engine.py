"""A stand-in engine for lifecycle unit tests (the real one is used in test_real_engine.py).

Usage: python fake_engine.py OUTPUT_DIR MODE; modes: run (until signalled), finish, oom,
ignore_int (SIGTERM stops it), ignore_all (only SIGKILL does), wrapper (stops
cleanly but exits 1, as torchrun does around ranks that stopped), fail (bad flags)."""

import json
import os
import signal
import sys
import time

out, mode = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
log = open(os.path.join(out, "train_log.jsonl"), "a")


def write(kind, step, **fields):
    log.write(json.dumps({"kind": kind, "step": step, "time": time.time(), **fields}) + "\n")
    log.flush()


stop = []
if mode == "ignore_all":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
elif mode == "ignore_int":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda s, f: stop.append(s))
else:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, f: stop.append(s))

print("fake engine up", flush=True)
if mode == "fail":
    print("engine: error: --batch-size 7: expected a multiple of 2", file=sys.stderr, flush=True)
    sys.exit(2)
write("meta", 0, schema=1, run="fake", world_size=1, device="cpu")
write("event", 0, event="start", detail="")
step = 0
while True:
    step += 1
    write("train", step, loss=1.0, step_s=0.01, data_s=0.0)
    if step % 5 == 0:
        write("checkpoint", step, path=f"checkpoints/step-{step:06d}")
    if mode == "oom" and step == 3:
        write("event", step, event="error", detail="RuntimeError: CUDA out of memory. Tried")
        print("RuntimeError: CUDA out of memory", file=sys.stderr, flush=True)
        sys.exit(1)
    if mode == "finish" and step == 8:
        write("event", step, event="end", detail=f"finished at step {step}")
        sys.exit(0)
    if stop:
        name = signal.Signals(stop[0]).name
        write("checkpoint", step, path=f"checkpoints/step-{step:06d}")  # as the engine does
        write("event", step, event="end", detail=f"stopped by {name} at step {step}")
        sys.exit(1 if mode == "wrapper" else 128 + stop[0])  # wrapper: as torchrun does
    time.sleep(0.02)
