"""The trainer's own words on a blinded run: which may quote the hidden read, and what replaces them.

A trainer's words (an alert it raised, a log event's detail, a line it printed, the last line
or error it left at its exit) are not the verdict's, but they may quote the read the blind
hides (core/verdict/blind.py): "eval_loss=0.123", "new best eval_chunk_mae". One rule says
which may, for every surface that shows them (the panes and plain lines of
core/launch/traineralerts.py, an exit's words in core/launch/exits.py, `inspect`, `runs`).
The words are hidden where they are shown, not where they are read: an exit's cause is
judged from them as they were printed.

A leaf: it imports nothing of the program, so every wing that shows a trainer's words may.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

HIDDEN_WORDS = (
    "its words hold a number or name a rule's metric, so they may quote the blinded read: "
    "hidden until the final read"
)


def rule_metrics(rules: object) -> tuple[str, ...]:
    """The metrics a [verdict] reads: its own and each secondary rule's."""
    metric = getattr(rules, "metric", "")
    return (metric, *(r.metric for r in getattr(rules, "secondary", ())))


def _squashed(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


# the words that say which split a metric was measured on, not which metric it is
SPLITS = frozenset({"eval", "evaluation", "val", "valid", "validation", "test", "train", "metrics"})
_DIGITS = "zero|one|two|three|four|five|six|seven|eight|nine"
SPELT = re.compile(rf"\b({_DIGITS})\s+(point|dot)\s+({_DIGITS})\b", re.IGNORECASE)


_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")


def _words(text: str) -> list[str]:
    """`text`'s words, lower case, camelCase split: evalChunkMAE is ["eval", "chunk", "mae"]."""
    return [w.lower() for w in _NOT_ALNUM.split(_CAMEL.sub(r"\1 \2", text)) if w]


@functools.lru_cache(maxsize=64)
def _forms(metrics: tuple[str, ...]) -> tuple[tuple[str, str, frozenset[str]], ...]:
    """The forms a trainer's words may name each metric by, worked out once per rule set.

    (its name squashed, squashed less its split, its words of three letters or more less its
    split): eval/chunk_mae is (evalchunkmae, chunkmae, {chunk, mae})."""
    forms = []
    for m in metrics:
        parts = [w for w in _words(m) if w not in SPLITS]
        forms.append((_squashed(m), "".join(parts), frozenset(w for w in parts if len(w) >= 3)))
    return tuple(forms)


def quotes_read(words: str, metrics: Sequence[str]) -> bool:
    """Whether the trainer's `words` may quote a blinded read.

    They may when they hold a digit or a value spelt out ("two point nine"), or name a rule's
    metric however it is spelt (case, `_`, `/`, spaces: "Eval chunk MAE" is eval_chunk_mae),
    without its split ("chunk_mae"), or by one of its words of three letters or more ("new
    best MAE")."""
    if any(c.isdigit() for c in words) or SPELT.search(words):
        return True
    squashed, said = _squashed(words), set(_words(words))
    return any(
        (whole and whole in squashed) or (bare and bare in squashed) or not long.isdisjoint(said)
        for whole, bare, long in _forms(tuple(metrics))
    )


def shown_words(words: str, metrics: Sequence[str] = (), blinded: bool = False) -> str:
    """The trainer's `words` as a surface shows them.

    Blinded, words that may quote the read (`quotes_read`) are HIDDEN_WORDS; else as given."""
    return HIDDEN_WORDS if blinded and words and quotes_read(words, metrics) else words
