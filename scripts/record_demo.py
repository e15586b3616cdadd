"""Record the run `fontaine-tui demo` replays, with its banked comparator.

    python scripts/record_demo.py            # about two minutes on a 2-core CPU; needs torch

The reference experiment in miniature (README: "The reference experiment on this machine"),
through the real launcher and engine: fontaine_tui/demo/demo_2rank_cpu.toml (2 ranks on CPU,
the distributed path) is trained and banked, then fontaine_tui/demo/demo_1proc_cpu.toml (one
process, read against the banked run) is trained. Its train_log.jsonl and prereg.json go to
fontaine_tui/demo/run/, the banked document to fontaine_tui/demo/bank/; checkpoints and the
rest stay behind in the temporary folder, which is removed. The bank used is a temporary one:
the user's own is not touched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fontaine_tui" / "demo"
COMPARATOR = "demo_2rank_cpu"
RUN = "demo_1proc_cpu"
LIMIT_S = 900  # each run; a tenth of that is usual


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`fontaine-tui ARGS` from this checkout, its output shown as it comes."""
    argv = [sys.executable, "-m", "fontaine_tui", *args]
    print("$ fontaine-tui", " ".join(args), flush=True)
    proc = subprocess.run(argv, cwd=ROOT, env=env, text=True, capture_output=True, timeout=LIMIT_S)
    tail = proc.stdout.splitlines()[-6:]
    print("\n".join(f"  {line}" for line in tail), flush=True)
    if proc.returncode != 0:
        sys.exit(f"fontaine-tui {args[0]} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="fontaine-record-demo-") as tmp:
        work = Path(tmp)
        env = dict(
            os.environ,
            FONTAINE_BANK=str(work / "bank"),
            FONTAINE_REGISTRY=str(work / "babysit.toml"),
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            XDG_CONFIG_HOME=str(work / "config"),  # no [[notify]] of the user's
            HF_HUB_OFFLINE="1",
            WANDB_MODE="offline",
            FONTAINE_NOTIFY="",
        )
        dist, run = work / COMPARATOR, work / RUN
        cli(
            "launch",
            str(DEMO / f"{COMPARATOR}.toml"),
            "--plain",
            "--output-dir",
            str(dist),
            env=env,
        )
        cli("bank", "add", str(dist), "--as", COMPARATOR, env=env)
        cli("launch", str(DEMO / f"{RUN}.toml"), "--plain", "--output-dir", str(run), env=env)
        verdict = json.loads((run / "verdict.json").read_text())
        if verdict.get("verdict") == "UNDECIDABLE":
            sys.exit(f"the recorded run reads UNDECIDABLE: {verdict.get('reason')}")
        banked = work / "bank" / COMPARATOR
        version = (banked / "CURRENT").read_text().strip()
        (DEMO / "run").mkdir(exist_ok=True)
        (DEMO / "bank").mkdir(exist_ok=True)
        for name in ("train_log.jsonl", "prereg.json"):
            shutil.copyfile(run / name, DEMO / "run" / name)
        shutil.copyfile(banked / f"{version}.json", DEMO / "bank" / f"{COMPARATOR}.json")
    for path in sorted(DEMO.rglob("*")):
        if path.is_file():
            print(f"{path.relative_to(ROOT)}  {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
