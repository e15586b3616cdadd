"""`bank add` of a Hugging Face Trainer's output folder, and a `hf_trainer` preset against it.

A real Trainer run (a tiny linear model on CPU, `report_to="tensorboard"`) leaves both its own
record (checkpoint-N/trainer_state.json: `eval_loss`) and TensorBoard events of the same
numbers under other keys (runs/*/events.out.tfevents.*: `eval/loss`). `bank add` of the
folder banks the Trainer's own record, so an `hf_trainer` preset's comparator finds its
`eval_loss`; a run banked from the events alone is named, when such a preset reads it, with
the keys it has and the command that banks it as the preset reads it. Real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PRESET = """[run]
name = "hf"
question = "Does the eval loss rise after step 20?"

[source]
kind = "hf_trainer"

[verdict]
metric = "eval_loss"
anchor_step = 20
endpoint_step = 40
healthy_max = 0.3
drift_min = 1.0

[comparators.ref]
bank = "{name}"
"""


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "FONTAINE_BANK": str(cwd / "bank")},
    )


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The output folder of a real Trainer run that reports to TensorBoard."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("accelerate")
    pytest.importorskip("tensorboard")
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
    out = tmp_path_factory.mktemp("hf") / "out"
    args = TrainingArguments(
        output_dir=str(out),
        max_steps=40,
        logging_steps=5,
        eval_strategy="steps",
        eval_steps=10,
        save_steps=20,
        per_device_train_batch_size=8,
        learning_rate=0.05,
        report_to="tensorboard",
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    Trainer(model=Tiny(), args=args, train_dataset=data, eval_dataset=data[:16]).train()
    assert (out / "checkpoint-40" / "trainer_state.json").is_file()
    assert list(out.glob("runs/*/events.out.tfevents.*"))  # the TensorBoard record beside it
    return out


def _evals(run: Path) -> dict[int, float]:
    state = json.loads((run / "checkpoint-40" / "trainer_state.json").read_text())
    return {e["step"]: e["eval_loss"] for e in state["log_history"] if "eval_loss" in e}


def test_bank_add_prefers_the_trainers_own_record_to_its_tensorboard_events(hf_run, tmp_path):
    res = cli(tmp_path, "bank", "add", str(hf_run), "--as", "ref", "--ended")
    assert res.returncode == 0, res.stderr
    assert "trainer_state.json (hf_trainer)" in res.stdout, res.stdout
    assert "--kind tensorboard" in res.stderr  # the other record here, and how to bank it
    doc = json.loads(cli(tmp_path, "bank", "show", "ref", "-j").stdout)
    assert doc["format"] == "hf_trainer"
    evals = _evals(hf_run)
    assert {p["step"]: p["fields"]["eval_loss"] for p in doc["probes"]} == evals
    (tmp_path / "hf.toml").write_text(PRESET.format(name="ref"))
    verdict = cli(tmp_path, "verdict", str(hf_run), "--preset", "hf.toml", "--json")
    assert verdict.returncode in (0, 3, 4), verdict.stderr
    [ref] = json.loads(verdict.stdout)["comparators"]
    assert ref["delta"] == pytest.approx(evals[40] - evals[20])


def test_a_run_banked_from_its_events_is_named_with_its_keys_and_how_to_bank_it(hf_run, tmp_path):
    [events] = hf_run.glob("runs/*")
    res = cli(tmp_path, "bank", "add", str(events), "--as", "tb", "--ended")
    assert res.returncode == 0, res.stderr
    (tmp_path / "hf.toml").write_text(PRESET.format(name="tb"))
    refused = cli(tmp_path, "verdict", str(hf_run), "--preset", "hf.toml")
    assert refused.returncode == 2 and refused.stdout == ""
    [line] = refused.stderr.strip().splitlines()
    assert "comparators.ref.bank: the banked run tb has no eval_loss in any probe" in line
    assert (
        "its probes hold eval/loss, eval/runtime" in line
        and "(banked from " in line
        and "tfevents" in line
    )
    hint = "fontaine-tui bank add RUN --as tb --replace --ended --kind hf_trainer"
    assert hint in line, line
    # the command it names, run on the Trainer's folder, banks what the preset reads
    words = [str(hf_run) if w == "RUN" else w for w in hint.split()[1:]]
    again = cli(tmp_path, *words)
    assert again.returncode == 0, again.stderr
    verdict = cli(tmp_path, "verdict", str(hf_run), "--preset", "hf.toml", "--json")
    assert verdict.returncode in (0, 3, 4), verdict.stderr


def test_bank_add_kind_reads_the_folder_as_that_kind_and_refuses_a_wrong_one(hf_run, tmp_path):
    tb = cli(tmp_path, "bank", "add", str(hf_run), "--as", "tb", "--ended", "--kind", "tensorboard")
    assert tb.returncode == 0, tb.stderr
    doc = json.loads(cli(tmp_path, "bank", "show", "tb", "-j").stdout)
    assert doc["format"] == "tensorboard" and "eval/loss" in doc["probes"][0]["fields"]
    bad = cli(tmp_path, "bank", "add", str(hf_run), "--as", "x", "--ended", "--kind", "nope")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "--kind: expected one of" in bad.stderr
