"""A starting preset for a run another trainer wrote, from what `inspect` found there.

[run] is named after the folder, [source] is as the run was read, and the [verdict] is on an
eval key read from its first probe to its last, with the bounds left as placeholders. A
placeholder is a string where a number goes, and loading refuses it (rule.py's
`check_placeholders`): a preset written here gives no verdict until its bounds are chosen."""

from __future__ import annotations

import json

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.grouper import EVAL_PATTERNS, FieldMap
from fontaine_tui.core.log.formats.inspect import Inspection, KeyStats, ProbeCadence, cadence
from fontaine_tui.core.preset.rule import DIRECTIONS, PLACEHOLDER

# an eval key that says how long or how fast, not how good: never the default metric
NOT_A_MEASURE = ("runtime", "per_second", "epoch", "samples", "steps", "flos", "time")
LOWER = (
    "loss",
    "mae",
    "mse",
    "rmse",
    "err",
    "error",
    "perplexity",
    "ppl",
    "cer",
    "wer",
    "nll",
    "distance",
    "regret",
)
HIGHER = (
    "acc",
    "accuracy",
    "f1",
    "auc",
    "precision",
    "recall",
    "bleu",
    "rouge",
    "score",
    "reward",
    "return",
    "success",
    "iou",
    "map",
)


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def pick_metric(ins: Inspection) -> str:
    """Pick the eval key a verdict most likely reads.

    That is one named as an error or a score, with finite values; else the first eval key."""
    evals = [k.key for k in ins.keys if _read_eval(k)]
    measures = [key for key in evals if _a_measure(key)]
    # in preference: named as an error, named as a score, any measure, any eval key
    for keys in (_named(measures, LOWER), _named(measures, HIGHER), measures, evals):
        if keys:
            return keys[0]
    raise InputError(
        f"{ins.folder}: no eval key to read a verdict on (keys: "
        f"{', '.join(k.key for k in ins.keys[:10]) or 'none'}): give --metric"
    )


def _read_eval(k: KeyStats) -> bool:
    """An eval key with at least one finite number."""
    return k.role == "eval" and k.count > k.nan + k.not_number


def _a_measure(key: str) -> bool:
    """Whether the key can say how good (not how long or how fast: NOT_A_MEASURE)."""
    return not any(w in key.lower() for w in NOT_A_MEASURE)


def _named(keys: list[str], words: tuple[str, ...]) -> list[str]:
    """The keys with one of `words` as a word of their name, in order."""
    return [key for key in keys if any(w in _words(key) for w in words)]


def _words(key: str) -> list[str]:
    for sep in "/._-":
        key = key.replace(sep, " ")
    return key.lower().split()


def guess_direction(metric: str) -> str:
    words = _words(metric)
    if any(w in words for w in HIGHER) and not any(w in words for w in LOWER):
        return "higher"
    return "lower"


# by direction: the healthy and the drift bound's keys, and how each says better and worse
BOUNDS = {
    "lower": ("healthy_max", "drift_min", "at most", "at least"),
    "higher": ("healthy_min", "drift_max", "at least", "at most"),
}
# by read: what the bounds hold, and what the read is
READ_WORDS = {
    "delta": ("delta", "the change from anchor_step to endpoint_step"),
    "level": ("value", "the value at endpoint_step (one probe: no anchor)"),
}


def draft(ins: Inspection, metric: str = "", direction: str = "") -> str:
    """The preset's TOML text."""
    metric = metric or pick_metric(ins)
    stats = _stats(ins, metric)
    direction = _direction(direction, metric)
    _refuse_ours(ins)
    endpoint = stats.last
    anchors = [s for s in stats.steps if 0 < s < endpoint]  # a delta's anchor is past step 0
    anchor = anchors[0] if anchors else None
    lines = [
        *_head(ins),
        *_source(ins, metric),
        *_eval_every(cadence(stats.steps), anchor or 0, endpoint),
        *_verdict(metric, direction, anchor, endpoint),
    ]
    return "\n".join(lines)


