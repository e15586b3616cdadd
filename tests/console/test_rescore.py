"""The verdict console on a real (tiny) engine run that reads AMBIGUOUS-BY-INSTRUMENT: it
shows the re-score command, `c` runs `python -m fontaine_engine score` in the background (the
console keeps answering keys meanwhile), and the re-scored eval MAE appears beside the run's
own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.engine

from fontaine_tui.core.preset.find import load_preset  # noqa: E402
from fontaine_tui.widgets.score_panel import ScorePanel  # noqa: E402
from fontaine_tui.widgets.verdict_panel import VerdictBanner  # noqa: E402
from tests.console.conftest import SIZE, console, loaded, text, until  # noqa: E402

STEPS = 20  # the shared tiny run's (tests/conftest.py): probes and checkpoints at 10, 20


def evals(run: Path) -> dict[int, dict]:
    lines = (run / "train_log.jsonl").read_text().splitlines()
    return {r["step"]: r for r in map(json.loads, lines) if r["kind"] == "eval"}


def disagreeing_preset(path: Path, own: dict[int, dict]) -> Path:
    """A preset whose raw and scale-adjusted rules disagree on this run's delta(20) from 10:
    bounds placed around the measured delta, and a fixed scale factor that moves them
    across it (declared at the launch, before the anchor)."""
    delta = own[STEPS]["eval_chunk_mae"] - own[10]["eval_chunk_mae"]
    if delta > 0:  # raw: SAME-DRIFT; bounds x3: AMBIGUOUS
        healthy, drift, factor = delta / 4, delta / 2, 3.0
    else:  # raw: AMBIGUOUS; bounds x0.25: HEALTHY
        healthy, drift, factor = 2 * delta, delta / 2, 0.25
    path.write_text(f"""
[run]
name = "tiny_rescore"
output_dir = "unused"
question = "Does the tiny run's probe read alike on both rules?"

[recipe]
model_size = "tiny"
batch_size = 16
backward_chunks = 2
seed = 0
image_augment = 0.8
recompute_stats = true
objective = "joint"
insulate_flow = true
flow_decoder_init = "inherit"
init = ""
lr = 1e-3
warmup_steps = 5
steps = {STEPS}
eval_every = 10
eval_dataset_breakdown = true
save_every = 10
chunk_grad_allreduce = false

[platform]
nproc = 1
device = "cpu"
num_workers = 2
prefetch_factor = 2
data_dir = ""

[verdict]
metric = "eval_chunk_mae"
anchor_step = 10
endpoint_step = {STEPS}
healthy_max = {healthy!r}
drift_min = {drift!r}

[[amendments]]
id = 1
kind = "scale"
factor = {factor!r}
declared_after_step = 0
declared_before_step = 10
text = "the instrument's units moved"
""")
    return path


@pytest.fixture
def rescored_run(tiny_run, tmp_path):
    """A copy of the test run's shared tiny run (the re-score writes into its folder), and
    the preset that reads it AMBIGUOUS-BY-INSTRUMENT."""
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    return run, load_preset(disagreeing_preset(tmp_path / "preset.toml", evals(run)))


async def test_c_rescores_in_the_background_and_shows_the_figures(rescored_run):
    run, preset = rescored_run
    app = console(run / "train_log.jsonl", preset=preset)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, STEPS)
        await pilot.press("v")
        await pilot.pause()
        assert text(app.screen.query_one(VerdictBanner)).startswith("AMBIGUOUS-BY-INSTRUMENT")
        panel = app.screen.query_one(ScorePanel)
        offer = app.view.score_offer
        assert panel.display and offer is not None
        assert offer.output_dir == run / "score-stats-corpus"
        assert offer.command in text(panel).replace("\n", " ")
        assert app.screen.active_bindings["c"].binding.id == "verdict.rescore"  # in the footer

        await pilot.press("c")
        await until(pilot, lambda: app.session.score_state is not None, timeout=10)
        assert app.session.score_state.status == "running"
        await pilot.press("left")  # the UI answers while the engine scores
        await pilot.pause()
        assert app.read_step == 10 and app.session.score_state.status == "running"
        await until(pilot, lambda: app.session.score_state.status != "running", timeout=90)
        assert app.session.score_state.status == "done", app.session.score_state.detail
        await until(pilot, lambda: "re-scored (stats-corpus)" in text(panel), timeout=10)

        shown = text(panel)
        own, again = evals(run), evals(run / "score-stats-corpus")
        assert sorted(again) == [10, STEPS]
        for step in (10, STEPS):
            row = next(ln.split() for ln in shown.splitlines() if ln.split()[:1] == [str(step)])
            mine, rescored = own[step]["eval_chunk_mae"], again[step]["eval_chunk_mae"]
            assert row == [str(step), f"{mine:.4f}", f"{rescored:.4f}", f"{rescored - mine:+.4f}"]
            assert abs(rescored - mine) > 1e-6  # another surface: other numbers
