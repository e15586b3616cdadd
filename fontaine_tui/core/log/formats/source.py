r"""Where a foreign run's log is and how to read it.

The place comes from a preset's `[source]` table, or from what a folder's contents say (`detect`).
This module also gives the files to read (`files`) and their decoder. The cold read of them all is
cold.py's `load_source`.

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

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from fontaine_tui.core import exitnote
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.base import Decoder
from fontaine_tui.core.log.formats.eventdirs import (
    EVENTS,
    EventFile,
    SeveralRuns,
    event_folders,
    run_files,
)
from fontaine_tui.core.log.formats.grouper import EVAL_PATTERNS, FieldMap
from fontaine_tui.core.log.formats.mlflow import (
    FILE_STORE,
    SQLITE_STORE,
    MlflowDecoder,
)
from fontaine_tui.core.log.formats.printed import LinesDecoder, compile_patterns
from fontaine_tui.core.log.formats.rows import (
    CsvDecoder,
    JsonlDecoder,
    TrainerStateDecoder,
)
from fontaine_tui.core.log.formats.tensorboard import (
    TensorBoardDecoder,
)
from fontaine_tui.core.log.formats.trackio import DB_EXT, TrackioDecoder, stores
from fontaine_tui.core.log.formats.wandb import WandbDecoder
from fontaine_tui.core.readfile import open_regular, read_whole
from fontaine_tui.core.runfolder import (
    AMENDMENTS,
    ATTEMPTS,
    ENGINE_OUT,
    LOG,
    PREREG,
    REVIEW,
    rotated_segments,
)

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
HF_STATE = "trainer_state.json"
CSV_NAME = "metrics.csv"
WANDB = "wandb"  # the folder wandb.init writes its runs into
WANDB_RUN = re.compile(r"run-[^/]+\.wandb")  # a run's file: run-<id>.wandb
# the ledgers this console writes in a run folder: never another trainer's JSONL
OURS = (AMENDMENTS, REVIEW, "babysit.jsonl", ATTEMPTS, exitnote.NOTE)
CHECKPOINT = re.compile(r"checkpoint-([0-9]+)")
LIST_TRIES = 5  # listings of a run's files, when a file listed is gone by its reading
READ = 8 << 20


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


# -- detection -------------------------------------------------------------------------------


def frozen_spec(folder: Path) -> SourceSpec | None:
    """The [source] frozen in the folder's prereg.json when it names another trainer's log.

    Such a run is a launched [command]'s. Returns None for ours, or when there is none to read."""
    import json

    try:
        doc = json.loads(read_whole(folder / PREREG, READ))
        table = {
            k: v for k, v in doc["preset"]["source"].items() if k != "eval_every"
        }  # the preset's cadence, not how the log is read
        spec = read_spec(table, f"{folder / PREREG}#source")
    except (OSError, InputError, ValueError, KeyError, TypeError):
        return None
    return spec if spec.kind != "fontaine" else None


def detect(folder: Path) -> str:
    """The kind of log a folder holds, by its contents; InputError when none is known."""
    if (folder / LOG).exists() or rotated_segments(folder / LOG):
        return "fontaine"  # ours (its log maybe rotated away)
    if (folder / PREREG).exists():  # launched here: a [command]'s frozen [source] says
        spec = frozen_spec(folder)
        return spec.kind if spec is not None else "fontaine"  # else ours, not started yet
    if wandb_runs(folder):
        return "wandb"
    if event_folders(folder):
        return "tensorboard"
    if (folder / HF_STATE).exists() or any(folder.glob(f"checkpoint-*/{HF_STATE}")):
        return "hf_trainer"
    if (folder / SQLITE_STORE).exists() or (folder / FILE_STORE).is_dir():
        return "mlflow"
    if stores(folder):
        return "trackio"
    if (
        (folder / CSV_NAME).exists()
        or any(folder.glob(f"*/version_*/{CSV_NAME}"))
        or any(folder.glob(f"version_*/{CSV_NAME}"))
    ):
        return "csv"
    if len(_jsonl(folder)) == 1:
        return "jsonl"
    raise InputError(
        f"{folder}: no log this console reads: expected {LOG}, {EVENTS}*, "
        f"{HF_STATE}, {CSV_NAME}, {FILE_STORE}/, {SQLITE_STORE}, {WANDB}/ or a "
        f"trackio <project>{DB_EXT} (or a preset [source] naming the file)"
    )


