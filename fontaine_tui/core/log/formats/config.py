"""A run's config as its trainer recorded it: each format's params, hyperparameters, environment.

Each reader takes the run folder and its `[source]` and returns a `RunConfig`: the rows
`key = value` (nested keys dotted), the file or store read, and a note where something was not
read. The registry's `Format.config` names each kind's reader (registry.py); a kind with none
has no config to show. What is read:

- ours: prereg.json (the engine's argv, the preset's recipe and platform, the provenance);
- HF Trainer: trainer_state.json's settings (its log history left out); `training_args.bin`
  is a pickle and never read (unpickling runs code);
- Lightning's CSVLogger: hparams.yaml beside metrics.csv;
- MLflow: the chosen run's params and tags (a file store's `params/` and `tags/` files, the
  SQLite store's `params` and `tags` tables);
- W&B: the run's `files/config.yaml` where the run was synced, else the config records of its
  `.wandb` file (the run record's and each update after it);
- trackio: the chosen run's row of the store's `configs` table.

Every file is read within core/limits.py's bounds (`CONFIG_BYTES`, `CONFIG_DEPTH`, YAML
aliases refused) and each refusal is one line; every value is masked by core/secrets.py
(a secret-named key's value whole, a token's shape anywhere).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core import limits
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import SqliteError
from fontaine_tui.core.log.formats import mlflow, trackio, where
from fontaine_tui.core.log.formats.rows import FormatError
from fontaine_tui.core.log.formats.spec import SourceSpec
from fontaine_tui.core.log.formats.wandb import LogFramer, _fields
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.runfolder import PREREG
from fontaine_tui.core.secrets import mask_argv, mask_text, mask_tree

HPARAMS = "hparams.yaml"  # Lightning's loggers write it beside their metrics
WANDB_CONFIG = "config.yaml"  # in a W&B run's files/ folder, where it was synced
HF_ARGS = "training_args.bin"
MAX_ROWS = 5000  # rows shown of one config; past it, one line says how many were left out
VALUE_CHARS = 500  # characters of one value shown
OURS_KEYS = ("argv", "preset_name", "host", "launched_at", "provenance")
OURS_PRESET = ("recipe", "platform", "run")

Row = tuple[str, str]


@dataclass(frozen=True, slots=True)
class RunConfig:
    """What a run's config holds, as shown: its rows, where they were read, and what was not."""

    source: str  # the file or store read, in words ("" when none was found)
    rows: tuple[Row, ...] = ()
    note: str = ""  # one line: why it was not read, or what was left out


def _shown(value: object) -> str:
    if isinstance(value, str):
        text = value
    elif value is None:
        text = "null"
    elif isinstance(value, bool):
        text = str(value).lower()
    else:
        text = repr(value) if isinstance(value, float) else str(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 3] + "..."


