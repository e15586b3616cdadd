r"""A preset's `[source]` table read into a `SourceSpec`, and the decoder the spec names.

`read_spec` reads the table into a `SourceSpec` (spec.py; ValueError naming the key on a bad
one), its kind one of registry.py's records; `decoder` gives the spec's decoder, as its record
makes it. Where the files are in a run folder, and the kind a folder holds when no [source]
says, is locate.py's; the cold read of them all is cold.py's `load_source`.

    [source]
    kind = "tensorboard"          # tensorboard | hf_trainer | csv | mlflow | jsonl | wandb
                                  #   | trackio | lines | fontaine
    path = "runs/exp1"            # relative to the run folder; optional where it is found
    eval = ["eval/*"]             # the keys that are eval probes (glob patterns)
    loss = "train/loss"           # the train loss key (default: the first of the usual names)
    step = "step"                 # row formats: the step column / field; W&B: the step key
                                  #   (default its own `_step`, e.g. "train/global_step")
    probe_field = "split"         # JSONL: the lines whose `split` is "eval" are the probes
    probe_value = "eval"          #   (every number on them an eval key, by its own name)
    experiment = "" ; run = ""    # MLflow: which run, when the store holds several
                                  # (trackio: `run`, the run's name; W&B: `run`, the run
                                  #   folder's name or its id; TensorBoard: which writer's
                                  #   event files, a part of their name: host, pid,
                                  #   host.pid, when several wrote into one folder at once)
    patterns = ['step:(?P<step>\S+) .*loss:(?P<loss>\S+)']   # lines: printed metrics
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.base import Decoder
from fontaine_tui.core.log.formats.grouper import EVAL_PATTERNS, FieldMap
from fontaine_tui.core.log.formats.printed import compile_patterns
from fontaine_tui.core.log.formats.registry import find, kinds
from fontaine_tui.core.log.formats.spec import SourceSpec

TRAIN_KEYS = ("loss", "lr", "grad_norm")  # [source] keys naming a train field's source key
SOURCE_KEYS = (
    "kind",
    "path",
    "eval",
    "step",
    "time",
    "experiment",
    "run",
    "probe_field",
    "probe_value",
    "patterns",
    *TRAIN_KEYS,
)


def read_spec(table: object, where: str = "source") -> SourceSpec:
    """A preset's [source] table; ValueError(key, expected) on a bad one."""
    if not isinstance(table, dict):
        raise ValueError(where, "expected a table")
    _check_keys(table, where)
    kind = _read_kind(table, where)
    patterns = _read_eval(table, where)
    probe_field, probe_value = _read_probe(table, kind, where)
    printed = _read_printed(table, kind, where)
    fields = FieldMap(
        patterns,
        MappingProxyType({k: table[k] for k in TRAIN_KEYS if table.get(k)}),
        table.get("step") or "step",
        table.get("time", ""),
        probe_field,
        probe_value,
    )
    options = {k: table[k] for k in ("experiment", "run") if table.get(k)}
    return SourceSpec(kind, table.get("path", ""), fields, MappingProxyType(options), printed)


def _check_keys(table: dict[str, Any], where: str) -> None:
    """Every key one of SOURCE_KEYS, and every value but `eval`'s and `patterns`' a string."""
    for key in table:
        if key not in SOURCE_KEYS:
            raise ValueError(
                f"{where}.{key}", f"unknown key (expected one of {', '.join(SOURCE_KEYS)})"
            )
    for key, value in table.items():
        if key not in ("eval", "patterns") and not isinstance(value, str):
            raise ValueError(f"{where}.{key}", "expected a string")


def _read_kind(table: dict[str, Any], where: str) -> str:
    """The `kind`, one of the registry's."""
    kind: str = table.get("kind", "")
    if kind not in kinds():
        raise ValueError(f"{where}.kind", f"expected one of {', '.join(kinds())}, got {kind!r}")
    return kind


def _read_eval(table: dict[str, Any], where: str) -> tuple[str, ...]:
    """The `eval` glob patterns: one string or a non-empty list of non-empty strings."""
    patterns = table.get("eval", list(EVAL_PATTERNS))
    if isinstance(patterns, str):
        patterns = [patterns]
    if not (
        isinstance(patterns, list) and patterns and all(isinstance(p, str) and p for p in patterns)
    ):
        raise ValueError(
            f"{where}.eval", 'expected a glob pattern or a list of them (like "eval/*")'
        )
    return tuple(patterns)


def _read_probe(table: dict[str, Any], kind: str, where: str) -> tuple[str, str]:
    """`probe_field` and `probe_value`: both or neither, and only with kind = "jsonl"."""
    probe_field, probe_value = table.get("probe_field", ""), table.get("probe_value", "")
    if bool(probe_field) != bool(probe_value):
        raise ValueError(
            f"{where}.probe_value" if probe_field else f"{where}.probe_field",
            "expected both probe_field and probe_value (the field that tells a "
            'probe line, and its value there: probe_field = "split", '
            'probe_value = "eval")',
        )
    if probe_field and kind != "jsonl":
        raise ValueError(f"{where}.probe_field", 'expected only with kind = "jsonl"')
    return probe_field, probe_value


def _read_printed(table: dict[str, Any], kind: str, where: str) -> tuple[str, ...]:
    """The `patterns` of a printed log: required with kind = "lines", refused with any other."""
    if kind != "lines":
        if "patterns" in table:
            raise ValueError(f"{where}.patterns", 'expected only with kind = "lines"')
        return ()
    if "patterns" not in table:
        raise ValueError(
            f"{where}.patterns",
            'expected with kind = "lines": regular '
            "expressions with a named group `step` (like "
            "'step:(?P<step>\\S+) .*loss:(?P<loss>\\S+)')",
        )
    raw = table["patterns"]
    compile_patterns(raw, f"{where}.patterns")
    return tuple([raw] if isinstance(raw, str) else raw)


def decoder(spec: SourceSpec) -> Decoder:
    """The spec's decoder, as its format's record (registry.py) makes it."""
    fmt = find(spec.kind)
    if fmt is None or fmt.decoder is None:
        raise InputError(f"source.kind: {spec.kind!r} is read by the log wing's own reader")
    return fmt.decoder(spec)
