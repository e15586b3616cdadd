"""One Lightning run logged by two loggers at once: CSVLogger into OUT/csv, TensorBoardLogger
into OUT/tb (Lightning's import is slow, so one run serves both). The train loss at each
step, the validation loss every EVERY steps."""

from __future__ import annotations

import warnings

import lightning as L
import torch
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from tests.writers.common import EVERY, STEPS, eval_loss, out_folder, pause, ready, train_loss

warnings.filterwarnings("ignore")  # no GPU, few workers, small batches: said on stderr


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        loss = self.lin(batch).pow(2).mean()
        self.log("train_loss", train_loss(self.global_step + 1))
        pause()
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", eval_loss(self.global_step))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


out = out_folder()
data = torch.utils.data.DataLoader(torch.zeros(STEPS, 2), batch_size=1)
trainer = L.Trainer(
    max_steps=STEPS,
    val_check_interval=EVERY,
    limit_val_batches=1,
    num_sanity_val_steps=0,
    log_every_n_steps=1,
    accelerator="cpu",
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    logger=[
        CSVLogger(out / "csv", name="", version="", flush_logs_every_n_steps=1),
        TensorBoardLogger(out / "tb", name="", version=""),
    ],
)
ready(out)
trainer.fit(Tiny(), data, data)
