"""Regenerate the README's screenshots through the console test harness.

    python screenshots/make.py

Each mode of the console on a replayed fixture log (the document's scale: step-250 level
12.5087, so the raw and scale-adjusted rules disagree), at 120x40, fixed clock.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
os.environ["TEXTUAL_ANIMATIONS"] = "none"

from tests.console.conftest import SIZE, console, loaded, make_run, sample_registry  # noqa: E402
from tests.console.test_snapshots import ENGINE_OUT  # noqa: E402
from tests.logs import RIGONLY_LIKE, SCALED_LIKE  # noqa: E402

SHOTS = {  # file: (probes, step, keys)
    "monitor.svg": (SCALED_LIKE, 1000, ()),
    "probes.svg": (SCALED_LIKE, 1000, ("p",)),
    "probes-scaled.svg": (SCALED_LIKE, 1000, ("p", "s")),
    "probes-before-anchor.svg": (RIGONLY_LIKE, 250, ("p",)),
    "probes-per-dataset.svg": (SCALED_LIKE, 1000, ("p", "d")),
    "verdict.svg": (SCALED_LIKE, 1000, ("v",)),
    "verdict-provisional.svg": (RIGONLY_LIKE, 750, ("v",)),
    "help.svg": (RIGONLY_LIKE, 1000, ("question_mark",)),
    "runs.svg": (RIGONLY_LIKE, 1000, ("r",)),
}


async def shoot(name: str, step: int, keys: tuple[str, ...], out: Path) -> None:
    app = console(Path("run") / "train_log.jsonl", registry=sample_registry(Path.cwd() / "registry.toml"))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, step)
        await pilot.press(*keys)
        await pilot.pause(0.2)
        app.save_screenshot(filename=name, path=str(out))


def main() -> int:
    out = HERE
    for name, (probes, step, keys) in SHOTS.items():
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)  # relative paths: the header reads the same on every machine
            make_run(Path(tmp) / "run", upto=step, probes=probes, engine_out=ENGINE_OUT)
            asyncio.run(shoot(name, step, keys, out))
        print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
