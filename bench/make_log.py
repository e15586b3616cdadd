"""Write a deterministic 1,000,000-line (~220 MB) schema-v1 log to bench/out/ for the benches.

    python bench/make_log.py [--lines N] [--style compact|default|shuffled] [--out PATH]

Same bytes on every run (seeded values, fixed clock). Probes every 250 steps follow the
rigonly-like fixture (delta(1000) = +0.6929, reads AMBIGUOUS under demosonly_1gpu).

Three writers of the same records:
  compact   the engine's own form (engine/logwriter.py): json.dumps(separators=(",", ":"))
  default   Python's json.dumps with its default ", " and ": " separators
  shuffled  json.dumps with the keys of every record in a random (seeded) order
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
T0 = 1_787_000_000.0
PROBES = {
    250: (3.4623, 3.6862),
    500: (3.1000, 3.2500),
    750: (3.5000, 3.3000),
    1000: (3.7929, 3.4100),
}
DATASETS = ("demos_pick", "demos_place", "rig_pick", "rig_place")


STYLES = ("compact", "default", "shuffled")


def _writer(style: str):
    if style == "compact":  # the engine's own format (engine/logwriter.py)
        return lambda obj: json.dumps(obj, separators=(",", ":"))
    if style == "default":
        return json.dumps
    if style == "shuffled":
        order = random.Random(1)

        def shuffled(obj: dict) -> str:
            items = list(obj.items())
            order.shuffle(items)
            return json.dumps(dict(items))

        return shuffled
    raise ValueError(f"unknown style {style!r} (expected one of {', '.join(STYLES)})")


def lines(n: int, style: str = "compact"):
    rng = random.Random(0)
    dumps = _writer(style)

    yield dumps(
        {
            "kind": "meta",
            "step": 0,
            "time": T0,
            "schema": 1,
            "run": "bench-1m",
            "world_size": 1,
            "device": "cuda:0",
            "recipe": {"steps": 1000, "lr": 3e-4},
            "argv": ["python", "-m", "fontaine_engine", "train"],
            "host": "bench",
        }
    )
    yield dumps({"kind": "event", "step": 0, "time": T0, "event": "start", "detail": ""})
    count, step = 2, 0
    while count < n - 1:
        step += 1
        t = round(T0 + step * 0.512 + rng.random() * 0.01, 3)
        loss = 2.0 * math.exp(-step / 4000) + 0.3 + rng.gauss(0, 0.02)
        yield dumps(
            {
                "kind": "train",
                "step": step,
                "time": t,
                "loss": loss,
                "ar_ce": round(loss * 0.8 + rng.random() * 1e-3, 12),
                "flow_loss": round(loss * 0.2, 9),
                "lr": round(3e-4 * min(1.0, step / 50), 9),
                "grad_norm": round(1.0 + rng.random(), 9),
                "step_s": round(0.5 + rng.random() * 0.02, 7),
                "data_s": round(0.01 + rng.random() * 1e-3, 8),
                "samples": step * 96,
            }
        )
        count += 1
        if step % 250 == 0 and count < n - 1:
            ev, tr = PROBES.get(step, (3.7 + rng.random() * 0.1, 3.4 + rng.random() * 0.1))
            yield dumps(
                {
                    "kind": "eval",
                    "step": step,
                    "time": t + 0.1,
                    "eval_chunk_mae": ev,
                    "train_chunk_mae": tr,
                    "eval_ar_ce": 0.6,
                    "eval_flow_loss": 0.07,
                    "breakdown": {d: ev * (0.9 + 0.05 * i) for i, d in enumerate(DATASETS)},
                    "n_frames": 256,
                }
            )
            count += 1
        if step % 500 == 0 and count < n - 1:
            yield dumps(
                {
                    "kind": "checkpoint",
                    "step": step,
                    "time": t + 0.2,
                    "path": f"checkpoints/step-{step:06d}",
                }
            )
            count += 1
    yield dumps(
        {
            "kind": "event",
            "step": step,
            "time": T0 + step * 0.512 + 1,
            "event": "end",
            "detail": "finished",
        }
    )


def make(path: Path, n: int = 1_000_000, style: str = "compact") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    buf: list[str] = []
    with open(tmp, "w") as f:
        for line in lines(n, style):
            buf.append(line)
            if len(buf) >= 20000:
                f.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            f.write("\n".join(buf) + "\n")
    tmp.replace(path)
    return path


def default_path(n: int = 1_000_000, style: str = "compact") -> Path:
    suffix = "" if style == "compact" else f"_{style}"
    return OUT / f"train_log_{n}{suffix}.jsonl"


def ensure(n: int = 1_000_000, style: str = "compact") -> Path:
    """The bench log, made once (bench/out/ is git-ignored)."""
    path = default_path(n, style)
    if not path.exists():
        make(path, n, style)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--style", choices=STYLES, default="compact")
    ap.add_argument("--all", action="store_true", help="write all three styles")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.all:
        for style in STYLES:
            path = make(default_path(args.lines, style), args.lines, style)
            print(f"{path}: {path.stat().st_size / 1e6:.1f} MB")
        return 0
    if args.out is not None and args.out.exists():  # never over a file this did not write
        ap.error(f"--out {args.out}: exists; choose a new path")
    path = make(args.out or default_path(args.lines, args.style), args.lines, args.style)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    n = sum(1 for _ in open(path, "rb"))
    print(f"{path}: {n} lines, {path.stat().st_size / 1e6:.1f} MB, sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
