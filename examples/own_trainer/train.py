"""A small, real Hugging Face Trainer run: the own_trainer_hf preset launches it.

A 2-layer GPT-2 (n_embd 32) built from a config, trained on a synthetic token corpus made
here (a noisy counting sequence, so the eval loss falls), evaluated and checkpointed every
--eval-every steps. Nothing is downloaded. About 20 s on a CPU.

    python examples/own_trainer/train.py --output_dir runs/own --max_steps 200
    python examples/own_trainer/train.py --output_dir runs/own --resume_from_checkpoint true
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from transformers import (  # noqa: E402
    GPT2Config,
    GPT2LMHeadModel,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)

VOCAB, LENGTH = 64, 32


class Tokens(torch.utils.data.Dataset):
    """Sequences that count up from a random start (mod VOCAB), one token in eight noise."""

    def __init__(self, size: int, seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        start = torch.randint(0, VOCAB, (size, 1), generator=gen)
        seq = (start + torch.arange(LENGTH)) % VOCAB
        noise = torch.randint(0, VOCAB, seq.shape, generator=gen)
        keep = torch.rand(seq.shape, generator=gen) > 0.125
        self.ids = torch.where(keep, seq, noise)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class Pause(TrainerCallback):
    """Wait after each step, so a short run lasts long enough to watch or stop."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003
        time.sleep(self.seconds)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--output_dir", required=True)
    p.add_argument("--max_steps", type=int, default=200)
    p.add_argument("--eval_every", type=int, default=50)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--pause",
        type=float,
        default=0.0,
        help="seconds to wait after each step (a slower run, to watch or stop)",
    )
    p.add_argument(
        "--resume_from_checkpoint",
        default=None,
        help='"true" (the newest checkpoint in --output_dir) or a checkpoint folder',
    )
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    config = GPT2Config(
        vocab_size=VOCAB,
        n_positions=LENGTH,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = GPT2LMHeadModel(config)
    training = TrainingArguments(
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        learning_rate=args.lr,
        per_device_train_batch_size=16,
        per_device_eval_batch_size=64,
        eval_strategy="steps",
        eval_steps=args.eval_every,
        save_strategy="steps",
        save_steps=args.eval_every,
        logging_steps=10,
        save_total_limit=2,
        seed=args.seed,
        report_to="none",
        use_cpu=True,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    trainer = Trainer(
        model=model,
        args=training,
        train_dataset=Tokens(2048, args.seed),
        eval_dataset=Tokens(128, args.seed + 1),
        callbacks=[Pause(args.pause)] if args.pause > 0 else None,
    )
    resume = args.resume_from_checkpoint
    trainer.train(resume_from_checkpoint=True if resume == "true" else resume)
    trainer.save_state()  # trainer_state.json in the run folder: the whole log_history


if __name__ == "__main__":
    main()
