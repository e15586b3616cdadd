"""The reference experiment with `[gates] stop_on_lock`: what stopping on the lock saves.

    python bench/reference_stop.py --init RUN_FOLDER [--full] [--out DIR]

The demosonly_1gpu recipe (presets/demosonly_1gpu.toml) is launched with `launch --plain` from
the pretraining run at RUN_FOLDER (a pretrain_so101 run, e.g. from bench/engine_cpu.sh), with
two keys added: `[gates] stop_on_lock = true`, and the lock's premise `[verdict]
max_probe_change = 0.1206`, the largest probe-to-probe move of eval_chunk_mae in an earlier CPU
run of the same recipe (7.3728 -> 7.2522 from step 250 to 500), stated before this run. With
`--full` the same recipe is then launched without the gate, to its endpoint, one after the
other (two engines side by side on two cores would each get one). Prints each launch's wall
time (launch to verdict), the steps it ran, and its verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PREMISE = 0.1206


def preset_text(stop: bool) -> str:
    text = (ROOT / "presets" / "demosonly_1gpu.toml").read_text()
    text = text.replace("[verdict]\n", f"[verdict]\nmax_probe_change = {PREMISE}\n", 1)
    if stop:
        text = text.replace("[gates]\n", "[gates]\nstop_on_lock = true\n", 1)
    return text


def launch(folder: Path, init: Path, stop: bool) -> tuple[float, int, str]:
    """One launch --plain to its end: (wall seconds, last step, the VERDICT line)."""
    folder.mkdir(parents=True)
    (folder / "outputs" / "train").mkdir(parents=True)
    (folder / "outputs" / "train" / "pretrain_so101").symlink_to(init.resolve())
    preset = folder / "demosonly_1gpu_ref.toml"
    preset.write_text(preset_text(stop))
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(folder / "config"),
        "FONTAINE_REGISTRY": str(folder / "state" / "registry.toml"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    env.pop("FONTAINE_NOTIFY", None)
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "launch", str(preset), "--plain"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - t0
    (folder / "launch.out").write_text(out.stdout + out.stderr)
    log = next((folder / "outputs" / "train").glob("grasp_*/train_log.jsonl"))
    steps = [json.loads(x)["step"] for x in log.read_text().splitlines() if '"train"' in x]
    verdict = next((x for x in out.stdout.splitlines() if x.startswith("VERDICT:")), "?")
    return wall, max(steps, default=0), verdict


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--init", type=Path, required=True, help="a pretrain_so101 run folder")
    p.add_argument("--full", action="store_true", help="also run it to its endpoint")
    p.add_argument("--out", type=Path, help="where the run folders go (default: a temp dir)")
    args = p.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="reference-stop-"))
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    runs = [("stop_on_lock", True)] + ([("to the endpoint", False)] if args.full else [])
    walls = {}
    for name, stop in runs:
        wall, last, verdict = launch(out / name.replace(" ", "_"), args.init, stop)
        walls[name] = wall
        print(f"{name}: {wall:.1f} s wall, last step {last} of 1000; {verdict}")
    if args.full:
        saved = walls["to the endpoint"] - walls["stop_on_lock"]
        print(f"saved: {saved:.1f} s ({saved / walls['to the endpoint']:.0%})")
    print(f"load average after: {os.getloadavg()[0]:.2f}; run folders in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
