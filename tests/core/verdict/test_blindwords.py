"""The blind's rule for a trainer's words: which may say the hidden read, a verdict's class too.

A trainer's words that name a verdict class ("run looks healthy", "SAME-DRIFT") or the preset's
own word for one (`[labels]`: "LEARNED") say the hidden read as surely as a number does: they
are hidden while blinded, in any case or spelling. Words that name neither stay."""

from __future__ import annotations

import pytest

from fontaine_tui.core.preset.checks import LABELS
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.verdict.blindwords import (
    HIDDEN_WORDS,
    quotes_read,
    rule_metrics,
    shown_words,
)

RULES = load_preset("demosonly_1gpu").verdict
OWN = {"HEALTHY": "LEARNED", "SAME-DRIFT": "DIVERGED", "AMBIGUOUS": "STALLED"}


@pytest.mark.parametrize("cls", LABELS)
def test_words_naming_a_class_are_hidden_in_any_spelling(cls):
    metrics = rule_metrics(RULES)
    for words in (cls, cls.lower(), cls.replace("-", " ").title(), f"early stop: {cls}"):
        assert quotes_read(words, metrics), words
        assert shown_words(words, metrics, blinded=True) == HIDDEN_WORDS
        assert shown_words(words, metrics, blinded=False) == words


@pytest.mark.parametrize(
    "words", ["run looks healthy", "loss drifting upward", "Ambiguous", "unhealthy gradients"]
)
def test_a_class_s_own_word_alone_is_hidden(words):
    assert quotes_read(words, rule_metrics(RULES)), words


@pytest.mark.parametrize("label", OWN.values())
def test_the_preset_s_labels_are_hidden(label):
    said = f"stopping early: {label.lower()}"
    assert not quotes_read(said, rule_metrics(RULES))  # not a word of this program's
    assert quotes_read(said, rule_metrics(RULES, OWN)), said


@pytest.mark.parametrize(
    "words", ["stopped by the user", "the same seed again", "saved by hand", "finished"]
)
def test_words_naming_no_class_stay(words):
    assert not quotes_read(words, rule_metrics(RULES, OWN)), words
