"""Regenerate the README's and the docs' screenshots through the console test harness.

    python screenshots/make.py

Each mode of the console on a replayed fixture log (the document's scale: step-250 level
12.5087, so the raw and scale-adjusted rules disagree), at 120x40, fixed clock; and the
monitor, probes and verdict of `fontaine-tui demo` (the shipped recorded run, staged as the
command stages it); and the overlay of two registered runs pinned in the runs mode.
tests/test_screenshots.py fails when a committed image differs from what the code draws now.
`python screenshots/make.py demo` makes only the demo's, `... overlay` only the overlay's.
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
from tests.logs import RIGONLY_LIKE, SCALED_LIKE  # noqa: E402

# the engine's last lines, as a run writes them (the snapshot tests add hostile ones)
ENGINE_OUT = (
    "engine: step 998 loss 0.4113 ar_ce 0.3290 flow 0.0823\n"
    "engine: step 999 loss 0.4109 ar_ce 0.3287 flow 0.0822\n"
    "engine: step 1000 done; checkpoint checkpoints/step-001000\n"
)

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
    "metrics.svg": (SCALED_LIKE, 1000, ("b",)),
}


async def shoot(name: str, step: int, keys: tuple[str, ...], out: Path) -> None:
    app = console(
        Path("run") / "train_log.jsonl", registry=sample_registry(Path.cwd() / "registry.toml")
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, step)
        await pilot.press(*keys)
        await pilot.pause(0.2)
        app.clear_notifications()  # a key's toast may or may not have gone: not in the image
        await pilot.pause(0.1)
        app.save_screenshot(filename=name, path=str(out))


DEMO_SHOTS = {"demo-monitor.svg": (), "demo-probes.svg": ("p",), "demo-verdict.svg": ("v",)}


async def shoot_demo(name: str, keys: tuple[str, ...], staged, out: Path) -> None:
    from fontaine_tui.console import make_app
    from fontaine_tui.core.follow.replay import ReplayRun
    from tests.console.conftest import fixed_clock

    # the run's path relative to the staged folder: the header reads the same on every machine
    source = ReplayRun(Path("run") / "train_log.jsonl", speed=None)
    app = make_app(
        source=source,
        preset=staged.preset,
        kind="replay",
        registry=staged.registry,
        clock=fixed_clock,
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 300)
        await pilot.press(*keys)
        await pilot.pause(0.2)
        app.clear_notifications()
        await pilot.pause(0.1)
        app.save_screenshot(filename=name, path=str(out))


def demo(out: Path, only: str = "") -> None:
    from fontaine_tui.commands import demo as command

    for name, keys in DEMO_SHOTS.items():
        if only and name != only:
            continue
        with command.staged() as staged:
            os.chdir(staged.folder.parent)
            try:
                asyncio.run(shoot_demo(name, keys, staged, out))
            finally:
                os.chdir(HERE)
        print(out / name)


async def shoot_overlay(root: Path, out: Path) -> None:
    """Two registered runs pinned in the runs mode and overlaid, as the console test does."""
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.widgets.chart import Chart
    from tests.console.conftest import until
    from tests.console.test_overlay import _pin_both, _two_runs

    reg = _two_runs(root, load_preset("demosonly_1gpu"), root / "registry.toml")
    app = console(make_run(root / "shown", upto=500), registry=reg, start_mode="runs")
    async with app.run_test(size=SIZE) as pilot:
        await _pin_both(pilot)
        await pilot.press("o")
        charts = list(app.screen.query(Chart))
        await until(
            pilot,
            lambda: (
                all(c.spec is not None and not c.pending for c in charts)
                and sum(len(c.xs) for c in charts[0].spec.curves) == 1600
            ),  # type: ignore[union-attr]
        )
        app.clear_notifications()
        await pilot.pause(0.2)
        app.save_screenshot(filename="overlay.svg", path=str(out))


def overlay(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # relative paths: the same on every machine
        try:
            asyncio.run(shoot_overlay(Path(tmp), out))
        finally:
            os.chdir(HERE)
    print(out / "overlay.svg")


ALL = (*SHOTS, "overlay.svg", *DEMO_SHOTS)  # every image this script makes


def one(name: str, out: Path) -> Path:
    """Make the image `name` (one of ALL) into the folder `out`.

    tests/test_screenshots.py compares it with the committed one."""
    if name == "overlay.svg":
        overlay(out)
    elif name in DEMO_SHOTS:
        demo(out, only=name)
    else:
        fixtures(out, only=name)
    return out / name


def main() -> int:
    out = HERE
    if sys.argv[1:] == ["overlay"]:
        overlay(out)
        return 0
    if sys.argv[1:] != ["demo"]:
        fixtures(out)
        overlay(out)
    demo(out)
    return 0


def fixtures(out: Path, only: str = "") -> None:
    for name, (probes, step, keys) in SHOTS.items():
        if only and name != only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)  # relative paths: the header reads the same on every machine
            try:
                make_run(Path(tmp) / "run", upto=step, probes=probes, engine_out=ENGINE_OUT)
                asyncio.run(shoot(name, step, keys, out))
            finally:
                os.chdir(HERE)
        print(out / name)


if __name__ == "__main__":
    sys.exit(main())
