r"""A preset's `[source]`: which trainer's log a run is, how to read it, and its decoder.

`read_spec` reads the table into a `SourceSpec` (ValueError naming the key on a bad one);
`decoder` gives the spec's decoder. Where the files are in a run folder, and the kind a folder
holds when no [source] says, is locate.py's; the cold read of them all is cold.py's
`load_source`.

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

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.base import Decoder
from fontaine_tui.core.log.formats.grouper import EVAL_PATTERNS, FieldMap
from fontaine_tui.core.log.formats.mlflow import MlflowDecoder
from fontaine_tui.core.log.formats.printed import LinesDecoder, compile_patterns
from fontaine_tui.core.log.formats.rows import CsvDecoder, JsonlDecoder, TrainerStateDecoder
from fontaine_tui.core.log.formats.tensorboard import TensorBoardDecoder
from fontaine_tui.core.log.formats.trackio import TrackioDecoder
from fontaine_tui.core.log.formats.wandb import WandbDecoder

KINDS = (
    "fontaine",
    "tensorboard",
    "hf_trainer",
    "csv",
    "mlflow",
    "jsonl",
    "wandb",
    "trackio",
    "lines",
)
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


@dataclass(frozen=True, slots=True)
class SourceSpec:
    kind: str
    path: str = ""  # a file or folder, relative to the run folder (or absolute)
    fields: FieldMap = field(default_factory=FieldMap)
    options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    patterns: tuple[str, ...] = ()  # lines: the regular expressions that read a printed line

    def canonical(self) -> dict[str, object]:
        """As hashed into the preset (only what was set)."""
        out: dict[str, object] = {"kind": self.kind}
        if self.path:
            out["path"] = self.path
        if self.fields.eval != EVAL_PATTERNS:
            out["eval"] = list(self.fields.eval)
        out.update(dict(self.fields.train))
        if self.fields.step != "step":
            out["step"] = self.fields.step
        if self.fields.time:
            out["time"] = self.fields.time
        if self.fields.probe_field:
            out["probe_field"] = self.fields.probe_field
            out["probe_value"] = self.fields.probe_value
        out.update(self.options)
        if self.patterns:
            out["patterns"] = list(self.patterns)
        return out


def read_spec(table: object, where: str = "source") -> SourceSpec:
    """A preset's [source] table; ValueError(key, expected) on a bad one."""
    if not isinstance(table, dict):
        raise ValueError(where, "expected a table")
    for key in table:
        if key not in SOURCE_KEYS:
            raise ValueError(
                f"{where}.{key}", f"unknown key (expected one of {', '.join(SOURCE_KEYS)})"
            )
    for key, value in table.items():
        if key not in ("eval", "patterns") and not isinstance(value, str):
            raise ValueError(f"{where}.{key}", "expected a string")
    kind = table.get("kind", "")
    if kind not in KINDS:
        raise ValueError(f"{where}.kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    patterns = table.get("eval", list(EVAL_PATTERNS))
    if isinstance(patterns, str):
        patterns = [patterns]
    if not (
        isinstance(patterns, list) and patterns and all(isinstance(p, str) and p for p in patterns)
    ):
        raise ValueError(
            f"{where}.eval", 'expected a glob pattern or a list of them (like "eval/*")'
        )
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
    printed: tuple[str, ...] = ()
    if kind == "lines":
        if "patterns" not in table:
            raise ValueError(
                f"{where}.patterns",
                'expected with kind = "lines": regular '
                "expressions with a named group `step` (like "
                "'step:(?P<step>\\S+) .*loss:(?P<loss>\\S+)')",
            )
        compile_patterns(table["patterns"], f"{where}.patterns")
        raw = table["patterns"]
        printed = tuple([raw] if isinstance(raw, str) else raw)
    elif "patterns" in table:
        raise ValueError(f"{where}.patterns", 'expected only with kind = "lines"')
    fields = FieldMap(
        tuple(patterns),
        MappingProxyType({k: table[k] for k in TRAIN_KEYS if table.get(k)}),
        table.get("step") or "step",
        table.get("time", ""),
        probe_field,
        probe_value,
    )
    options = {k: table[k] for k in ("experiment", "run") if table.get(k)}
    return SourceSpec(kind, table.get("path", ""), fields, MappingProxyType(options), printed)


def decoder(spec: SourceSpec) -> Decoder:
    kind = spec.kind
    if kind == "tensorboard":
        return TensorBoardDecoder(spec.fields)
    if kind == "hf_trainer":
        return TrainerStateDecoder(spec.fields)
    if kind == "csv":
        return CsvDecoder(spec.fields)
    if kind == "jsonl":
        return JsonlDecoder(spec.fields)
    if kind == "mlflow":
        return MlflowDecoder(spec.fields)
    if kind == "trackio":
        return TrackioDecoder(spec.fields)
    if kind == "lines":
        return LinesDecoder(spec.fields, spec.patterns)
    if kind == "wandb":
        return WandbDecoder(spec.fields)
    raise InputError(f"source.kind: {kind!r} is read by the log wing's own reader")
