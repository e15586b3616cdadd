"""The overlay takes any run folder by its path (`a`), registered or not: folders written by
our LogWriter, a TensorBoard run written by torch's SummaryWriter; past six runs the colours
come round again with another marker and the legend scrolls; a blinded run's reads are not
drawn."""

from __future__ import annotations

from pathlib import Path

from textual.containers import VerticalScroll
from textual.widgets import Input

from engine.logwriter import LogWriter
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Registry
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.screens.overlay import OverlayScreen
from fontaine_tui.widgets.chart import Chart
from tests.commands.test_blind import blind_preset
from tests.console.conftest import SIZE, console, make_run, text, until
from tests.foreign_writers import write_tb
from tests.logs import records_upto


def written(folder: Path, upto: int, preset=None) -> Path:
    """A run folder whose log our LogWriter wrote, up to `upto`; frozen with `preset` if given."""
    folder.mkdir(parents=True)
    writer = LogWriter(folder / "train_log.jsonl")
    for r in records_upto(upto):
        fields = {k: v for k, v in r.items() if k not in ("kind", "step", "time")}
        writer.write(r["kind"], r["step"], **fields)
    writer.close()
    if preset is not None:
        freeze(RunFolder(folder), preset, ["python", "train.py"], "here")
    return folder


def _drawn(chart: Chart) -> dict[str, int]:
    spec = chart.spec
    return {c.label.split(" (")[0]: len(c.xs) for c in spec.curves} if spec is not None else {}


async def _add(pilot, path: Path | str) -> None:
    """`a`, the path typed into the dialog, enter: as a user overlays a run."""
    await pilot.press("a")
    await until(pilot, lambda: bool(pilot.app.screen.query(Input)))
    pilot.app.screen.query_one(Input).value = str(path)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(pilot.app.screen, OverlayScreen))


async def test_unregistered_folders_and_a_tensorboard_run_are_overlaid_by_path(
    tmp_path, preset, registry_path
):
    ours = written(tmp_path / "ours", 1000, preset)
    bare = written(tmp_path / "bare", 600)  # no prereg.json: read with the console's preset
    tb = write_tb(tmp_path / "tb", 300)
    reg = Registry(registry_path)
    app = console(make_run(tmp_path / "shown", upto=500), registry=reg, start_mode="overlay")
    async with app.run_test(size=SIZE) as pilot:
        assert "a overlays any run folder" in text(app.screen.query_one("#overlay-legend"))
        for folder in (ours, bare / "train_log.jsonl", tb):
            await _add(pilot, folder)
        await _add(pilot, tmp_path / "nowhere")  # said, not followed
        await _add(pilot, ours)  # overlaid already: said, not twice
        losses = app.screen.query_one("#overlay-losses", Chart)
        await until(pilot, lambda: _drawn(losses) == {"ours": 1000, "bare": 600, "tb": 300}, 20)
        assert sorted(app.overlay.pins) == sorted(str(f) for f in (ours, bare, tb))
        legend = text(app.screen.query_one("#overlay-legend"))
        await until(
            pilot, lambda: "read +0.6929 @ 1000" in text(app.screen.query_one("#overlay-legend"))
        )
        assert "nowhere" not in legend
        # no process is known for a folder overlaid by its path: never said to be running
        shown = text(app.screen.query_one("#overlay-legend"))
        assert "bare  log not ended" in shown and "tb  log not ended" in shown, shown
        assert "running" not in shown, shown
        said = [n.message for n in app._notifications]
        assert any("nowhere: not overlaid: no such run folder here" in m for m in said), said
        assert any("is overlaid already" in m for m in said), said
    assert reg.entries() == []  # overlaid, never registered


async def test_eight_runs_take_colours_again_with_markers_and_the_legend_scrolls(
    tmp_path, preset, registry_path
):
    folders = [written(tmp_path / f"run{i}", 100 + 100 * i, preset) for i in range(8)]
    app = console(make_run(tmp_path / "shown", upto=500), start_mode="overlay")
    async with app.run_test(size=SIZE) as pilot:
        for folder in folders:
            await _add(pilot, folder)
        losses = app.screen.query_one("#overlay-losses", Chart)
        await until(pilot, lambda: len(_drawn(losses)) == 8 and not losses.pending, 20)
        looks = [(c.color, c.marker) for c in losses.spec.curves]
        assert len(set(looks)) == 8  # no two runs drawn alike
        assert looks[6][0] == looks[0][0] and looks[6][1] not in ("", "•")  # cyan again, "+"
        legend = text(app.screen.query_one("#overlay-legend"))
        assert "●+ run6" in legend and "● run0" in legend
        box = app.screen.query_one("#overlay-legend-box", VerticalScroll)
        await until(pilot, lambda: box.max_scroll_y > 0)  # 8 lines in a room of 6
        assert box.scroll_y == 0
        await pilot.press("down", "down")
        await until(pilot, lambda: box.scroll_y == 2)
        await pilot.press("up")
        await until(pilot, lambda: box.scroll_y == 1)


async def test_a_blinded_runs_reads_are_not_drawn(tmp_path, preset, registry_path):
    shown = written(tmp_path / "open", 1000, preset)
    # short of its endpoint: a blinded read is hidden until then (at the endpoint it is final,
    # and shown)
    hidden = written(tmp_path / "sealed", 750, load_preset(blind_preset(tmp_path)))
    app = console(make_run(tmp_path / "shown", upto=500), start_mode="overlay")
    async with app.run_test(size=SIZE) as pilot:
        await _add(pilot, shown)
        await _add(pilot, hidden)
        probes = app.screen.query_one("#overlay-probes", Chart)
        legend = lambda: text(app.screen.query_one("#overlay-legend"))  # noqa: E731
        await until(pilot, lambda: "read blinded" in legend(), 20)
        await until(pilot, lambda: _drawn(probes).get("open", 0) > 1, 20)
        assert _drawn(probes)["sealed"] == 0
        note = text(app.screen.query_one("#overlay-note"))
        assert "blinded, read not drawn: sealed" in note
        assert "+0.6929" not in legend().split("sealed", 1)[1]
