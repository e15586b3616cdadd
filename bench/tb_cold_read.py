"""Cold read of a TensorBoard event file with 1,000,000 scalars, by two readers.

The two readers, side by side in one run:

  ours         fontaine-tui's reader (core/log/formats): TFRecord framing, CRC-32C checked,
               scalars grouped into records in a RunStore (what `verdict` reads)
  accumulator  tensorboard's EventAccumulator(size_guidance={scalars: 0, tensors: 0})
               .Reload() (keeps every value), the reference reader

The file is written by torch.utils.tensorboard.SummaryWriter (another writer than ours):
train/loss at every step in the classic style (simple_value) and two eval tags every 10th
step in the tensor style (new_style=True), 1,000,000 scalars in all. Written once under
bench/out/ and reused.

    python bench/tb_cold_read.py [--scalars 1000000] [--repeat 3]

Target: ours >= 5x faster than the accumulator, with the same values (every tag, step and
value compared). Prints one JSON line; exit 1 if the ratio misses or a value differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fontaine_tui.core.log.formats.cold import load_source  # noqa: E402
from fontaine_tui.core.log.formats.source import SourceSpec  # noqa: E402
from fontaine_tui.core.log.formats.tfrecord import CRC_IMPLEMENTATION  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"


def write(folder: Path, scalars: int) -> Path:
    """SummaryWriter's event file: per 10 steps, 10 train losses and 2 x 1 eval values."""
    done = folder / "DONE"
    if done.exists():
        return folder
    from torch.utils.tensorboard import SummaryWriter

    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("events.out.tfevents.*"):
        old.unlink()  # a half-written file from an interrupted run (ours, in bench/out)
    w = SummaryWriter(str(folder), max_queue=1000, flush_secs=60)
    n, step = 0, 0
    while n < scalars:
        step += 1
        w.add_scalar("train/loss", 2.0 / (1 + step / 1000), step)
        n += 1
        if step % 10 == 0 and n + 2 <= scalars:
            w.add_scalar("eval/chunk_mae", 3.0 + (step % 997) / 997, step, new_style=True)
            w.add_scalar("eval/rig", 3.3 + (step % 991) / 991, step, new_style=True)
            n += 2
    w.close()
    done.write_text(f"{scalars}\n")
    return folder


def ours(folder: Path) -> tuple[float, dict]:
    t0 = time.perf_counter()
    store = load_source(folder, SourceSpec("tensorboard")).store
    wall = time.perf_counter() - t0
    values = {"train/loss": list(zip(store.steps, store.columns["loss"], strict=True))}
    for tag in ("eval/chunk_mae", "eval/rig"):
        values[tag] = [(s, store.probes[s].fields[tag]) for s in store.probe_steps()]
    return wall, values


def accumulator(folder: Path) -> tuple[float, dict]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    t0 = time.perf_counter()
    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    wall = time.perf_counter() - t0
    values = {"train/loss": [(e.step, e.value) for e in acc.Scalars("train/loss")]}
    for tag in ("eval/chunk_mae", "eval/rig"):
        values[tag] = [
            (e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in acc.Tensors(tag)
        ]
    return wall, values


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scalars", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    folder = write(OUT / f"tb_scalars_{args.scalars}", args.scalars)  # no "tfevents" in
    # the name: tensorboard would take the folder for an event file
    [path] = folder.glob("events.out.tfevents.*")
    times: dict[str, list[float]] = {"ours": [], "accumulator": []}
    same = True
    for _ in range(args.repeat):  # interleaved, so load on the machine hits both
        t_ours, v_ours = ours(folder)
        t_acc, v_acc = accumulator(folder)
        times["ours"].append(t_ours)
        times["accumulator"].append(t_acc)
        same = same and v_ours == v_acc
        count = sum(len(v) for v in v_ours.values())
    best = {k: min(v) for k, v in times.items()}
    ratio = best["accumulator"] / best["ours"]
    print(
        json.dumps(
            {
                "bench": "tb_cold_read",
                "scalars": count,
                "file_mb": round(path.stat().st_size / 1e6, 1),
                "crc": CRC_IMPLEMENTATION,
                "ours_s": round(best["ours"], 3),
                "accumulator_s": round(best["accumulator"], 3),
                "speedup": round(ratio, 2),
                "same_values": same,
                "target": 5.0,
                "rounds": args.repeat,
            }
        )
    )
    return 0 if same and ratio >= 5.0 else 1


if __name__ == "__main__":
    sys.exit(main())
