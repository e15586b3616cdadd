"""Following a TensorBoard run live in the shapes real writers give it: add_scalars' and
add_hparams' sub-folders (torch's SummaryWriter in a subprocess, flushing each step), and a
run restarted into the folder of an older one. Live reads as the cold read does."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys

import pytest

from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.grouper import FieldMap
from fontaine_tui.core.log.formats.source import SourceSpec
from tests.core.follow.test_foreign import collect

pytest.importorskip("tensorboard")

WRITER = """
import sys, time
from torch.utils.tensorboard import SummaryWriter
folder, first, last, shift = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
w = SummaryWriter(folder)
for step in range(first, last + 1):
    w.add_scalar("train/loss", 1.0 / step + shift, step)
    if step % 10 == 0:
        w.add_scalar("eval/rig", 2.0 + step / 100 + shift, step)
        w.add_scalars("mae", {"train": 1.0 + shift, "eval": 3.0 + step / 100 + shift}, step)
    w.flush()
    time.sleep(0.01)
w.add_hparams({"lr": 0.1}, {"hparam/final": 7.0 + shift})
w.close()
"""

SPEC = SourceSpec("tensorboard", fields=FieldMap(eval=("mae_eval/*", "eval/*")))


def _write(folder, first: int, last: int, shift: float = 0.0) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(folder), str(first), str(last), str(shift)]
    )


def _fields(store):
    return {s: dict(p.fields) for s, p in store.probes.items()}


async def test_follow_add_scalars_sub_folders_as_one_run(tmp_path):
    folder = tmp_path / "tb"
    writer = _write(folder, 1, 60)
    try:
        live = await collect(
            ForeignRun(folder, SPEC, poll_s=0.05),
            lambda st: (
                len(st.steps) >= 60
                and len(st.probes) >= 6
                and all(len(p.fields) == 2 for p in st.probes.values())
            ),
            timeout=30,
        )
    finally:
        assert writer.wait(timeout=60) == 0
    cold = load_source(folder, SPEC).store
    assert _fields(live) == _fields(cold)
    assert {s: p["mae_eval/mae"] for s, p in _fields(live).items()} == pytest.approx(
        {s: 3.0 + s / 100 for s in range(10, 61, 10)}
    )
    assert list(live.steps) == list(range(1, 61))
    assert not live.conflicts and live.out_of_order_count == 0


async def test_follow_a_run_restarted_into_its_folder(tmp_path):
    """The older run's steps from the restart's first step on are dropped, as TensorBoard
    drops them; the newer values read, not in conflict with the older."""
    folder = tmp_path / "tb"
    assert _write(folder, 1, 50).wait(timeout=60) == 0
    run = ForeignRun(folder, SPEC, poll_s=0.05)
    writer = _write(folder, 31, 60, shift=1.0)
    try:
        live = await collect(
            run,
            lambda st: len(st.steps) >= 60 and 60 in st.probes and len(st.probes[60].fields) == 2,
            timeout=30,
        )
    finally:
        assert writer.wait(timeout=60) == 0
    cold = load_source(folder, SPEC).store
    want = {s: 3.0 + s / 100 + (s > 30) for s in range(10, 61, 10)}
    assert {s: p["mae_eval/mae"] for s, p in _fields(live).items()} == pytest.approx(want)
    assert _fields(live) == _fields(cold)
    assert list(live.steps) == list(range(1, 61))
    assert list(live.columns["loss"]) == pytest.approx([1.0 / s + (s > 30) for s in range(1, 61)])
    assert not live.conflicts


TWO = """
import sys, time
from torch.utils.tensorboard import SummaryWriter
a, b = SummaryWriter(sys.argv[1]), SummaryWriter(sys.argv[1])
for step in range(1, 200):
    for w, shift in ((a, 0.0), (b, 1.0)):
        w.add_scalar("train/loss", 1.0 / step + shift, step)
        w.flush()
    time.sleep(0.02)
a.close()
b.close()
"""


async def test_two_writers_at_once_are_said_and_not_merged(tmp_path):
    folder = tmp_path / "tb"
    writer = subprocess.Popen([sys.executable, "-c", TWO, str(folder)])
    run = ForeignRun(folder, SPEC, poll_s=0.05)
    notes: list[str] = []

    async def go():
        async for batch in run.follow():
            notes.append(batch.note)
            if "two writers" in batch.note:
                return

    try:
        await asyncio.wait_for(go(), 30)
    finally:
        await run.close()
        writer.kill()
        writer.wait(timeout=60)
    said = notes[-1]  # seen live, or in the files already there when the follow began
    assert re.search("two writers log(ged)? into this folder at once", said), said
    assert "[source] run" in said and run.refused == said
