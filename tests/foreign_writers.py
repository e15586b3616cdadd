"""Foreign runs written by the real libraries, for the tests.

The tests check what the console, the alerts and `runs` make of them.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.core.log.formats.conftest import EVAL, loss

T0 = 1_787_000_000.0  # the runs' step N is written at T0 + N


def write_tb(folder: Path, last: int, nan_at: int | None = None, t0: float = T0) -> Path:
    """Write a TensorBoard run with torch's SummaryWriter, up to step `last`.

    It logs train/loss each step (NaN at `nan_at`) and eval/chunk_mae at the EVAL steps.
    Step N's wall time is t0 + N.
    """
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(folder))
    for step in range(1, last + 1):
        value = math.nan if step == nan_at else loss(step)
        w.add_scalar("train/loss", value, step, walltime=t0 + step)
        if step in EVAL:
            w.add_scalar("eval/chunk_mae", EVAL[step], step, walltime=t0 + step)
    w.close()
    return folder
