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
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.grouper import FieldMap
from fontaine_tui.core.log.formats.locate import detect
from fontaine_tui.core.log.formats.source import SourceSpec
from tests.core.log.formats.conftest import EVAL, foreign_preset, loss


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
        trainer = L.Trainer(
            max_steps=40,
            val_check_interval=10,
            log_every_n_steps=10,
            logger=[TensorBoardLogger(str(root), name="tb"), CSVLogger(str(root), name="csv")],
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            accelerator="cpu",
            num_sanity_val_steps=0,
        )
        trainer.fit(Tiny(), train, val)
    return root


def _lightning_preset(root, source: str, anchor: int, endpoint: int):
    path = foreign_preset(root, source, metric="val_loss")
    path.write_text(
        path.read_text()
        .replace("anchor_step = 40", f"anchor_step = {anchor}")
        .replace("endpoint_step = 80", f"endpoint_step = {endpoint}")
    )
    return path


@pytest.mark.parametrize(
    "source", ['kind = "csv"\npath = "csv"', 'kind = "tensorboard"\npath = "tb"']
)
@pytest.mark.parametrize(
    ("anchor", "endpoint", "said"),
    [
        (20, 40, "no anchor probe in the log (step 20)"),
        (19, 40, "the endpoint (step 40) is off the run's probe cadence"),
    ],
)
def test_a_rule_step_off_the_probe_steps_names_the_steps_there_are(
    lightning_run, source, anchor, endpoint, said, capsys
):
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
    args = TrainingArguments(
        output_dir=str(out),
        max_steps=40,
        logging_steps=5,
        eval_strategy="steps",
        eval_steps=10,
        save_strategy="no",
        per_device_train_batch_size=8,
        learning_rate=0.05,
        report_to="none",
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    trainer = Trainer(
        model=Tiny(), args=args, train_dataset=data, eval_dataset=data[:16], callbacks=[Rollout()]
    )
    trainer.train()
    trainer.save_state()
    return out


def _hf_presets(tmp_path):
    """The preset that reads the run (its own key an eval key), and one comparing with the
    run banked as `ref`."""
    reader = foreign_preset(
        tmp_path, 'kind = "hf_trainer"\neval = ["eval_*", "rollout_*"]', metric="rollout_success"
    )
    reader.write_text(
        reader.read_text()
        .replace("anchor_step = 40", "anchor_step = 20")
        .replace("endpoint_step = 80", "endpoint_step = 40")
    )
    compare = tmp_path / "compare.toml"
    compare.write_text(reader.read_text() + '\n[comparators.ref]\nbank = "ref"\n')
    return reader, compare


def test_a_trainer_run_banks_the_keys_its_preset_reads(hf_run, tmp_path, bank_path, capsys):
    from fontaine_tui.core.bank import store as bank
    from fontaine_tui.core.preset.find import load_preset

    reader, compare = _hf_presets(tmp_path)
    capsys.readouterr()
    assert (
        main(["bank", "add", str(hf_run), "--as", "ref", "--ended", "--preset", str(reader)]) == 0
    )
    entry = bank.get("ref")
    assert {s: entry.value(s, "rollout_success") for s in entry.probes()} == ROLLOUT
    assert entry.value(40, "eval_loss") > 0  # the Trainer's own eval keys are kept too
    preset = load_preset(str(compare))
    assert preset.comparators["ref"].delta == pytest.approx(ROLLOUT[40] - ROLLOUT[20])
    assert main(["verdict", str(hf_run), "--preset", str(compare)]) in (0, 3, 4)


def test_bank_preset_refuses_a_metric_the_run_does_not_log(hf_run, tmp_path, bank_path, capsys):
    reader, _ = _hf_presets(tmp_path)
    reader.write_text(reader.read_text().replace('"rollout_success"', '"success_rate"'))
    capsys.readouterr()
    assert (
        main(["bank", "add", str(hf_run), "--as", "ref", "--ended", "--preset", str(reader)]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert "verdict.metric: no key 'success_rate' in this run" in err
    assert len(err.splitlines()) == 1
    assert not (bank_path / "ref").exists()


def _scalars_run(writer_cls, folder, steps=range(0, 81, 10), offset=0.0):
    """A run logged with add_scalars (train and eval of one main tag, each in a sub-folder),
    a train loss of its own, and add_hparams at the end."""
    w = writer_cls(str(folder))
    for step in steps:
        w.add_scalar("train/loss", loss(step) + offset, step)
        if step in EVAL or step == 0:
            w.add_scalars(
                "mae",
                {"train": 0.5 * EVAL.get(step, 3.0) + offset, "eval": EVAL.get(step, 3.0) + offset},
                step,
            )
    w.add_hparams({"lr": 0.1, "layers": 2}, {"hparam/final_mae": EVAL[80] + offset})
    w.close()


WRITERS = {
    "torch": ("torch.utils.tensorboard", "mae_eval/mae"),
    "tensorboardX": ("tensorboardX", "mae/eval/mae"),
}


@pytest.fixture(scope="module", params=sorted(WRITERS))
def scalars_run(request, tmp_path_factory):
    pytest.importorskip("tensorboard")
    module = pytest.importorskip(WRITERS[request.param][0])
    folder = tmp_path_factory.mktemp(request.param) / "run"
    _scalars_run(module.SummaryWriter, folder)
    return folder, WRITERS[request.param][1]


def test_add_scalars_and_add_hparams_read_as_one_run(scalars_run, tmp_path, capsys):
    """The sub-folders add_scalars and add_hparams write are one run's, each tag keyed as
    TensorBoard shows it: the run `mae_eval` and the tag `mae` are `mae_eval/mae`
    (tensorboardX nests them: `mae/eval/mae`); add_hparams's metrics keep their tags."""
    folder, metric = scalars_run
    assert detect(folder) == "tensorboard"
    spec = SourceSpec("tensorboard", fields=FieldMap(eval=(metric,)))
    loaded = load_source(folder, spec)
    assert len({p.parent for p in loaded.files}) == 4  # the run's own, 2 add_scalars, hparams
    train_metric = metric.replace("eval", "train")
    assert {"train/loss", metric, train_metric, "hparam/final_mae"} <= set(loaded.keys)
    store = loaded.store
    assert list(store.steps) == list(range(0, 81, 10))
    assert {s: p.fields[metric] for s, p in store.probes.items() if s} == pytest.approx(EVAL)
    assert not store.conflicts and not store.notices
    preset = foreign_preset(tmp_path, f'kind = "tensorboard"\neval = ["{metric}"]', metric=metric)
    capsys.readouterr()
    assert main(["verdict", str(folder), "--preset", str(preset)]) == 4  # AMBIGUOUS


@pytest.fixture(scope="module")
def two_writers(tmp_path_factory):
    """Two torch SummaryWriters logging into one folder at once: two runs."""
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    folder = tmp_path_factory.mktemp("two") / "run"
    a, b = SummaryWriter(str(folder)), SummaryWriter(str(folder))
    for step in range(0, 81, 10):
        for w, shift in ((a, 0.0), (b, 1.0)):
            w.add_scalar("train/loss", loss(step) + shift, step)
            if step in EVAL:
                w.add_scalar("eval/chunk_mae", EVAL[step] + shift, step)
            w.flush()
    a.close()
    b.close()
    return folder


def test_two_writers_at_once_in_one_folder_are_never_merged(two_writers, tmp_path, capsys):
    def started(name: str) -> tuple[int, ...]:  # events.out.tfevents.TIME.HOST.PID.N: N counts
        parts = name.split(".")  # the writers one process made (not 9 < 10)
        return tuple(int(x) for x in (parts[3], parts[-2], parts[-1]) if x.isdigit())

    names = sorted((p.name for p in two_writers.iterdir()), key=started)
    with pytest.raises(InputError, match="two writers logged into this folder at once") as exc:
        load_source(two_writers, SourceSpec("tensorboard"))
    assert all(n in str(exc.value) for n in names) and "[source] run" in str(exc.value)
    preset = foreign_preset(tmp_path, 'kind = "tensorboard"')
    capsys.readouterr()
    assert main(["verdict", str(two_writers), "--preset", str(preset)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and names[0] in err
    # chosen by its name, or the part of it that tells the writers apart
    for k, run in enumerate([names[0], names[1].split(".", 4)[4]]):
        spec = SourceSpec("tensorboard", options={"run": run})
        store = load_source(two_writers, spec).store
        assert {s: p.fields["eval/chunk_mae"] for s, p in store.probes.items()} == pytest.approx(
            {s: v + k for s, v in EVAL.items()}
        )
        assert not store.conflicts
    chosen = foreign_preset(tmp_path, f'kind = "tensorboard"\nrun = "{names[0]}"')
    assert main(["verdict", str(two_writers), "--preset", str(chosen)]) == 4  # AMBIGUOUS
    with pytest.raises(InputError, match="source.run: no event file matches 'nope'"):
        load_source(two_writers, SourceSpec("tensorboard", options={"run": "nope"}))


def _restarted(module, folder, scalars: bool):
    """A run to step 60, then one restarted into its folder from step 30 (a resume from an
    older checkpoint), its values shifted by 1."""
    writer = module.SummaryWriter
    if scalars:
        _scalars_run(writer, folder, range(0, 61, 10))
        _scalars_run(writer, folder, range(30, 81, 10), offset=1.0)
        return
    for steps, offset in ((range(0, 61, 10), 0.0), (range(30, 81, 10), 1.0)):
        w = writer(str(folder))
        for step in steps:
            w.add_scalar("train/loss", loss(step) + offset, step)
            if step in EVAL:
                w.add_scalar("eval/chunk_mae", EVAL[step] + offset, step)
        w.close()


@pytest.mark.parametrize("scalars", [False, True], ids=["one folder", "add_scalars"])
def test_a_restart_into_the_folder_drops_the_older_steps_as_tensorboard_does(scalars, tmp_path):
    """TensorBoard's data server keeps, of each series, only the newer value from the step
    a restart starts at: the older run's steps 30 to 60 are dropped, not in conflict."""
    pytest.importorskip("tensorboard")
    from torch.utils import tensorboard

    folder = tmp_path / "run"
    _restarted(tensorboard, folder, scalars)
    metric = "mae_eval/mae" if scalars else "eval/chunk_mae"
    spec = SourceSpec("tensorboard", fields=FieldMap(eval=(metric,)))
    store = load_source(folder, spec).store
    want = {s: v + (s >= 30) for s, v in EVAL.items()}
    assert {s: p.fields[metric] for s, p in store.probes.items() if s} == pytest.approx(want)
    assert list(store.steps) == list(range(0, 81, 10))
    assert list(store.columns["loss"]) == pytest.approx(
        [loss(s) + (s >= 30) for s in range(0, 81, 10)]
    )
    assert not store.conflicts and not store.out_of_order
    said = " ".join(store.notices + [e.detail for e in store.events])
    assert "restart" in said and "step 30" in said