def _flat(doc: object, prefix: str, out: list[Row]) -> None:
    """`doc`'s leaves as (dotted key, value) rows; a list of scalars is one row."""
    if isinstance(doc, Mapping) and doc:
        for k, v in doc.items():
            _flat(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(doc, list | tuple) and any(isinstance(v, Mapping | list) for v in doc):
        for i, v in enumerate(doc):
            _flat(v, f"{prefix}[{i}]", out)
    elif isinstance(doc, list | tuple):
        out.append((prefix, "[" + ", ".join(_shown(v) for v in doc) + "]"))
    else:
        out.append((prefix, "{}" if isinstance(doc, Mapping) else _shown(doc)))


def shown(doc: Mapping[str, object], source: str, note: str = "") -> RunConfig:
    """A parsed config as rows, every credential in it masked (core/secrets.py)."""
    rows: list[Row] = []
    try:
        limits.check_depth(doc, limits.CONFIG_DEPTH)
    except ValueError as exc:
        return RunConfig(source, (), f"{source}: {exc}; not shown")
    _flat(mask_tree(dict(doc)), "", rows)
    rows = [(mask_text(k), v) for k, v in rows]
    if len(rows) > MAX_ROWS:
        left = f"{len(rows) - MAX_ROWS} more rows left out (at most {MAX_ROWS} shown)"
        note = f"{note}; {left}" if note else left
        rows = rows[:MAX_ROWS]
    return RunConfig(source, tuple(rows), note)


def _bytes(path: Path) -> bytes:
    """A config file's bytes, at most CONFIG_BYTES (InputError, one line, past it)."""
    return read_whole(path, limits.CONFIG_BYTES)


def _mapping(path: Path, parse: str) -> Mapping[str, object]:
    """A config file read as a mapping (JSON or YAML); ValueError or InputError says why not."""
    raw = _bytes(path)
    doc = limits.json_loads(raw) if parse == "json" else limits.yaml_loads(raw)
    if doc is None:
        return {}
    if not isinstance(doc, Mapping):
        raise ValueError(f"expected a mapping at its top, got {type(doc).__name__}")
    limits.check_depth(doc, limits.CONFIG_DEPTH)
    return doc


def _refused(path: Path | str, exc: Exception) -> RunConfig:
    said = str(exc)
    return RunConfig(str(path), (), said if said.startswith(str(path)) else f"{path}: {said}")


def _file(path: Path, parse: str, note: str = "") -> RunConfig:
    if not path.is_file():
        return RunConfig("", (), f"no {path.name} in {path.parent}")
    try:
        doc = _mapping(path, parse)
    except (ValueError, InputError, OSError) as exc:
        return _refused(path, exc)
    return shown(doc, str(path), note)


# -- each format's reader: (run folder, [source]) -> RunConfig --------------------------------


def ours(folder: Path, spec: SourceSpec) -> RunConfig:
    """The engine's run: prereg.json's argv, provenance and the preset's recipe."""
    path = folder / PREREG
    if not path.is_file():
        return RunConfig("", (), f"no {PREREG} in {folder}")
    try:
        doc = _mapping(path, "json")
    except (ValueError, InputError, OSError) as exc:
        return _refused(path, exc)
    picked: dict[str, object] = {k: doc[k] for k in OURS_KEYS if k in doc}
    preset = doc.get("preset")
    if isinstance(preset, Mapping):
        picked.update({k: preset[k] for k in OURS_PRESET if k in preset})
    argv = picked.pop("argv", None)
    out = shown(picked, str(path))
    if isinstance(argv, list):  # one row: the command as it ran, masked as an argv
        line = " ".join(mask_argv([str(a) for a in argv]))
        out = RunConfig(out.source, (("argv", _shown(line)), *out.rows), out.note)
    return out


def hf_trainer(folder: Path, spec: SourceSpec) -> RunConfig:
    """trainer_state.json's settings; training_args.bin (a pickle) is never read."""
    try:
        path = where.trainer_state(folder, spec, folder)[0]
    except (FormatError, InputError, OSError, IndexError) as exc:
        return RunConfig("", (), str(exc) or f"no {where.HF_STATE} in {folder}")
    note = ""
    if any(p.name == HF_ARGS for p in (path.parent / HF_ARGS, folder / HF_ARGS) if p.is_file()):
        note = f"{HF_ARGS} not read: a pickle (unpickling runs code); report_to writes it readable"
    try:
        doc = _mapping(path, "json")
    except (ValueError, InputError, OSError) as exc:
        return _refused(path, exc)
    settings = {k: v for k, v in doc.items() if k != "log_history"}
    return shown(settings, str(path), note)


def lightning(folder: Path, spec: SourceSpec) -> RunConfig:
    """hparams.yaml beside the metrics.csv read (Lightning's CSVLogger writes both)."""
    try:
        csv = where.csv_file(folder, spec, folder)[0]
    except (FormatError, InputError, OSError, IndexError) as exc:
        return RunConfig("", (), str(exc) or f"no {where.CSV_NAME} in {folder}")
    return _file(csv.parent / HPARAMS, "yaml")


def _mlflow_files(run: Path, sub: str) -> dict[str, object]:
    out: dict[str, object] = {}
    base = run / sub
    for top, _, names in os.walk(base):
        for name in sorted(names):
            path = Path(top) / name
            out[path.relative_to(base).as_posix()] = _bytes(path).decode("utf-8", "replace")
    return out


def _mlflow_sqlite(db: limits.Connection, run_id: str, table: str) -> dict[str, object]:
    try:
        rows = db.execute(f"SELECT key, value FROM {table} WHERE run_uuid = ?", (run_id,))
        return {str(k): "" if v is None else str(v) for k, v in rows.fetchall()}
    except SqliteError as exc:
        raise FormatError(mlflow.locked(exc) or f"cannot read the {table} table ({exc})") from None


def mlflow_run(folder: Path, spec: SourceSpec) -> RunConfig:
    """The chosen MLflow run's params and tags (tags under `tags.`)."""
    exp, run = spec.options.get("experiment", ""), spec.options.get("run", "")
    try:
        store = where.mlflow_store(folder, spec, folder)[0]
        if mlflow.is_file_store(store):
            info = mlflow.choose(mlflow.file_store_runs(store), str(store), exp, run)
            at = store / info.experiment / info.run_id
            params, tags = _mlflow_files(at, "params"), _mlflow_files(at, "tags")
        else:
            db = mlflow.connect(store)
            try:
                info = mlflow.choose(mlflow.sqlite_runs(db), str(store), exp, run)
                params = _mlflow_sqlite(db, info.run_id, "params")
                tags = _mlflow_sqlite(db, info.run_id, "tags")
            finally:
                db.close()
    except (FormatError, InputError, OSError, IndexError) as exc:
        return RunConfig("", (), str(exc))
    return shown({**params, "tags": tags}, f"{store} (MLflow run {info.describe()})")


def _wandb_items(buf: bytes, out: dict[str, object]) -> None:
    """A ConfigRecord's updates (ConfigItem: key 1, nested_key 2, value_json 16) into `out`."""
    for f, w, _, raw in _fields(buf):
        if f in (1, 2) and w == 2:
            key, path, value = "", [], ""
            for g, u, _, x in _fields(raw):
                if g == 1 and u == 2:
                    key = x.decode("utf-8", "replace")
                elif g == 2 and u == 2:
                    path.append(x.decode("utf-8", "replace"))
                elif g == 16 and u == 2:
                    value = x.decode("utf-8", "replace")
            name = key or ".".join(path)
            if f == 2:
                out.pop(name, None)
                continue
            try:
                out[name] = limits.json_loads(value)
            except ValueError:
                out[name] = value


def wandb_records(run_file: Path) -> dict[str, object]:
    """The config a W&B run file's records set: the run record's, then each update's."""
    out: dict[str, object] = {}
    notes: list[str] = []
    framer = LogFramer(lambda where_, why: notes.append(f"{where_}: {why}"))
    for _, buf in framer.feed(read_whole(run_file)):
        for f, w, _, raw in _fields(buf):
            if f == 17 and w == 2:  # the run record: its config is field 4
                for g, u, _, x in _fields(raw):
                    if g == 4 and u == 2:
                        _wandb_items(x, out)
            elif f == 5 and w == 2:  # a config record (wandb.config.update)
                _wandb_items(raw, out)
    return out


def wandb_run(folder: Path, spec: SourceSpec) -> RunConfig:
    """The W&B run's config: files/config.yaml where synced, else its records."""
    try:
        run_file = where.wandb_file(folder, spec, folder)[-1]
    except (FormatError, InputError, OSError, IndexError) as exc:
        return RunConfig("", (), str(exc))
    synced = run_file.parent / "files" / WANDB_CONFIG
    try:
        if synced.is_file():
            doc = _mapping(synced, "yaml")
            config = {
                k: v.get("value") if isinstance(v, Mapping) and "value" in v else v
                for k, v in doc.items()
                if k != "_wandb"
            }
            return shown(config, str(synced))
        records = wandb_records(run_file)
    except (ValueError, InputError, OSError) as exc:
        return _refused(synced if synced.is_file() else run_file, exc)
    records.pop("_wandb", None)
    return shown(records, f"{run_file} (its config records)")


def trackio_run(folder: Path, spec: SourceSpec) -> RunConfig:
    """The chosen trackio run's row of the store's `configs` table."""
    try:
        store = where.trackio_store(folder, spec, folder)[0]
        db = mlflow.connect(store)
        try:
            run = trackio.choose(trackio.store_runs(db), "source.run", spec.options.get("run", ""))
            got = db.execute("SELECT config FROM configs WHERE run_id = ?", (run.run_id,))
            row = got.fetchone()
        finally:
            db.close()
    except SqliteError as exc:
        return RunConfig("", (), f"cannot read the configs table ({exc})")
    except (FormatError, InputError, OSError, IndexError) as exc:
        return RunConfig("", (), str(exc))
    where_ = f"{store} (trackio run {run.describe()})"
    if row is None:
        return RunConfig(where_, (), "this run logged no config")
    raw = row[0] if isinstance(row[0], bytes) else str(row[0]).encode()
    if len(raw) > limits.CONFIG_BYTES:
        return RunConfig(where_, (), f"{where_}: its config is {len(raw)} bytes, over the bound")
    try:
        doc = limits.json_loads(raw)
    except ValueError as exc:
        return _refused(where_, exc)
    if not isinstance(doc, Mapping):
        return RunConfig(where_, (), f"{where_}: its config is not a mapping")
    return shown(doc, where_)