def _stats(ins: Inspection, metric: str) -> KeyStats:
    """The metric's values in the run; refused when the run has no such key."""
    stats = ins.stats(metric)
    if stats is None:
        raise InputError(
            f"{ins.folder}: --metric {metric!r}: no such key in this run (eval "
            f"keys: {', '.join(ins.eval_keys[:10]) or 'none'})"
        )
    return stats


def _direction(direction: str, metric: str) -> str:
    """The direction given (refused when not one), else as the metric's name says."""
    if direction and direction not in DIRECTIONS:
        raise InputError(f"--direction: expected one of {', '.join(DIRECTIONS)}, got {direction!r}")
    return direction or guess_direction(metric)


def _refuse_ours(ins: Inspection) -> None:
    """Refuse a run of this console's: its preset is the one it was launched with."""
    if ins.chosen.kind == "fontaine":
        raise InputError(
            f"{ins.folder}: a run of this console: its preset is the one it was "
            "launched with (prereg.json); `fontaine-tui verdict` reads it"
        )


def _head(ins: Inspection) -> list[str]:
    """What the file is and what is left to do, then [run], named after the folder."""
    return [
        f"# A starting preset for {ins.folder.resolve()}, written by fontaine-tui inspect.",
        "# Complete the [verdict] bounds (the strings marked " + _q(PLACEHOLDER) + ")",
        "# with numbers chosen before reading the run: until then it gives no verdict.",
        "",
        "[run]",
        f"name = {_q(ins.folder.resolve().name or 'run')}",
        'question = ""',
        "",
    ]


def _source(ins: Inspection, metric: str) -> list[str]:
    """[source] as the run was read, with the keys that are not the usual ones.

    Its eval keys unless the default patterns hold the metric, its loss key, and its step
    key when not "step"."""
    lines = ["[source]", *ins.chosen.source_lines()]
    if FieldMap().is_eval(metric):
        lines.append(
            f"# eval: the default patterns ({', '.join(EVAL_PATTERNS[:4])}, ...) hold the metric"
        )
    else:
        lines.append(f"eval = [{_q(metric)}]")
    if ins.loss_key:
        lines.append(f"loss = {_q(ins.loss_key)}")
    if ins.step_key != "step":
        lines.append(f"step = {_q(ins.step_key)}")
    return lines


def _eval_every(grid: ProbeCadence, anchor: int, endpoint: int) -> list[str]:
    """The probe cadence, where the probes keep one that the anchor and endpoint are on."""
    every = grid.every
    if not every:
        return []
    if not grid.off_grid and not anchor % every and not endpoint % every:
        return [f"eval_every = {every}  # the probe cadence"]
    return [
        f"# probes {grid.describe()}: eval_every left out (anchor and "
        "endpoint must be multiples of it)"
    ]


def _verdict(metric: str, direction: str, anchor: int | None, endpoint: int) -> list[str]:
    """[verdict] on `metric`, with its bounds left as placeholders.

    A delta from the first probe past step 0 (`anchor`) to the last, else (no anchor) the
    level at the last."""
    read = "level" if anchor is None else "delta"
    healthy, drift, better, worse = BOUNDS[direction]
    what, how = READ_WORDS[read]
    return [
        "",
        "[verdict]",
        f"metric = {_q(metric)}",
        f"direction = {_q(direction)}  # which way is better: lower or higher",
        f"read = {_q(read)}  # {how}",
        *([] if anchor is None else [f"anchor_step = {anchor}  # the first probe"]),
        f"endpoint_step = {endpoint}  # the last probe",
        f"{healthy} = {_q(PLACEHOLDER + ': a number')}  # HEALTHY: the {what} is {better} this",
        f"{drift} = {_q(PLACEHOLDER + ': a number')}  # SAME-DRIFT: the {what} is {worse} this",
        "",
    ]
