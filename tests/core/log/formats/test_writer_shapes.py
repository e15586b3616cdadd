"""The shapes real writers give a run, read as one run: a Lightning run (its TensorBoard and
CSV loggers, probing at global_step - 1), torch's and tensorboardX's `add_scalars` and
`add_hparams` (sub-folders of the run's folder), several writers in one folder, a run
restarted into the folder of an older one. Each writer runs once per module."""

from __future__ import annotations

import json
import logging
import warnings

import pytest

from fontaine_tui.cli import main
from tests.core.log.formats.conftest import foreign_preset


@pytest.fixture(scope="module")
def lightning_run(tmp_path_factory):
    """A real Lightning fit: 40 steps, validation every 10 batches, both loggers."""
    torch = pytest.importorskip("torch")
    L = pytest.importorskip("lightning")
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 1)

        def _loss(self, batch):
            x, y = batch
            return torch.nn.functional.mse_loss(self.lin(x).squeeze(-1), y)

        def training_step(self, batch, i):
            loss = self._loss(batch)
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, i):
            self.log("val_loss", self._loss(batch))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    g = torch.Generator().manual_seed(0)
    xs = torch.randn(400, 4, generator=g)
    data = torch.utils.data.TensorDataset(xs, xs.sum(1))
    train = torch.utils.data.DataLoader(data, batch_size=8)
    val = torch.utils.data.DataLoader(torch.utils.data.Subset(data, range(16)), batch_size=8)
    root = tmp_path_factory.mktemp("lit")
    logging.getLogger("lightning").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = L.Trainer(max_steps=40, val_check_interval=10, log_every_n_steps=10,
                            logger=[TensorBoardLogger(str(root), name="tb"),
                                    CSVLogger(str(root), name="csv")],
                            enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False, accelerator="cpu",
                            num_sanity_val_steps=0)
        trainer.fit(Tiny(), train, val)
    return root


def _lightning_preset(root, source: str, anchor: int, endpoint: int):
    path = foreign_preset(root, source, metric="val_loss")
    path.write_text(path.read_text().replace("anchor_step = 40", f"anchor_step = {anchor}")
                    .replace("endpoint_step = 80", f"endpoint_step = {endpoint}"))
    return path


@pytest.mark.parametrize("source", ['kind = "csv"\npath = "csv"',
                                    'kind = "tensorboard"\npath = "tb"'])
@pytest.mark.parametrize(("anchor", "endpoint", "said"), [
    (20, 40, "no anchor probe in the log (step 20)"),
    (19, 40, "the endpoint (step 40) is off the run's probe cadence")])
def test_a_rule_step_off_the_probe_steps_names_the_steps_there_are(
        lightning_run, source, anchor, endpoint, said, capsys):
    """Lightning logs its probes at global_step - 1 (9, 19, ...): a preset that says 20 or
    40 reads UNDECIDABLE (an anchor not in the log) or PROVISIONAL (an endpoint not reached),
    and says where the run's probes are."""
    preset = _lightning_preset(lightning_run, source, anchor, endpoint)
    capsys.readouterr()
    main(["verdict", str(lightning_run), "--preset", str(preset), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["label"] == "UNDECIDABLE" or doc["provisional"]
    assert f"{said}; the run's probes are at 9, 19, 29, 39" in doc["reason"], doc["reason"]


ROLLOUT = {10: 0.2, 20: 0.4, 30: 0.5, 40: 0.45}  # what a callback logs at each evaluation


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory):
    """A real transformers.Trainer run whose callback logs a key of its own at each
    evaluation (`rollout_success`): an eval key by the preset's [source], not by default."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("accelerate")
    from transformers import Trainer, TrainerCallback, TrainingArguments

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 1)

        def forward(self, x, labels=None):
            out = self.lin(x).squeeze(-1)
            return {"loss": torch.nn.functional.mse_loss(out, labels), "logits": out}

    class Rollout(TrainerCallback):
        def on_evaluate(self, args, state, control, **kw):
            trainer.log({"rollout_success": ROLLOUT[state.global_step]})

    g = torch.Generator().manual_seed(0)
    xs = torch.randn(64, 4, generator=g)
    data = [{"x": x, "labels": x.sum()} for x in xs]
    out = tmp_path_factory.mktemp("hf") / "run"
    args = TrainingArguments(output_dir=str(out), max_steps=40, logging_steps=5,
                             eval_strategy="steps", eval_steps=10, save_strategy="no",
                             per_device_train_batch_size=8, learning_rate=0.05,
                             report_to="none", use_cpu=True, seed=0, disable_tqdm=True)
    trainer = Trainer(model=Tiny(), args=args, train_dataset=data, eval_dataset=data[:16],
                      callbacks=[Rollout()])
    trainer.train()
    trainer.save_state()
    return out


def _hf_presets(tmp_path):
    """The preset that reads the run (its own key an eval key), and one comparing with the
    run banked as `ref`."""
    reader = foreign_preset(tmp_path, 'kind = "hf_trainer"\neval = ["eval_*", "rollout_*"]',
                            metric="rollout_success")
    reader.write_text(reader.read_text().replace("anchor_step = 40", "anchor_step = 20")
                      .replace("endpoint_step = 80", "endpoint_step = 40"))
    compare = tmp_path / "compare.toml"
    compare.write_text(reader.read_text() + '\n[comparators.ref]\nbank = "ref"\n')
    return reader, compare


def test_a_trainer_run_banks_the_keys_its_preset_reads(hf_run, tmp_path, bank_path, capsys):
    from fontaine_tui.core.bank import store as bank
    from fontaine_tui.core.verdict.presets import load_preset

    reader, compare = _hf_presets(tmp_path)
    capsys.readouterr()
    assert main(["bank", str(hf_run), "--as", "ref", "--ended", "--preset", str(reader)]) == 0
    entry = bank.get("ref")
    assert {s: entry.value(s, "rollout_success") for s in entry.probes()} == ROLLOUT
    assert entry.value(40, "eval_loss") > 0  # the Trainer's own eval keys are kept too
    preset = load_preset(str(compare))
    assert preset.comparators["ref"].delta == pytest.approx(ROLLOUT[40] - ROLLOUT[20])
    assert main(["verdict", str(hf_run), "--preset", str(compare)]) in (0, 3, 4)


def test_bank_preset_refuses_a_metric_the_run_does_not_log(hf_run, tmp_path, bank_path,
                                                             capsys):
    reader, _ = _hf_presets(tmp_path)
    reader.write_text(reader.read_text().replace('"rollout_success"', '"success_rate"'))
    capsys.readouterr()
    assert main(["bank", str(hf_run), "--as", "ref", "--ended", "--preset", str(reader)]) == 2
    err = capsys.readouterr().err.strip()
    assert "verdict.metric: no key 'success_rate' in this run" in err
    assert len(err.splitlines()) == 1
    assert not (bank_path / "ref").exists()
