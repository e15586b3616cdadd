"""A run's config read from files the real libraries wrote (tests/writers/configs.py): each
value equal to what was logged, a secret-named param masked, an over-bound or hostile file
refused in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core import limits
from fontaine_tui.core.log.formats.config import hf_trainer, lightning, ours
from fontaine_tui.core.log.formats.registry import find
from fontaine_tui.core.log.formats.spec import SourceSpec
from fontaine_tui.core.secrets import MASK
from tests.writers.configs import CONFIG, TOKEN

ROOT = Path(__file__).resolve().parents[4]
LOGGED = {k: str(v) for k, v in CONFIG.items() if k != "hub_token"}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("configs")
    kinds = ["lightning", "mlflow_store", "wandb_run", "trackio_run"]
    subprocess.run(
        [sys.executable, "-m", "tests.writers.configs", str(out), *kinds],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=240,
    )
    return out


def read(kind: str, folder: Path, **options: str) -> dict[str, str]:
    fmt = find(kind)
    assert fmt is not None and fmt.config is not None
    got = fmt.config(folder, SourceSpec(kind, options=options))
    assert got.source and not got.note, got
    rows = dict(got.rows)
    assert len(rows) == len(got.rows)
    return rows


def logged_and_masked(rows: dict[str, str]) -> None:
    assert {k: rows[k] for k in LOGGED} == LOGGED
    assert rows["hub_token"] == MASK
    assert all(TOKEN not in v for v in rows.values())


def test_lightning_hparams_yaml(written: Path) -> None:
    rows = read("csv", written / "lightning" / "csv" / "version_0")
    logged_and_masked(rows)
    assert rows["model.layers"] == "4" and rows["model.dims"] == "[64, 32]"


def test_mlflow_file_store_params_and_tags(written: Path) -> None:
    rows = read("mlflow", written / "mlflow_store")
    logged_and_masked(rows)
    assert rows["tags.team"] == "vision"
    assert rows["tags.mlflow.runName"] == "configured"


def test_wandb_offline_config_records(written: Path) -> None:
    rows = read("wandb", written / "wandb_run")
    logged_and_masked(rows)
    assert rows["warmup"] == "20"  # the config.update after init
    assert not any(k.startswith("_wandb") for k in rows)


def test_trackio_configs_table(written: Path) -> None:
    rows = read("trackio", written / "trackio_run", run="configured")
    logged_and_masked(rows)


def test_our_prereg_json() -> None:
    demo = ROOT / "fontaine_tui" / "demo" / "run"
    got = ours(demo, SourceSpec("fontaine"))
    rows = dict(got.rows)
    assert got.source.endswith("prereg.json") and not got.note
    assert rows["argv"].split()[1:4] == ["-m", "engine", "train"]
    assert rows["preset_name"] == "demo_1proc_cpu"


def test_hf_trainer_args_pickle_is_never_read(tmp_path: Path) -> None:
    (tmp_path / "trainer_state.json").write_text(
        '{"global_step": 4, "train_batch_size": 8, "log_history": [{"loss": 1.0, "step": 4}]}'
    )
    (tmp_path / "training_args.bin").write_bytes(b"\x80\x04not to be unpickled")
    got = hf_trainer(tmp_path, SourceSpec("hf_trainer"))
    assert dict(got.rows) == {"global_step": "4", "train_batch_size": "8"}
    assert "training_args.bin not read: a pickle" in got.note


def hparams(tmp_path: Path, text: str | bytes) -> Path:
    run = tmp_path / "version_0"
    run.mkdir()
    (run / "metrics.csv").write_text("step,train_loss\n0,1.0\n")
    data = text.encode() if isinstance(text, str) else text
    (run / "hparams.yaml").write_bytes(data)
    return run


@pytest.mark.parametrize(
    "text, said",
    [
        (b"lr: 0.1\n" + b"# pad\n" * (limits.CONFIG_BYTES // 6), "bytes"),
        ("a: " + "{b: " * 40 + "1" + "}" * 40 + "\n", "nested too deep"),
        ("a: &x [1, 2]\nb: [*x, *x, *x]\n", "YAML alias"),
        ("a: [1, 2\n", "not YAML"),
        ("- 1\n- 2\n", "expected a mapping"),
    ],
    ids=["over the size bound", "too deep", "alias", "broken", "a list"],
)
def test_a_hostile_hparams_yaml_is_refused_in_one_line(
    tmp_path: Path, text: str | bytes, said: str
) -> None:
    got = lightning(hparams(tmp_path, text), SourceSpec("csv"))
    assert got.rows == () and said in got.note and "\n" not in got.note, got.note
    assert "hparams.yaml" in got.note


def test_a_python_tag_is_read_as_its_value_never_constructed(tmp_path: Path) -> None:
    text = "size: !!python/tuple [3, 4]\nns: !!python/object:os.system {x: 1}\n"
    got = lightning(hparams(tmp_path, text), SourceSpec("csv"))
    assert dict(got.rows) == {"size": "[3, 4]", "ns.x": "1"}