def detect_foreign(folder: Path) -> str:
    """Another trainer's kind of log in `folder`, or "".

    "" means ours, or nothing known yet: a run of ours not started is read by the log wing's own
    reader, which waits for it."""
    try:
        kind = detect(folder)
    except InputError:
        return ""
    return "" if kind == "fontaine" else kind


def foreign_spec(
    path: Path, source: SourceSpec | None, preset_named: bool, files_too: bool = False
) -> SourceSpec | None:
    """How to read `path` when it is another trainer's run, or None when it is one of ours.

    The spec is the preset's foreign [source] (`source`), else what the folder holds (with
    `files_too`, also a single event file, trainer_state.json or metrics.csv named directly). A
    foreign run needs a preset (its bounds and metric): InputError when none was named."""
    if source is not None and source.kind != "fontaine":
        spec = source
    elif path.is_dir() and (frozen := frozen_spec(path)) is not None:
        return frozen  # a launched [command]'s run: its prereg.json is the preset
    elif path.is_dir() and not (path / LOG).exists() and (kind := detect_foreign(path)):
        spec = SourceSpec(kind)
    elif files_too and path.is_file() and (kind := file_kind(path.name)):
        spec = SourceSpec(kind, str(path.resolve()))
    else:
        return None
    if not preset_named:
        raise InputError(
            f"--preset: expected a preset name or path ({path} is a {spec.kind} "
            "run: the preset says how to read it)"
        )
    return spec


def file_kind(name: str) -> str:
    """The kind a single file is by its name ("" when the name does not say)."""
    if name.startswith(EVENTS):
        return "tensorboard"
    if WANDB_RUN.fullmatch(name):
        return "wandb"
    return {HF_STATE: "hf_trainer", CSV_NAME: "csv"}.get(name, "")


def _jsonl(folder: Path) -> list[Path]:
    """The JSONL files of a folder that are not this console's own (its ledgers)."""
    return sorted(p for p in folder.glob("*.jsonl") if p.name not in OURS)


def _one(folder: Path, found: list[Path], what: str) -> Path:
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError(f"{folder}: no {what} here")
    rel = tuple(str(p.relative_to(folder)) or "." for p in found)
    raise SeveralRuns(
        f"{folder}: {len(found)} runs ({', '.join(rel[:6])}): set [source] path to one", rel
    )


def _base(folder: Path, spec: SourceSpec) -> Path:
    base = Path(spec.path) if Path(spec.path).is_absolute() else folder / spec.path
    if spec.path and not base.exists():
        raise InputError(f"{base}: source.path: no such file or folder")
    return base


def event_files(folder: Path, spec: SourceSpec) -> list[EventFile]:
    """A TensorBoard run's event files under the run folder.

    Each comes with the prefix its tags are keyed under (eventdirs.py)."""
    return run_files(_base(folder, spec), spec.options.get("run", ""))


def files(folder: Path, spec: SourceSpec) -> list[Path]:
    """The files (or store) to read for `spec` under the run folder, in reading order."""
    base = _base(folder, spec)
    kind = spec.kind
    if kind == "tensorboard":
        return [e.path for e in run_files(base, spec.options.get("run", ""))]
    if kind == "hf_trainer":
        if base.is_file():
            return [base]
        return [newest_state(base)]
    if kind == "csv":
        if base.is_file():
            return [base]
        found = (
            [base / CSV_NAME]
            if (base / CSV_NAME).exists()
            else sorted(base.glob(f"version_*/{CSV_NAME}"))
            or sorted(base.glob(f"*/version_*/{CSV_NAME}"))
        )
        return [_one(base, found, CSV_NAME)]
    if kind == "mlflow":
        if base.is_file() or base.name == FILE_STORE:
            return [base]
        found = [p for p in (base / SQLITE_STORE, base / FILE_STORE) if p.exists()]
        return [_one(base, found, f"{SQLITE_STORE} or {FILE_STORE}/")]
    if kind == "jsonl":
        if base.is_file():
            return [base]
        return [_one(base, _jsonl(base), "*.jsonl file")]
    if kind == "wandb":
        if base.is_file():
            return [base]
        return [wandb_run(base, spec.options.get("run", ""))]
    if kind == "trackio":
        if base.is_file():
            return [base]
        return [_one(base, stores(base), f"trackio store (<project>{DB_EXT})")]
    if kind == "lines":
        printed = base if spec.path else folder / ENGINE_OUT
        if not printed.is_file():
            raise InputError(f"{printed}: source.path: no such file (the printed lines to read)")
        return [printed]
    return [base / LOG if base.is_dir() else base]


