"""Wall time a `[gates] stop_on_lock` saves: the same run stopped on its lock vs run to its end.

    python bench/stop_on_lock.py [--steps 200]

The run is presets/smoke.toml's engine (CPU, tiny) with bounds no probe can cross, so its
decision locks at its first probe (step 10). `launch --plain` runs it twice, side by side in
one process: once with stop_on_lock (the watcher stops it with a checkpoint once the lock
holds) and once without (it runs to its endpoint). Prints each command's wall time, the steps
each ran, its verdict and the time saved.
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
sys.path.insert(0, str(ROOT))

from fontaine_tui.core.log.read import load_log  # noqa: E402
from tests.commands.test_stop_on_lock import lock_preset  # noqa: E402


def run(folder: Path, stop: bool, steps: int) -> tuple[float, int, str]:
    """One launch --plain to its end: (wall seconds, last step, verdict)."""
    folder.mkdir()
    preset = lock_preset(folder, stop=stop, steps=steps)
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(folder / "config"),
        "FONTAINE_REGISTRY": str(folder / "state" / "babysit.toml"),
        "FONTAINE_BANK": str(folder / "bank"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    env.pop("FONTAINE_NOTIFY", None)
    argv = [sys.executable, "-m", "fontaine_tui", "launch", str(preset), "--plain"]
    start = time.perf_counter()
    subprocess.run(
        [*argv, "--output-dir", "run", "--poll", "0.5"],
        cwd=folder,
        env=env,
        capture_output=True,
        check=False,
    )
    wall = time.perf_counter() - start
    verdict = json.loads((folder / "run" / "verdict.json").read_text())
    return wall, load_log(folder / "run" / "train_log.jsonl").last_step, verdict["verdict"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200, help="the recipe's steps (the endpoint)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stopped = run(Path(tmp) / "stop", True, args.steps)
        full = run(Path(tmp) / "full", False, args.steps)
    for name, (wall, last, label) in (("stop_on_lock", stopped), ("to the end", full)):
        print(f"{name:<14} {wall:7.1f} s  last step {last:>4}/{args.steps}  verdict {label}")
    saved = full[0] - stopped[0]
    print(f"saved          {saved:7.1f} s  ({saved / full[0]:.0%} of the run to its end)")


if __name__ == "__main__":
    main()
