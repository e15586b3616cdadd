"""Regenerate the README's and the docs' screenshots through the console test harness.

    python screenshots/make.py

Each mode of the console on a replayed fixture log (the document's scale: step-250 level
12.5087, so the raw and scale-adjusted rules disagree), at 120x40, fixed clock; and the
monitor, probes and verdict of `fontaine-tui demo` (the shipped recorded run, staged as the
command stages it); the overlay of two registered runs pinned in the runs mode; and the monitor
and processes mode of a live run (`live`: a small script launched as `fontaine-tui launch`
launches a [command] preset, the telemetry recorder sampling beside it).
tests/test_screenshots.py fails when a committed image differs from what the code draws now.
`python screenshots/make.py demo` makes only the demo's, `... overlay` only the overlay's,
`... live` only the live ones (compared by their layout: their numbers vary from run to run).
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


# A live run: a [command] preset (the user's own script, its JSONL read by [source] kind
# "jsonl") launched as `fontaine-tui launch` launches it, with the real telemetry recorder
# beside it, sampling fast so that its history has a few looks within seconds.
TRAIN = """\
import json, math, os, random, subprocess, sys, time

if sys.argv[1:2] == ["--rank"]:  # a rank: busy until the trainer that started it goes
    parent = os.getppid()
    block = bytearray(32 << 20)  # its share of the model
    while os.getppid() == parent:
        sum(block[::4096])
        time.sleep(0.01)
    sys.exit(0)

out = os.environ["FONTAINE_OUTPUT_DIR"]
workers = [
    subprocess.Popen([sys.executable, sys.argv[0], "--rank"], env={**os.environ, "RANK": str(r)})
    for r in range(2)
]
rng = random.Random(7)
with open(os.path.join(out, "metrics.jsonl"), "a") as log:
    for step in range(1, 181):
        loss = 2.4 * math.exp(-step / 60) + 0.35 + 0.04 * rng.random()
        now = round(time.time(), 3)
        log.write(json.dumps({"step": step, "time": now, "loss": round(loss, 4)}) + "\\n")
        if step % 20 == 0:
            eval_loss = 0.55 + 2.0 * math.exp(-step / 55) + 0.0004 * max(0, step - 120)
            row = {"step": step, "time": now, "eval_loss": round(eval_loss, 4)}
            log.write(json.dumps(row) + "\\n")
        log.flush()
        time.sleep(0.005)
print("step 180: saving a checkpoint", flush=True)
time.sleep(60)  # the screenshot is taken here, then the run is stopped
"""

LIVE_PRESET = """\
[run]
name = "live_jsonl"
output_dir = "runs/live"
question = "Does the eval loss keep falling after step 100, or does it turn back up?"

[command]
argv = ["python", "train.py"]

[source]
kind = "jsonl"
path = "metrics.jsonl"
time = "time"