def _run_files(folder: Path) -> list[Path]:
    """The W&B run files directly in `folder` (a run folder holds one)."""
    try:
        return sorted(
            p
            for p in folder.iterdir()
            if WANDB_RUN.fullmatch(p.name) and p.is_file() and not p.is_symlink()
        )
    except OSError:
        return []


def wandb_runs(folder: Path) -> list[Path]:
    """The W&B run files of `folder`.

    They are a run folder's own, else those of the run folders in it (`folder` is a `wandb/`
    folder), else those under its `wandb/`. The `latest-run` link is not a run of its own."""
    own = _run_files(folder)
    if own:
        return own
    for where in (folder, folder / WANDB):
        try:
            runs = sorted(p for p in where.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError:
            continue
        found = [f for run in runs for f in _run_files(run)]
        if found:
            return found
    return []


def wandb_run(folder: Path, chosen: str) -> Path:
    """The run file of `folder` that [source] run names, or the only one.

    The run is named by its folder's name, or its id. Raises InputError naming them when there
    are several, or none is chosen."""
    found = wandb_runs(folder)
    if chosen:
        found = [
            f
            for f in found
            if chosen in (f.parent.name, f.name[4:-6], f.parent.name.rpartition("-")[2])
        ]
    if len(found) == 1:
        return found[0]
    every = wandb_runs(folder)
    names = ", ".join(f.parent.name if f.parent != folder else f.name for f in every[:6])
    more = ", ..." if len(every) > 6 else ""
    if not every:
        raise InputError(
            f"{folder}: no W&B run here (expected {WANDB}/offline-run-*/"
            "run-*.wandb, or a run folder holding its run-*.wandb)"
        )
    if not found:
        raise InputError(f"{folder}: source.run: no W&B run {chosen!r} (runs: {names}{more})")
    raise InputError(
        f"{folder}: {len(every)} W&B runs ({names}{more}): set [source] run to "
        "one (its folder's name or its id)"
    )


def newest_state(folder: Path) -> Path:
    """The trainer_state.json with the most history.

    It is the run folder's own (written at the end by `save_state`) or the newest
    `checkpoint-N/`'s, by step."""
    for _ in range(LIST_TRIES):  # a checkpoint-N/ listed may be gone by its look: again
        listed = [
            (int(m.group(1)), p)
            for p in folder.glob("checkpoint-*")
            if (m := CHECKPOINT.fullmatch(p.name))
        ]
        candidates = [(n, p / HF_STATE) for n, p in listed if (p / HF_STATE).exists()]
        if candidates or not listed:
            break
    if (folder / HF_STATE).exists():
        candidates.append((_global_step(folder / HF_STATE), folder / HF_STATE))
    if not candidates:
        raise InputError(f"{folder}: no {HF_STATE} here or in a checkpoint-*/ folder")
    return max(candidates, key=lambda c: (c[0], _mtime(c[1])))[1]


def _mtime(path: Path) -> float:
    """A listed file's modification time; -1 when it went away since the listing."""
    try:
        return path.stat().st_mtime
    except OSError:
        return -1.0


GLOBAL_STEP = re.compile(rb'"global_step"\s*:\s*(-?[0-9]{1,18})\s*[,}]')
STATE_HEAD = 1 << 16  # Trainer writes its keys sorted: global_step comes before log_history


def _global_step(path: Path) -> int:
    """trainer_state.json's global_step, read from its first bytes where it is there.

    Else it is read from the whole file. This way the file, which may be large, is read whole
    once: by the decoder."""
    import orjson

    try:
        with open_regular(path) as fh:
            head = fh.read(STATE_HEAD)
    except (OSError, InputError):
        return 0
    found = GLOBAL_STEP.findall(head)
    if (
        len(head) == STATE_HEAD
        and len(found) == 1
        and b'"log_history"' in head.split(b'"global_step"')[1]
    ):
        return int(found[0])  # before log_history: the top level's, not an entry's
    try:
        data = head if len(head) < STATE_HEAD else read_whole(path)
        value = orjson.loads(data).get("global_step", 0)
    except (OSError, InputError, orjson.JSONDecodeError, AttributeError):
        return 0
    return value if isinstance(value, int) else 0


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
