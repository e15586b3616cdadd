"""The config mode (h) on a real Lightning run: hparams.yaml's rows as key = value under the
file they came from, a secret-named one masked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from textual.widgets import DataTable, Static

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.verdict.blindwords import HIDDEN_VALUE
from tests.console.conftest import SIZE, until
from tests.core.log.formats.conftest import foreign_preset
from tests.writers.configs import TOKEN

ROOT = Path(__file__).resolve().parents[2]


async def test_h_lists_a_lightning_runs_hparams(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "tests.writers.configs", str(tmp_path), "lightning"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=180,
    )
    folder = tmp_path / "lightning" / "csv" / "version_0"
    preset = load_preset(str(foreign_preset(tmp_path, 'kind = "csv"')))
    app = make_app(
        source=ForeignRun(folder, SourceSpec("csv"), poll_s=0.05),
        preset=preset,
        kind="attach",
        frame_s=0.05,
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h")
        await until(pilot, lambda: app.current_mode == "config")
        table = app.screen.query_one("#config-table", DataTable)
        await until(pilot, lambda: table.row_count > 0)
        rows = {
            str(table.get_row_at(i)[0]): str(table.get_row_at(i)[1]) for i in range(table.row_count)
        }
        assert rows["lr"] == "0.0003" and rows["optimizer"] == "adamw"
        assert rows["model.dims"] == "[64, 32]"
        assert rows["hub_token"] == "***" and TOKEN not in str(rows)
        said = str(app.screen.query_one("#config-source", Static).render())
        assert f"config from {folder / 'hparams.yaml'}" in said


def odd_run(tmp_path: Path) -> Path:
    """A real Lightning run whose hparams.yaml holds tests/writers/configs.py's ODD."""
    subprocess.run(
        [sys.executable, "-m", "tests.writers.configs", str(tmp_path), "lightning_odd"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=180,
    )
    return tmp_path / "lightning_odd" / "csv" / "version_0"


async def config_rows(pilot, app) -> dict[str, str]:
    await pilot.press("h")
    await until(pilot, lambda: app.current_mode == "config")
    table = app.screen.query_one("#config-table", DataTable)
    await until(pilot, lambda: table.row_count > 0)
    await pilot.pause(0.1)
    return {
        str(table.get_row_at(i)[0]): str(table.get_row_at(i)[1]) for i in range(table.row_count)
    }


async def test_h_shows_markup_shaped_keys_and_values_literally(tmp_path: Path) -> None:
    """A value shaped like markup ("[/bold]") neither crashes the pane nor is obeyed, and a
    list ("[train.py, --lr, 0.1]") is not read as a tag and dropped; keys the same."""
    folder = odd_run(tmp_path)
    preset = load_preset(str(foreign_preset(tmp_path, 'kind = "csv"')))
    app = make_app(
        source=ForeignRun(folder, SourceSpec("csv"), poll_s=0.05),
        preset=preset,
        kind="attach",
        frame_s=0.05,
    )
    async with app.run_test(size=SIZE) as pilot:
        rows = await config_rows(pilot, app)
        await pilot.pause(0.2)  # the table draws its rows (the markup crashed it here)
        assert rows["boom"] == "[/bold]"
        assert rows["argv"] == "[train.py, --lr, 0.1]"
        assert rows["[b]key[/b]"] == "k"
        assert rows["best_eval_loss"] == "0.4123"  # not blinded: shown
    assert app.return_code in (None, 0)


async def test_h_hides_the_rules_metric_in_the_config_while_blinded(tmp_path: Path) -> None:
    """On a blinded run, hparams.yaml's best_eval_loss (it names the rule's val_loss by its
    word "loss", and holds a number) is hidden as the events and output panes hide a
    trainer's words; lr is shown."""
    folder = odd_run(tmp_path)
    path = foreign_preset(tmp_path, 'kind = "csv"', metric="val_loss")
    path.write_text(path.read_text() + "blind = true\n")
    app = make_app(
        source=ForeignRun(folder, SourceSpec("csv"), poll_s=0.05),
        preset=load_preset(str(path)),
        kind="attach",
        frame_s=0.05,
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.view is not None and app.view.blinded)
        rows = await config_rows(pilot, app)
        screen = app.export_screenshot()  # what the terminal shows
    assert rows["best_eval_loss"] == HIDDEN_VALUE and "0.4123" not in str(rows)
    assert "best_eval_loss" in screen and "0.4123" not in screen
    assert rows["lr"] == "0.1" and rows["boom"] == "[/bold]"
