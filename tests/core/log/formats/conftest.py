"""Foreign runs written by the real libraries (SummaryWriter, transformers.Trainer, MLflow,
Lightning), and a preset that reads them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

# the eval curve every writer here logs: falls to the anchor (step 40), then rises
EVAL = {s: 3.0 - 0.01 * s if s <= 40 else 2.6 + 0.02 * (s - 40) for s in range(10, 81, 10)}


def loss(step: int) -> float:
    return 2.0 * math.exp(-step / 30) + 0.1


def foreign_preset(
    tmp_path: Path,
    source: str,
    metric: str = "eval/chunk_mae",
    healthy: float = 0.3,
    drift: float = 1.0,
) -> Path:
    """A preset for a run trained elsewhere: [source], no recipe, anchor 40, endpoint 80."""
    path = tmp_path / "foreign.toml"
    path.write_text(f'''[run]
name = "foreign"
question = "Does the eval error rise after step 40?"

[source]
{source}

[verdict]
metric = "{metric}"
anchor_step = 40
endpoint_step = 80
healthy_max = {healthy}
drift_min = {drift}
''')
    return path


@pytest.fixture
def tb_run(tmp_path):
    """A run folder written by torch's SummaryWriter: train loss in the classic style
    (simple_value), eval in the tensor style (new_style=True), with a text and a histogram
    summary the reader must skip."""
    np = pytest.importorskip("numpy")
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    folder = tmp_path / "tbrun"
    w = SummaryWriter(str(folder))
    for step in range(1, 81):
        w.add_scalar("train/loss", loss(step), step)
        if step in EVAL:
            w.add_scalar("eval/chunk_mae", EVAL[step], step, new_style=True)
            w.add_scalar("eval/rig", EVAL[step] * 1.1, step, new_style=True, double_precision=True)
    w.add_text("notes", "not a scalar", 5)
    w.add_histogram("weights", np.arange(10.0), 5)
    w.close()
    return folder
