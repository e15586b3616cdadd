"""The runs list's whole read of a run on this host, against its usual read of the same run.

    python bench/fleet_whole.py

Writes one run folder (a frozen prereg.json, a log of engine-shaped train and probe records)
of `fleet.WHOLE_LINES` lines, twice: engine-shaped records, and lines the reader cannot parse
(the costliest), and reads its row with the runs list's reader, side by side in one process: as
the list reads it from the last lines (`read_run` on the fleet script's parts), and as it reads
a run it cannot read from them, whole (`_whole_log`, as `verdict` does). The target: the whole
read of the largest log the list reads whole stays within the list's deadline
(fleet.DEADLINE_S).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fontaine_tui.core.preset.find import load_preset  # noqa: E402
from fontaine_tui.core.runfolder import RunFolder  # noqa: E402
from fontaine_tui.core.runs import fleet  # noqa: E402
from fontaine_tui.core.runs.registry import Entry  # noqa: E402
from fontaine_tui.core.verdict.prereg import freeze  # noqa: E402


def write_run(root: Path, broken: bool) -> None:
    freeze(RunFolder(root), load_preset(ROOT / "presets" / "demosonly_1gpu.toml"), ["x"], "h")
    t0, out, lines, step = time.time() - 1e5, [], 0, 0
    with (root / "train_log.jsonl").open("w") as fh:
        if broken:  # a probe first (the row has a probe step), then lines it cannot parse
            fh.write(json.dumps({"kind": "eval", "step": 20, "time": t0, "eval_chunk_mae": 3.0}))
            fh.write("\n" + "{\n" * (fleet.WHOLE_LINES - 10))
            return
        while lines < fleet.WHOLE_LINES - 2:
            step += 1
            rec = {"kind": "train", "step": step, "time": t0 + step, "loss": 1.0, "lr": 1e-3,
                   "grad_norm": 0.5, "step_s": 0.5, "data_s": 0.01}  # fmt: skip
            out = [json.dumps(rec)]
            if step % 20 == 0:
                probe = {"kind": "eval", "step": step, "time": t0 + step, "eval_chunk_mae": 3.0,
                         "train_chunk_mae": 3.1, "eval_ar_ce": 0.6, "eval_flow_loss": 0.1}  # fmt: skip
                out.append(json.dumps(probe))
            fh.write("\n".join(out) + "\n")
            lines += len(out)


def main() -> int:
    for broken in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "run"
            root.mkdir()
            write_run(root, broken)
            entry = Entry(name="run", run_dir=str(root), host="here", pid=0, preset="x")
            argv = ["sh", "-c", fleet.FLEET_SCRIPT, "fleet", *fleet.script_argv([entry])]
            start = time.perf_counter()
            reply = subprocess.run(argv, capture_output=True, check=True).stdout
            [parts] = fleet.parse_reply(reply) or [{}]
            row = fleet.read_run(entry, parts, time.time())
            usual = time.perf_counter() - start
            start = time.perf_counter()
            store, why = fleet._whole_log(root)
            whole = time.perf_counter() - start
            size = (root / "train_log.jsonl").stat().st_size
            assert store is not None, why
            assert row.probe_step == store.probe_steps()[-1]
            kind = "unparsable lines" if broken else "engine records"
            print(f"{kind}: log {size / 2**20:.1f} MiB, {len(store.probe_steps())} probes")
            print(f"  runs list, last lines: {usual:.3f} s; whole read: {whole:.3f} s")
            print(f"  ratio {whole / usual:.1f}x; deadline {fleet.DEADLINE_S:g} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
