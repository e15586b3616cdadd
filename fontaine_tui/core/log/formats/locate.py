"""Where a foreign run's log is in a folder: the kind it holds, and the files to read.

`detect` tells the kind of log by a folder's contents (ours, a launched [command]'s frozen
[source], W&B, TensorBoard, trainer_state.json, MLflow, trackio, CSV, JSONL); `foreign_spec`
picks how to read a path named on the command line. `files` gives the files (or store) a
[source] reads under the run folder, in reading order, and refuses a folder holding several
runs (`SeveralRuns`, naming them).
"""

from __future__ import annotations

import re
from pathlib import Path

from fontaine_tui.core import exitnote
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.log.formats.eventdirs import (
    EVENTS,
    EventFile,
    SeveralRuns,
    event_folders,
    run_files,
)
from fontaine_tui.core.log.formats.mlflow import FILE_STORE, SQLITE_STORE
from fontaine_tui.core.log.formats.source import SourceSpec, read_spec
from fontaine_tui.core.log.formats.trackio import DB_EXT, stores
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

HF_STATE = "trainer_state.json"
CSV_NAME = "metrics.csv"
WANDB = "wandb"  # the folder wandb.init writes its runs into
WANDB_RUN = re.compile(r"run-[^/]+\.wandb")  # a run's file: run-<id>.wandb
# the ledgers this console writes in a run folder: never another trainer's JSONL
OURS = (AMENDMENTS, REVIEW, "babysit.jsonl", ATTEMPTS, exitnote.NOTE)
CHECKPOINT = re.compile(r"checkpoint-([0-9]+)")
LIST_TRIES = 5  # listings of a run's files, when a file listed is gone by its reading
READ = 8 << 20


def frozen_spec(folder: Path) -> SourceSpec | None:
    """The [source] frozen in the folder's prereg.json when it names another trainer's log.

    Such a run is a launched [command]'s. Returns None for ours, or when there is none to read."""

    try:
        doc = json_loads(read_whole(folder / PREREG, READ))
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
    if trainer_state_here(folder):
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


def trainer_state_here(folder: Path) -> bool:
    """Whether `folder` holds a Hugging Face Trainer's own record (trainer_state.json)."""
    return (folder / HF_STATE).exists() or any(folder.glob(f"checkpoint-*/{HF_STATE}"))


def record_kind(folder: Path) -> str:
    """Another trainer's kind of log in `folder` as a finished run is kept, or "" (detect_foreign).

    A Trainer's output folder that reports to TensorBoard holds its own record
    (trainer_state.json, the keys `hf_trainer` reads: eval_loss) and event files of the same
    numbers under other keys (eval/loss). Followed live, the events are the newer (the record
    is written at each save); a finished run is kept by the Trainer's own record."""
    kind = detect_foreign(folder)
    return "hf_trainer" if kind == "tensorboard" and trainer_state_here(folder) else kind


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
