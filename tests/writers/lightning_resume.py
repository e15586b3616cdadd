"""A Lightning run that CSVLogger logs into OUT/csv/metrics.csv, to STEPS optimizer steps,
checkpointing every EVERY steps (OUT/ckpt, `last.ckpt` too); with `--resume` it resumes from
OUT/ckpt/last.ckpt (`ckpt_path`), as a stopped run is resumed. The CSVLogger of the resumed
run, given the same version, deletes the first attempt's metrics.csv as it starts (Lightning
2.x: "Experiment logs directory ... exists and is not empty. Previous log files in this
directory will be deleted when the new ones are saved!"). The train loss at each step and
the validation loss every EVERY steps are functions of the step alone (common.py), so a run
resumed reads the same as one trained straight through."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger

from tests.writers.common import EVERY, STEPS, eval_loss, train_loss

warnings.filterwarnings("ignore", category=UserWarning, module="lightning.pytorch.trainer")


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        self.log("train_loss", train_loss(self.global_step + 1))
        return self.lin(batch).pow(2).mean()

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", eval_loss(self.global_step))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("--steps", type=int, default=STEPS)
    p.add_argument("--resume", action="store_true")
    args = p.parse_args()
    out: Path = args.out
    data = torch.utils.data.DataLoader(torch.zeros(STEPS, 2), batch_size=1)
    trainer = L.Trainer(
        max_steps=args.steps,
        val_check_interval=EVERY,
        limit_val_batches=1,
        num_sanity_val_steps=0,
        log_every_n_steps=1,
        accelerator="cpu",
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[
            ModelCheckpoint(
                dirpath=out / "ckpt", every_n_train_steps=EVERY, save_last=True, save_top_k=-1
            )
        ],
        logger=CSVLogger(out / "csv", name="", version="", flush_logs_every_n_steps=1),
    )
    ckpt = str(out / "ckpt" / "last.ckpt") if args.resume else None
    trainer.fit(Tiny(), data, data, ckpt_path=ckpt)


if __name__ == "__main__":
    main()
