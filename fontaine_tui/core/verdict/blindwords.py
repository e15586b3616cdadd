"""The trainer's own words on a blinded run: which may quote the hidden read, and what replaces them.

A trainer's words (an alert it raised, a log event's detail, a line it printed, the last line
or error it left at its exit) are not the verdict's, but they may quote the read the blind
hides (core/verdict/blind.py): "eval_loss=0.123", "new best eval_chunk_mae", or name its
class ("early stop: drift", the preset's own "LEARNED"). One rule says which may, for every
surface that shows them (the panes and plain lines of core/watch/traineralerts.py, an
exit's words in core/run/exits.py, `inspect`, `runs`). The words are hidden where they are
shown, not where they are read: an exit's cause is judged from them as they were printed.

It imports only the verdict's class names (core/preset/checks.py), so every wing that shows a
trainer's words may import it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence

from fontaine_tui.core.preset.checks import LABELS as CLASSES

HIDDEN_WORDS = (
    "its words hold a number or name a rule's metric or a verdict class, so they may quote "
    "the blinded read: hidden until the final read"
)


def rule_metrics(rules: object, labels: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The names a blinded read may be quoted by: the metrics a [verdict] reads, and its labels.

    The metrics are its own and each secondary rule's; `labels` are the preset's own words for
    the classes ([labels], class -> word), looked for as a metric's name is. The classes' own
    names are always looked for (`quotes_read`)."""
    metric = getattr(rules, "metric", "")
    said = (labels or {}).values()
    return (metric, *(r.metric for r in getattr(rules, "secondary", ())), *said)


def _squashed(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


# the words that say which split a metric was measured on, not which metric it is
SPLITS = frozenset({"eval", "evaluation", "val", "valid", "validation", "test", "train", "metrics"})
_DIGITS = "zero|one|two|three|four|five|six|seven|eight|nine"
SPELT = re.compile(rf"\b({_DIGITS})\s+(point|dot)\s+({_DIGITS})\b", re.IGNORECASE)

HIDDEN_VALUE = "(hidden while blinded)"

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")


def _words(text: str) -> list[str]:
    """`text`'s words, lower case, camelCase split: evalChunkMAE is ["eval", "chunk", "mae"]."""
    return [w.lower() for w in _NOT_ALNUM.split(_CAMEL.sub(r"\1 \2", text)) if w]


# the words of the classes' names that name one alone: "drift", "healthy", not "same" or "by"
CLASS_WORDS = tuple(sorted({w for c in CLASSES for w in _words(c) if len(w) >= 5}))


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

    They may when they hold a digit or a value spelt out ("two point nine"); when they name a
    verdict class by one of CLASS_WORDS, in any case or within a word ("SAME-DRIFT",
    "unhealthy"); or when they name a rule's metric (or a label: `rule_metrics`) however it
    is spelt (case, `_`, `/`, spaces: "Eval chunk MAE" is eval_chunk_mae), without its split
    ("chunk_mae"), or by one of its words of three letters or more ("new best MAE")."""
    if any(c.isdigit() for c in words) or SPELT.search(words):
        return True
    squashed, said = _squashed(words), set(_words(words))
    if any(w in squashed for w in CLASS_WORDS):
        return True
    return _names_metric(squashed, said, tuple(metrics))


def _names_metric(squashed: str, said: set[str], metrics: tuple[str, ...]) -> bool:
    """Whether words (`squashed`, and its words `said`) name one of `metrics` by a form of it.

    Its name or its name less its split within a word, or one of its longer words."""
    return any(
        (whole and whole in squashed) or (bare and bare in squashed) or not long.isdisjoint(said)
        for whole, bare, long in _forms(metrics)
    )


def shown_words(words: str, metrics: Sequence[str] = (), blinded: bool = False) -> str:
    """The trainer's `words` as a surface shows them.

    Blinded, words that may quote the read (`quotes_read`) are HIDDEN_WORDS; else as given."""
    return HIDDEN_WORDS if blinded and words and quotes_read(words, metrics) else words


def shown_value(key: str, value: str, metrics: Sequence[str] = (), blinded: bool = False) -> str:
    """A recorded `key` = `value` (a run's config) as a surface shows its value.

    Blinded, a value that holds a number (a digit, or spelt out) under a key that names a
    rule's metric or a label as a trainer's words may (`quotes_read`: best_eval_loss names
    val_loss by "loss") is HIDDEN_VALUE: it may be the read itself. Else as given."""
    if not blinded or not (any(c.isdigit() for c in value) or SPELT.search(value)):
        return value
    named = _names_metric(_squashed(key), set(_words(key)), tuple(metrics))
    return HIDDEN_VALUE if named else value
