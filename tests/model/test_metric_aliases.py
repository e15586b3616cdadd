"""A key another trainer logs that is also a train column under the tool's own name (HF
Trainer's `learning_rate`, the `lr` column) is listed once, under the name it was logged as;
the column is still there by its own name."""

from __future__ import annotations

import pytest

from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.model.metrics import MetricIndex
from fontaine_tui.model.series import Steps, get


def test_an_hf_trainer_learning_rate_is_listed_once(tmp_path):
    pytest.importorskip("transformers")
    from transformers import TrainerState

    history: list[dict[str, float]] = []
    for step in range(5, 81, 5):
        history.append({"loss": 1.0 / step, "learning_rate": 1e-3 * (1 - step / 100), "step": step})
        if step % 20 == 0:
            history.append({"eval_loss": 0.5, "step": step})
    TrainerState(log_history=history).save_to_json(str(tmp_path / "trainer_state.json"))
    index = MetricIndex(load_source(tmp_path, SourceSpec("hf_trainer")).store, hidden=False)
    names = index.names()
    assert "learning_rate" in names and "lr" not in names, names
    assert names.count("loss") == 1, names
    rates = [e["learning_rate"] for e in history if "learning_rate" in e]
    assert list(index.series("learning_rate").values) == pytest.approx(rates)
    assert list(index.series("lr").values) == pytest.approx(rates)  # by its own name still
    got = get(tmp_path, "lr", Steps(), lambda: False, kind="hf_trainer")  # `get lr` still
    assert list(got.values) == pytest.approx(rates)