[verdict]
metric = "eval_loss"
anchor_step = 100
endpoint_step = 300
healthy_max = 0.0
drift_min = 0.2
"""

LIVE_SHOTS = {"live-monitor.svg": (), "live-processes.svg": ("t",)}
LIVE_ENV = {"FONTAINE_TELEMETRY_S": "0.2"}  # the recorder's interval: ten looks in two seconds


async def shoot_live(name: str, keys: tuple[str, ...], launched, out: Path) -> None:
    from fontaine_tui.console import make_app
    from fontaine_tui.core.follow.open import run_source
    from fontaine_tui.core.host.telemetry import sample
    from fontaine_tui.screens.processes import ProcessesScreen
    from fontaine_tui.widgets.process_table import ProcessTable
    from fontaine_tui.widgets.telemetry_panel import TelemetryPanel
    from tests.console.conftest import text, until

    engine = launched.handle
    app = make_app(
        source=run_source(Path("runs/live"), launched.preset.source),  # relative: same header
        preset=launched.preset,
        kind="launch",
        process=engine,
        registry=launched.registry,
        telemetry=lambda: sample(pid=engine.pid),
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 180)
        panel = app.screen.query_one(TelemetryPanel)
        await until(pilot, lambda: "command mem" in text(panel) and "RAM" in text(panel), 20)
        await pilot.press(*keys)
        if keys:
            await until(pilot, lambda: isinstance(app.screen, ProcessesScreen))
            screen = app.screen
            assert isinstance(screen, ProcessesScreen)
            table = screen.query_one(ProcessTable)
            await until(  # the command, the script and its two ranks, in the table shown
                pilot,
                lambda: table.display and table.row_count >= 4,
                20,
            )
            await pilot.pause()  # its layout done: on a loaded machine it can lag the rows
        await pilot.pause(0.3)
        app.clear_notifications()
        await pilot.pause(0.1)
        app.save_screenshot(filename=name, path=str(out))


def live(out: Path, only: str = "") -> None:
    import signal
    import time

    from fontaine_tui.core.launch.targets.pick import pick_target
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.core.run.launcher import EngineProcess
    from fontaine_tui.model.launched import LaunchedRun

    for name, keys in LIVE_SHOTS.items():
        if only and name != only:
            continue
        saved = dict(os.environ)
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            os.chdir(root)
            os.environ |= LIVE_ENV
            os.environ["FONTAINE_REGISTRY"] = str(root / "state" / "babysit.toml")
            os.environ["FONTAINE_BANK"] = str(root / "bank")
            os.environ["XDG_CONFIG_HOME"] = str(root / "config")  # no user's notifications
            (root / "train.py").write_text(TRAIN)
            (root / "live.toml").write_text(LIVE_PRESET)
            # `python` is this interpreter, whatever its path: the preset reads the same
            os.environ["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), saved["PATH"]))
            launched = LaunchedRun.launch(pick_target(None, ()), load_preset(root / "live.toml"))
            engine = launched.handle
            assert isinstance(engine, EngineProcess)
            try:
                folder = root / "runs" / "live"
                deadline = time.monotonic() + 30
                while not (
                    "step 180: saving" in _read(folder / "engine.out.log")
                    and _read(folder / "telemetry.jsonl").count("\n") >= 12
                ):
                    if time.monotonic() > deadline:
                        raise RuntimeError(_read(folder / "engine.out.log")[-2000:])
                    time.sleep(0.05)
                asyncio.run(shoot_live(name, keys, launched, out))
            finally:
                engine.signal_group(signal.SIGKILL)  # the run this script started, and only it
                engine.wait(10)
                engine.close()
                os.chdir(HERE)
                os.environ.clear()
                os.environ |= saved
        print(out / name)


BOX = "│┃║╭╮╰╯├┤┬┴┼┌┐└┘"  # the borders that split a screen row into its panels' columns
SPARK = "▁▂▃▄▅▆▇█"
STATES = dict.fromkeys(("running", "sleeping", "disk-sleep", "idle"), "STATE")  # psutil's


def layout(svg: str) -> dict[int, list[str]]:
    """What a live image shows, less what varies from run to run: its layout, for the test.

    The SVG's text is put back on its rows and cut at the box borders into columns (keyed
    by the column where each piece begins); each column's words are read top to bottom, so a
    line wrapped one word earlier (a longer pid) reads the same. In each word a number (with
    its suffix: 0.01s/step, 3.8/23.5; or the dash of one not known yet) becomes `#`, a unit of
    bytes `U`, a sparkline one `▁`, a bar one `━`, a scrollbar's thumb `▌`, an absolute path
    `PATH`, `python3.11` `python`, a process's state `STATE`, and the node before `· # min`
    `HOST`.
    """
    import html
    import re

    rows: dict[float, list[tuple[int, str]]] = {}
    text = r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]*)</text>'
    for m in re.finditer(text, svg):
        x, y, t = m.groups()
        rows.setdefault(float(y), []).append((round(float(x) / 12.2), html.unescape(t)))
    columns: dict[int, list[str]] = {}
    for y in sorted(rows):
        line = ""
        for col, piece in sorted(rows[y]):
            line = line.ljust(col) + piece.replace("\xa0", " ")
        # A number drawn one digit longer (a pid) moves what follows it on its row, in a
        # table even past a tree's guide: each becomes one `#` before the row is cut.
        line = re.sub(r"python[\d.]*", "python", line)
        line = re.sub(r"\d[\w.,:%]*(/[\w.]+)?", "#", line)
        line = re.sub(f"[ {SPARK}]*[{SPARK}][ {SPARK}]*", " ▁ ", line)
        line = re.sub("[━╸╺]+", "━", line)
        line = re.sub("[▏▎▍▌▋▊▉]+", "▌", line)  # a scrollbar's thumb: as long as the table
        for m in re.finditer(f"[^{BOX}]+", line):
            columns.setdefault(m.start(), []).extend(m.group().split())
    for words in columns.values():
        for i, w in enumerate(words):
            w = re.sub(r"python[\d.]*", "python", w)
            w = re.sub(r"(—|\d[\w.,:%]*)(/[\w.]+)?", "#", w)  # 3.8/23.5, 0.01s/step, —/step
            w = re.sub(r"\b[KMGT]?iB(/s)?\b|\bB(/s)?\b", "U", w)
            words[i] = "PATH" if w.startswith("/") else STATES.get(w, w)
        for i in range(len(words) - 3):
            if words[i + 1 : i + 4] == ["·", "#", "min"]:
                words[i] = "HOST"
    return {col: words for col, words in columns.items() if words}


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


ALL = (*SHOTS, "overlay.svg", *DEMO_SHOTS, *LIVE_SHOTS)  # every image this script makes


def one(name: str, out: Path) -> Path:
    """Make the image `name` (one of ALL) into the folder `out`.

    tests/test_screenshots.py compares it with the committed one."""
    if name == "overlay.svg":
        overlay(out)
    elif name in DEMO_SHOTS:
        demo(out, only=name)
    elif name in LIVE_SHOTS:
        live(out, only=name)
    else:
        fixtures(out, only=name)
    return out / name


def main() -> int:
    out = HERE
    if sys.argv[1:] == ["overlay"]:
        overlay(out)
        return 0
    if sys.argv[1:] == ["live"]:
        live(out)
        return 0
    if sys.argv[1:] != ["demo"]:
        fixtures(out)
        overlay(out)
    demo(out)
    live(out)
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
