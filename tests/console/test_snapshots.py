"""How each mode looks at 120x40 on a replayed log (SVG snapshots, committed).

Update after an intended change with `pytest tests/console/test_snapshots.py --snapshot-update`
and look at the SVGs before committing them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.console.conftest import SIZE, console, loaded, make_run, sample_registry
from tests.logs import RIGONLY_LIKE, SCALED_LIKE

ENGINE_OUT = (
    "engine: step 998 loss 0.4113\n"
    "engine: step 999 loss 0.4109 [bold red]not markup[/]\n"
    "engine: \x1b[31mnot red\x1b[0m step 1000 done\n"
)

CASES = {
    "monitor": (SCALED_LIKE, 1000, ()),
    "monitor_log_no_smoothing": (SCALED_LIKE, 1000, ("g", "E", "E", "E", "E")),
    "probes_per_dataset": (SCALED_LIKE, 1000, ("p", "d")),
    "probes_raw": (SCALED_LIKE, 1000, ("p",)),
    "probes_scaled": (SCALED_LIKE, 1000, ("p", "s")),
    "probes_levels_250": (RIGONLY_LIKE, 250, ("p",)),
    "verdict": (SCALED_LIKE, 1000, ("v",)),
    "verdict_at_500": (SCALED_LIKE, 1000, ("v", "left", "left")),
    "verdict_provisional_750": (RIGONLY_LIKE, 750, ("v",)),
    "help": (RIGONLY_LIKE, 1000, ("question_mark",)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_mode_snapshot(case, snap_compare, tmp_path, monkeypatch):
    probes, step, keys = CASES[case]
    monkeypatch.chdir(tmp_path)  # relative paths keep the header the same on every machine
    make_run(tmp_path / "run", upto=step, probes=probes, engine_out=ENGINE_OUT)
    app = console(Path("run") / "train_log.jsonl")

    async def ready(pilot) -> None:
        await loaded(pilot, step)
        for key in keys:
            await pilot.press(key)
        await pilot.pause(0.1)
        # a key's toast lasts seconds: whether it is still shown depends on the machine's
        # load, so the snapshot is of the mode alone (the toasts are tested where they matter)
        pilot.app.clear_notifications()
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=SIZE, run_before=ready)


def test_runs_snapshot(snap_compare, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_run(tmp_path / "run", upto=1000, probes=RIGONLY_LIKE)
    registry = sample_registry(tmp_path / "registry.toml")
    app = console(Path("run") / "train_log.jsonl", registry=registry)

    async def ready(pilot) -> None:
        await loaded(pilot, 1000)

    assert snap_compare(app, press=("r",), terminal_size=SIZE, run_before=ready)


@pytest.mark.parametrize("keys", [("p",), ("p", "s")], ids=["raw", "scaled"])
def test_probes_with_banked_curves_snapshot(keys, snap_compare, tmp_path, monkeypatch):
    """Two banked runs of one group: their curves, the envelope, the bounds, this run on top."""
    from fontaine_tui.cli import main
    from fontaine_tui.core.preset.find import load_preset
    from tests.logs import records, write_log

    monkeypatch.chdir(tmp_path)
    for name, probes in (
        ("a", {250: (3.4, 3.6), 500: (3.1, 3.2), 750: (3.9, 3.3), 1000: (4.6, 3.4)}),
        ("b", {250: (3.4, 3.6), 500: (3.0, 3.2), 1000: (5.2, 3.4)}),
    ):
        write_log(tmp_path / name / "train_log.jsonl", records(probes=probes))
        assert main(["bank", "add", name, "--as", f"drift_{name}"]) == 0  # relative: a stable sha
    text = (Path(__file__).parents[2] / "presets" / "demosonly_1gpu.toml").read_text()
    text = text.replace(
        "[[amendments]]",
        """[comparators.drift_a]
bank = "drift_a"
group = "drifting"

[comparators.drift_b]
bank = "drift_b"
group = "drifting"

[[amendments]]""",
        1,
    )
    (tmp_path / "banked.toml").write_text(text)
    make_run(tmp_path / "run", upto=1000, probes=SCALED_LIKE, engine_out=ENGINE_OUT)
    app = console(Path("run") / "train_log.jsonl", preset=load_preset(tmp_path / "banked.toml"))

    async def ready(pilot) -> None:
        await loaded(pilot, 1000)
        await pilot.pause(0.1)

    assert snap_compare(app, press=keys, terminal_size=SIZE, run_before=ready)
