"""Where each kind's files are in a run folder: how a folder is told to hold it, and its files.

The files (or store) are those a `[source]` of that kind reads there.

Each function here is named by one record of registry.py (`Format.detect`, `Format.files`);
locate.py asks the registry, and never the kind's name. A finder takes the run folder, the
`[source]` and its base (the folder, or the `path` it names under it), and returns the files in
reading order; it refuses a folder holding several runs (`SeveralRuns`, naming them).
"""

from __future__ import annotations

import re
from pathlib import Path

from fontaine_tui.core import exitnote
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.eventdirs import SeveralRuns, event_folders, run_files
from fontaine_tui.core.log.formats.mlflow import FILE_STORE, SQLITE_STORE
from fontaine_tui.core.log.formats.spec import SourceSpec
from fontaine_tui.core.log.formats.trackio import DB_EXT, stores
from fontaine_tui.core.readfile import open_regular, read_whole
from fontaine_tui.core.runfolder import (
    AMENDMENTS,
    ATTEMPTS,
    ENGINE_OUT,
    LOG,
    REVIEW,
    TELEMETRY,
)

HF_STATE = "trainer_state.json"
CSV_NAME = "metrics.csv"
WANDB = "wandb"  # the folder wandb.init writes its runs into
WANDB_RUN = re.compile(r"run-[^/]+\.wandb")  # a run's file: run-<id>.wandb
# the ledgers and the host's telemetry this console writes in a run folder: never another
# trainer's JSONL
OURS = (AMENDMENTS, REVIEW, "babysit.jsonl", ATTEMPTS, exitnote.NOTE, TELEMETRY)
CHECKPOINT = re.compile(r"checkpoint-([0-9]+)")
LIST_TRIES = 5  # listings of a run's files, when a file listed is gone by its reading
READ = 8 << 20


# -- detection: whether a folder holds a run of the kind --------------------------------------


def has_events(folder: Path) -> bool:
    return bool(event_folders(folder))


def trainer_state_here(folder: Path) -> bool:
    """Whether `folder` holds a Hugging Face Trainer's own record (trainer_state.json)."""
    return (folder / HF_STATE).exists() or any(folder.glob(f"checkpoint-*/{HF_STATE}"))


def has_mlflow(folder: Path) -> bool:
    return (folder / SQLITE_STORE).exists() or (folder / FILE_STORE).is_dir()


def has_trackio(folder: Path) -> bool:
    return bool(stores(folder))


def has_csv(folder: Path) -> bool:
    return (
        (folder / CSV_NAME).exists()
        or any(folder.glob(f"*/version_*/{CSV_NAME}"))
        or any(folder.glob(f"version_*/{CSV_NAME}"))
    )


def has_one_jsonl(folder: Path) -> bool:
    return len(jsonl_files(folder)) == 1


def has_wandb(folder: Path) -> bool:
    return bool(wandb_runs(folder))


# -- the files a [source] reads ---------------------------------------------------------------


def one(folder: Path, found: list[Path], what: str) -> Path:
    """The one file found; InputError when none, SeveralRuns naming them when several."""
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError(f"{folder}: no {what} here")
    rel = tuple(str(p.relative_to(folder)) or "." for p in found)
    raise SeveralRuns(
        f"{folder}: {len(found)} runs ({', '.join(rel[:6])}): set [source] path to one", rel
    )


def our_log(folder: Path, spec: SourceSpec, base: Path) -> list[Path]:
    return [base / LOG if base.is_dir() else base]


def event_paths(folder: Path, spec: SourceSpec, base: Path) -> list[Path]:
    return [e.path for e in run_files(base, spec.options.get("run", ""))]


def trainer_state(folder: Path, spec: SourceSpec, base: Path) -> list[Path]:
    return [base] if base.is_file() else [newest_state(base)]


def csv_file(folder: Path, spec: SourceSpec, base: Path) -> list[Path]:
    if base.is_file():
        return [base]
    found = (
        [base / CSV_NAME]
        if (base / CSV_NAME).exists()
        else sorted(base.glob(f"version_*/{CSV_NAME}"))
        or sorted(base.glob(f"*/version_*/{CSV_NAME}"))
    )
    return [one(base, found, CSV_NAME)]


def mlflow_store(folder: Path, spec: SourceSpec, base: Path) -> list[Path]:
    if base.is_file() or base.name == FILE_STORE:
        return [base]
    found = [p for p in (base / SQLITE_STORE, base / FILE_STORE) if p.exists()]
    return [one(base, found, f"{SQLITE_STORE} or {FILE_STORE}/")]


def jsonl_file(folder: Path, spec: SourceSpec, base: Path) -> list[Path]:
    return [base] if base.is_file() else [one(base, jsonl_files(base), "*.jsonl file")]


def wandb_file(folder: Path, spec: SourceSpec, base: Path) -> list[Path]:
    return [base] if base.is_file() else wandb_run(base, spec.options.get("run", ""))


def trackio_store(folder: Path, spec: SourceSpec, base: Path) -> list[Path]:
    if base.is_file():
        return [base]
    return [one(base, stores(base), f"trackio store (<project>{DB_EXT})")]


def printed_lines(folder: Path, spec: SourceSpec, base: Path) -> list[Path]:
    printed = base if spec.path else folder / ENGINE_OUT
    if not printed.is_file():
        raise InputError(f"{printed}: source.path: no such file (the printed lines to read)")
    return [printed]


def jsonl_files(folder: Path) -> list[Path]:
    """The JSONL files of a folder that are not this console's own (its ledgers)."""
    return sorted(p for p in folder.glob("*.jsonl") if p.name not in OURS)


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


def wandb_id(run_file: Path) -> str:
    """The run id a W&B run file is named by (`run-<id>.wandb`)."""
    return run_file.name[4:-6]


def _began(run_file: Path) -> str:
    """A run file's folder's name as it sorts by when the attempt began.

    That is `run-<time>-<id>` (`offline-` dropped): wandb names it by the second it began."""
    return run_file.parent.name.removeprefix("offline-")


def wandb_attempts(found: list[Path]) -> dict[str, list[Path]]:
    """The run files found, by run id, each id's in the order its attempts began.

    wandb writes a run resumed (`wandb.init(id=..., resume=...)`) into a folder of its own,
    its files named by the same id: one id is one run."""
    by_id: dict[str, list[Path]] = {}
    for run_file in found:
        by_id.setdefault(wandb_id(run_file), []).append(run_file)
    return {i: sorted(files, key=lambda f: (_began(f), str(f))) for i, files in by_id.items()}


def wandb_run(folder: Path, chosen: str) -> list[Path]:
    """The run files of the run of `folder` that [source] run names, or of the only one.

    A run is its id: its attempts' files, in the order they began. [source] run names it by
    its id, or by the folder of any of its attempts. Raises InputError naming the runs when
    there are several, or none is chosen."""
    every = wandb_attempts(wandb_runs(folder))
    found = (
        {
            i: files
            for i, files in every.items()
            if chosen == i or any(chosen == f.parent.name for f in files)
        }
        if chosen
        else every
    )
    if len(found) == 1:
        return next(iter(found.values()))
    shown = [files[0] for files in every.values()]
    names = ", ".join(f.parent.name if f.parent != folder else f.name for f in shown[:6])
    more = ", ..." if len(shown) > 6 else ""
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
