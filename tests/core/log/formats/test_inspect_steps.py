"""`inspect` of a Hugging Face Trainer run that reports to W&B (`report_to="wandb"`, offline).

W&B numbers its history rows itself (`_step`: one a log call, the train and eval logs of one
step two rows), and the Trainer logs its own step beside them as `train/global_step`. `inspect`
reads the Trainer's step, says so, and drafts its preset on it: the preset's anchor and endpoint
are the Trainer's steps, and `verdict` reads it to a label. The run is written by the real
Trainer and the real wandb, in a subprocess; the commands are real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TRAINER = r"""
import sys
import torch
from transformers import Trainer, TrainingArguments

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def forward(self, x, labels=None):
        out = self.lin(x).squeeze(-1)
        return {"loss": torch.nn.functional.mse_loss(out, labels), "logits": out}

g = torch.Generator().manual_seed(0)
xs = torch.randn(64, 4, generator=g)
data = [{"x": x, "labels": x.sum()} for x in xs]
args = TrainingArguments(
    output_dir=sys.argv[1] + "/out", max_steps=40, logging_steps=5, eval_strategy="steps",
    eval_steps=10, save_strategy="no", per_device_train_batch_size=8, learning_rate=0.05,
    report_to="wandb", use_cpu=True, seed=0, disable_tqdm=True,
)
Trainer(model=Tiny(), args=args, train_dataset=data, eval_dataset=data[:16]).train()
"""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def hf_wandb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of a real Trainer run (40 steps, logged every 5, evaluated every 10)."""
    for module in ("torch", "accelerate", "transformers", "wandb"):
        pytest.importorskip(module)
    root = tmp_path_factory.mktemp("hfwandb")
    run = root / "run"
    env = {
        **os.environ,
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(run),
        "WANDB_PROJECT": "hf",
        "WANDB_SILENT": "true",
        "WANDB_CONFIG_DIR": str(root / "wandb-config"),
        "WANDB_CACHE_DIR": str(root / "wandb-cache"),
        "WANDB_DATA_DIR": str(root / "wandb-data"),
    }
    run.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", TRAINER, str(run)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(run.glob("wandb/offline-run-*/run-*.wandb"))
    return run


def test_inspect_reads_the_trainers_step_not_the_row_counter(hf_wandb):
    text = cli("inspect", str(hf_wandb))
    assert text.returncode == 0, text.stderr
    said = [line for line in text.stdout.splitlines() if line.startswith("step ")]
    assert said == [
        "step     'train/global_step', the trainer's own step (5 to 40), not W&B's row "
        "counter '_step' (0 to 12): [source] step = 'train/global_step'"
    ]
    assert "probes   every 10 steps from 10 to 40" in text.stdout
    doc = json.loads(cli("inspect", str(hf_wandb), "--json").stdout)
    assert doc["step_key"] == "train/global_step" and doc["last_step"] == 40
    loss = next(k for k in doc["keys"] if k["key"] == "eval/loss")
    assert (loss["first"], loss["last"], loss["count"]) == (10, 40, 4)
    assert "train/global_step" not in {k["key"] for k in doc["keys"]}  # the step, not a key


def test_the_drafted_preset_reads_the_trainers_steps_to_a_label(hf_wandb, tmp_path):
    preset = tmp_path / "hf.toml"
    wrote = cli("inspect", str(hf_wandb), "--preset-out", str(preset))
    assert wrote.returncode == 0, wrote.stderr
    text = preset.read_text()
    assert 'step = "train/global_step"' in text
    assert "anchor_step = 10 " in text and "endpoint_step = 40 " in text
    preset.write_text(
        text.replace('healthy_max = "COMPLETE: a number"', "healthy_max = -0.01").replace(
            'drift_min = "COMPLETE: a number"', "drift_min = 1.0"
        )
    )
    read = cli("verdict", str(hf_wandb), "--preset", str(preset))
    assert "read at step 40 (anchor 10, endpoint 40)" in read.stdout, read.stdout + read.stderr
    assert "VERDICT: HEALTHY" in read.stdout and "UNDECIDABLE" not in read.stdout
