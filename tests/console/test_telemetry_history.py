"""The telemetry panel draws the recorder's history: sparklines per node, in replay.

The sidecars are written by the recorder's own writer (core/host/recorder.py's Sidecar),
the run is replayed by the real replay source, as `fontaine-tui replay` opens it.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fontaine_tui.core.host.recorder import Sidecar
from fontaine_tui.widgets.sparkline_text import BLOCKS
from fontaine_tui.widgets.telemetry_panel import TelemetryPanel
from tests.console.conftest import SIZE, console, loaded, make_run, text, until

GIB = 1 << 30
T0 = 1_787_000_000.0


def sample(i: int, node: str, gpus: bool) -> dict:
    """A sample as the recorder writes it: a day-like wave over 60 looks, ten seconds apart."""
    wave = (1 + math.sin(i / 6)) / 2
    line = {"v": 1, "t": T0 + 10 * i, "node": node, "host": node, "step": 10 * i}
    if gpus:
        line["gpus"] = [
            {"index": 0, "uuid": "GPU-1", "util": round(90 * wave), "mem": int(40 * GIB * wave)}
            | {"mem_total": 80 * GIB}
        ]
    else:
        line |= {"gpus": None, "gpu_reason": "NVML: library not found"}
    line["ram"] = {"used": int((20 + 10 * wave) * GIB), "total": 64 * GIB}
    line["engine"] = {"pid": 4242, "mem": int((4 + wave) * GIB), "cpu": 100 * wave, "procs": 5}
    line["disk"] = {"free": 500 * GIB, "read": i * i * (1 << 20), "write": i * (1 << 22)}
    line["net"] = {"in": i * (1 << 21), "out": i * (1 << 19)}
    return line


def run_with_history(folder: Path, names: dict[str, str]) -> Path:
    """A replayable run folder with a sidecar per file name in `names` (file -> node)."""
    log = make_run(folder, upto=1000)
    for name, node in names.items():
        sidecar = Sidecar(folder / name)
        for i in range(60):
            sidecar.append(sample(i, node, gpus=node != "cpu-node"))
    return log


async def shown(pilot, want: str) -> str:
    panel = pilot.app.screen.query_one(TelemetryPanel)
    await until(pilot, lambda: want in text(panel))
    return text(panel)


@pytest.mark.parametrize("how", ["replay", "attach"])
async def test_each_nodes_history_is_drawn_as_sparklines(tmp_path: Path, how: str) -> None:
    from fontaine_tui.core.follow.local import LocalRun

    names = {"telemetry.node0.jsonl": "gpu-a", "telemetry.node1.jsonl": "cpu-node"}
    log = run_with_history(tmp_path / "run", names)
    app = console(log, source=LocalRun(log.parent)) if how == "attach" else console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        got = await shown(pilot, "gpu-a · 10 min · step 590")
        assert "cpu-node · 10 min · step 590" in got
        lines = got.splitlines()
        util = next(line for line in lines if line.startswith("GPU util"))
        assert set(util.split()[2]) <= set(BLOCKS) and len(set(util.split()[2])) > 3
        assert "no GPU: NVML: library not found" in got  # no GPU: said, never drawn
        assert sum(line.startswith("engine mem") for line in lines) == 2  # one per node
        assert sum(line.startswith("net out") for line in lines) == 2
        assert not any(line.startswith("disk") for line in lines)  # several nodes: what differs
        if how == "replay":  # the history, not "no telemetry", heads the panel
            assert "recorded history (no live look: replay: no live machine)" in got
            assert "no telemetry" not in got


async def test_a_torn_and_a_garbage_line_are_said_once(tmp_path: Path) -> None:
    log = run_with_history(tmp_path / "run", {"telemetry.jsonl": "box"})
    with open(tmp_path / "run" / "telemetry.jsonl", "ab") as fh:
        fh.write(b'\x00\x01 garbage\n{"v": 1, "t": 17')
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        # the panel draws after the replay's last step: wait for the whole history
        got = await shown(pilot, "disk read  ▁▁▂▃▃▄▄▅▅▆▆▇▇█ 11.7 MiB/s")  # one node: every series
        assert "box · 10 min" in got
        assert "disk free  ▄▄▄▄▄▄▄▄▄▄▄▄▄▄ 500.0 GiB" in got  # flat: the middle block
        assert got.count("telemetry history: 1 line not a sample, a torn last line") == 1


GARBAGE = {  # a field no recorder writes: each must leave the console drawing the rest
    "nan": '"ram":{"used":NaN,"total":1}',
    "inf": '"engine":{"mem":Infinity,"cpu":1}',
    "400 digits": '"ram":{"used":1' + "0" * 400 + ',"total":1}',
    "wrong type": '"disk":{"free":"lots","read":1,"write":2}',
    "negative": '"net":{"in":-5,"out":1}',
}


@pytest.mark.parametrize("kind", sorted(GARBAGE))
async def test_a_garbage_sample_is_one_line_not_read(tmp_path: Path, kind: str) -> None:
    log = run_with_history(tmp_path / "run", {"telemetry.jsonl": "box"})
    with open(tmp_path / "run" / "telemetry.jsonl", "a") as fh:
        fh.write(f'{{"v":1,"t":{T0 + 601!r},"node":"box",{GARBAGE[kind]}}}\n')
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        # the panel draws after the replay's last step: wait for the whole history
        got = await shown(pilot, "disk read  ▁▁▂▃▃▄▄▅▅▆▆▇▇█ 11.7 MiB/s")
        assert "host RAM" in got and "box · 10 min" in got
        assert got.count("telemetry history: 1 line not a sample: not read") == 1
    assert app.return_code in (None, 0)


async def test_a_run_without_a_sidecar_says_so(tmp_path: Path) -> None:
    app = console(make_run(tmp_path / "run", upto=1000))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await shown(pilot, "no telemetry history (no telemetry.jsonl)")


async def test_a_finished_runs_history_leaves_the_warnings_and_events_on_screen(
    tmp_path: Path,
) -> None:
    """At the run's end, with two nodes' history and the engine's output shown at 120x40,
    the telemetry panel stops where the panels below it begin, and scrolls the rest."""
    names = {"telemetry.node0.jsonl": "gpu-a", "telemetry.node1.jsonl": "cpu-node"}
    log = run_with_history(tmp_path / "run", names)
    (tmp_path / "run" / "engine.out.log").write_text("engine: step 1000 done\n")
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await shown(pilot, "gpu-a · 10 min")
        await until(pilot, lambda: app.screen.query_one("#engine-tail").display is True)
        await pilot.pause(0.1)
        side = app.screen.query_one("#monitor-side").region
        box = app.screen.query_one(TelemetryPanel).parent
        for name in ("#warnings", "#events"):
            below = app.screen.query_one(name)
            assert side.contains_region(below.region), (name, below.region, side)
            assert below.region.size == below.outer_size, name  # whole, not cut at the foot
        assert "end: finished" in text(app.screen.query_one("#events"))
        assert box.region.bottom <= app.screen.query_one("#warnings").region.y
        assert box.max_scroll_y > 0  # the rest of its lines: a scroll away
        box.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert box.scroll_y == box.max_scroll_y


def test_history_panel_snapshot(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    names = {"telemetry.node0.jsonl": "gpu-a", "telemetry.node1.jsonl": "cpu-node"}
    run_with_history(tmp_path / "run", names)
    app = console(Path("run") / "train_log.jsonl")

    async def ready(pilot) -> None:
        await loaded(pilot, 1000)
        await shown(pilot, "cpu-node · 10 min")
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(120, 50), run_before=ready)


def test_a_flat_series_is_level_and_nothing_is_the_lowest_block() -> None:
    from fontaine_tui.widgets.sparkline_text import sparkline

    assert sparkline([0.0] * 20, 5) == "▁▁▁▁▁"  # no traffic: not drawn half full
    assert sparkline([7.0] * 20, 5) == "▄▄▄▄▄"
    assert sparkline([0.0, None, 50.0, 100.0], 4, 0.0, 100.0) == "▁ ▅█"
