"""An MLflow file store holds one file per metric, each in its own logging order: a metric
read after another that went further is no step going back. A step that does go back within
one metric's file (a resume logging again from an earlier step) is said, once, however often
the store is read again."""

from __future__ import annotations

from pathlib import Path

import pytest

from fontaine_tui.core.log.formats.base import decoder_notices
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.grouper import FieldMap
from fontaine_tui.core.log.formats.mlflow import MlflowDecoder, run_rows
from fontaine_tui.core.log.formats.source import SourceSpec
from tests.core.log.formats.conftest import EVAL, loss


def _log(uri: str, steps: range, run_id: str | None = None) -> str:
    """Log `steps` into a new run, or into `run_id` again (a resume); its run id."""
    mlflow = pytest.importorskip("mlflow")
    mlflow.set_tracking_uri(uri)
    with mlflow.start_run(run_id=run_id) as run:
        for step in steps:
            mlflow.log_metric("train/loss", loss(step), step=step)
            mlflow.log_metric("train/lr", 1e-3, step=step)
            if step in EVAL:
                mlflow.log_metric("eval/chunk_mae", EVAL[step], step=step)
        return str(run.info.run_id)


@pytest.fixture
def uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.chdir(tmp_path)
    return (tmp_path / "ml" / "mlruns").as_uri()


def _back(notices: list[str]) -> list[str]:
    return [n for n in notices if "going back in steps" in n]


def test_interleaved_metrics_of_a_normal_run_are_no_step_going_back(tmp_path, uri):
    _log(uri, range(1, 81))
    loaded = load_source(tmp_path / "ml", SourceSpec("mlflow"))
    assert list(loaded.store.steps) == list(range(1, 81))
    assert _back(loaded.store.notices) == [], loaded.store.notices


def test_a_step_going_back_in_one_metric_is_said_once_across_reads(tmp_path, uri):
    run_id = _log(uri, range(1, 41))
    _log(
        uri, range(31, 51), run_id
    )  # a resume from step 30: 31 to 39 go back in both train metrics
    store = tmp_path / "ml" / "mlruns"
    dec = MlflowDecoder(FieldMap())
    dec.feed_rows(run_rows(store, {})[1])
    first = _back(decoder_notices(dec, "mlflow"))
    assert len(first) == 1 and first[0].startswith("18 entries going back"), first
    _log(uri, range(51, 61), run_id)  # more steps, none going back: nothing new to say
    dec.feed_rows(run_rows(store, {})[1])
    assert _back(decoder_notices(dec, "mlflow")) == first
