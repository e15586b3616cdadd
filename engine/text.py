"""Task text as language tokens for the backbone.

Each frame's task string (meta/tasks of its dataset) is tokenized once per distinct task:
with the backbone's own tokenizer when a Hugging Face init's backbone folder holds one, else
byte by byte into the engine's vocabulary (ids BYTE0 + byte, after the 256 action bins and
BOS). The tokens are truncated to `--task-tokens` and padded to the longest task's length
(at most that), with a mask the backbone's attention and the flow decoder's pooling honour.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .corpus import Corpus
from .pipeline import BINS

BYTE0 = BINS + 1  # the first byte token: after the action bins and BOS
VOCAB = BYTE0 + 256  # the engine's own backbone vocabulary
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


class TextError(ValueError):
    """A tokenizer that cannot be read, or tokens the backbone has no embedding for."""


@dataclasses.dataclass(frozen=True)
class Tokenizer:
    """Bytes, or the tokenizer of a Hugging Face folder (`source`)."""

    source: str  # "bytes" or the folder
    hf: object = None

    def encode(self, text: str) -> list[int]:
        if self.hf is None:
            return [BYTE0 + b for b in text.encode("utf-8")]
        return list(self.hf(text, add_special_tokens=False)["input_ids"])  # type: ignore[operator]


def for_folder(folder: Path | None) -> Tokenizer:
    """The tokenizer of a Hugging Face model folder that holds one; bytes otherwise."""
    if folder is None or not any((Path(folder) / f).is_file() for f in TOKENIZER_FILES):
        return Tokenizer("bytes")
    from transformers import AutoTokenizer

    try:
        hf = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TextError(f"{folder}: its tokenizer cannot be read ({first})") from None
    return Tokenizer(str(folder), hf)


def for_init(init) -> Tokenizer:
    """The tokenizer of an `--init` (engine/init.py Init).

    A Hugging Face init's backbone's own when its folder holds one, else bytes.
    """
    folder = init.parts.get("backbone") if init is not None and init.kind == "hf" else None
    try:
        return for_folder(folder)
    except TextError as exc:
        raise TextError(f"--init {exc}") from None


def table(tasks: Sequence[str], tok: Tokenizer, max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """(len(tasks), L) token ids and mask, L the longest tokenized task capped at max_tokens."""
    encoded = [tok.encode(t)[:max_tokens] for t in tasks] if max_tokens > 0 else []
    width = max((len(e) for e in encoded), default=0)
    ids = np.zeros((len(tasks), width), np.int64)
    mask = np.zeros((len(tasks), width), np.bool_)
    for i, e in enumerate(encoded):
        ids[i, : len(e)], mask[i, : len(e)] = e, True
    return ids, mask


def attach(data: Corpus, tok: Tokenizer, max_tokens: int) -> Corpus:
    """The corpus with its tasks' tokens (engine/pipeline.py hands each frame its task's)."""
    ids, mask = table(data.tasks, tok, max_tokens)
    return dataclasses.replace(data, text_ids=ids, text_mask=mask)


def as_recorded(data: Corpus, meta: dict) -> Corpus:
    """The corpus with its tasks tokenized as a checkpoint's meta.json records (inputs.text).

    A checkpoint from before it was recorded saw no task text.
    """
    recorded = (meta.get("inputs") or {}).get("text") or {}
    source = str(recorded.get("tokenizer") or "bytes")
    tok = for_folder(None if source == "bytes" else Path(source))
    return attach(data, tok, int(recorded.get("max_tokens") or 0))


def check_vocab(data: Corpus, tok: Tokenizer, vocab_size: int) -> None:
    """TextError when a task token has no row in the backbone's embedding."""
    if data.text_mask.any() and int(data.text_ids[data.text_mask].max()) >= vocab_size:
        what = "byte tokens" if tok.hf is None else f"{tok.source}'s tokens"
        raise TextError(
            f"--task-tokens: the backbone's vocabulary ({vocab_size}) has no room for the "
            f"task text's {what} (up to id {int(data.text_ids[data.text_mask].max())}); "
            "expected a backbone of this engine's vocabulary, or --task-tokens 0"
        )


def inputs(data: Corpus, tok: Tokenizer, max_tokens: int) -> dict[str, object]:
    """What reaches the model besides state and actions: the cameras and the task text.

    As the meta record and each checkpoint's meta.json state it: the cameras in order, the
    task text's tokenization.
    """
    return {
        "cameras": list(data.cameras),
        "text": {
            "tokenizer": tok.source,
            "max_tokens": max_tokens,
            "tokens": int(data.text_ids.shape[1]),
            "tasks": len(data.tasks),
        },
    }
