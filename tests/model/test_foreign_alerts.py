"""A run another trainer wrote (here torch's SummaryWriter) raises only the warnings its own
fields support: no NaN alert from the engine's columns it does not have, no advice about
the engine's files, and no stall once its final read is in."""

from __future__ import annotations

import math

import pytest

from fontaine_tui.core.follow.base import Batch
from fontaine_tui.core.follow.replay import ForeignReplay
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.model.session import Session
from tests.core.log.formats.conftest import foreign_preset
from tests.foreign_writers import T0, write_tb


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three real runs: to the endpoint (80), cut short at 60, and one whose loss is NaN."""
    root = tmp_path_factory.mktemp("tb")
    write_tb(root / "done", 80)
    write_tb(root / "cut", 60)
    write_tb(root / "nan", 30, nan_at=30)
    preset = load_preset(str(foreign_preset(root, 'kind = "tensorboard"')))
    return root, preset


def session_on(folder, preset, kind: str = "attach") -> Session:
    source = ForeignReplay(folder, SourceSpec("tensorboard"))
    session = Session(source, preset, kind, folder=folder)
    session.apply(Batch([], 1, records=tuple(source.records())))
    return session


def rules(session: Session, now: float) -> dict[str, str]:
    session.update_warnings(None, now)
    return {w.rule: w.message for w in session.warnings}


def test_a_foreign_run_has_no_nan_alert_from_the_engines_columns(runs):
    root, preset = runs
    session = session_on(root / "cut", preset)
    assert session.store.last_step == 60
    assert math.isnan(session.store.columns["ar_ce"][-1])  # the engine's column: not there
    assert "nan-loss" not in rules(session, T0 + 61)


def test_a_nan_in_the_loss_the_source_maps_is_an_alert(runs):
    root, preset = runs
    found = rules(session_on(root / "nan", preset), T0 + 31)
    assert found["nan-loss"] == "loss is nan at step 30"


def test_a_stalled_foreign_run_is_not_told_about_the_engines_files(runs):
    root, preset = runs
    found = rules(session_on(root / "cut", preset), T0 + 3600)
    message = found["stall"]
    assert "last step 60" in message
    for engine_thing in (
        "engine.out.log",
        "engine pid",
        "py-spy dump --pid",
        "checkpoint",
        "save_every",
        "fontaine-tui launch",
    ):
        assert engine_thing not in message
    assert "the trainer's own output" in message


def test_a_foreign_run_with_its_final_read_in_is_ended_not_stalled(runs):
    root, preset = runs
    session = session_on(root / "done", preset)
    assert session.latest().read_step == 80 and not session.latest().provisional
    assert "stall" not in rules(session, T0 + 3600)
    assert session.view().status == "attached (ended)"
    replayed = session_on(root / "done", preset, "replay")
    assert replayed.view().status == "replay (ended)"
    cut = session_on(root / "cut", preset)  # its endpoint not reached: not over
    assert cut.view().status == "attached"
