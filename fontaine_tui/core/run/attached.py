"""A registered run another trainer writes (attached, no process of ours), read from its files.

Its log is read whole (core/log/formats cold read) with the preset it was attached with,
where that still loads, else as its folder's contents say. What the run is doing:

- ended: its source said so (an `end` event), or its final read is in (a probe at the
  preset's endpoint); failed: an `error` event;
- running: a file of its log was written within the quiet limit (3 x the median interval
  between its records, at least QUIET_MIN_S);
- quiet: nothing written for longer, and no end said: it may be slow, stopped or gone.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.locate import detect_foreign
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.checks import PresetError
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.runfolder import LOG, PREREG
from fontaine_tui.core.verdict.blindwords import shown_words

QUIET_MIN_S = 120.0
QUIET_FACTOR = 3.0
WALK_MAX = 2000  # entries of a store folder (an MLflow mlruns/) read for its newest write


@dataclass(frozen=True, slots=True)
class AttachedRead:
    state: str  # "running" | "quiet" | "ended" | "failed"
    store: RunStore
    preset: Preset | None
    kind: str
    detail: str
    said: str = ""  # the trainer's words that end `detail` (its end or error event's)

    def shown(self, metrics: Sequence[str] = (), blinded: bool = False) -> str:
        """`detail` as a surface shows it.

        Blinded, the trainer's words that may quote the read are hidden
        (core/verdict/blindwords.py)."""
        if not self.said or not self.detail.endswith(self.said):
            return self.detail
        head = self.detail[: len(self.detail) - len(self.said)]
        return head + shown_words(self.said, metrics, blinded)


def entry_preset(name: str, sha256: str) -> Preset | None:
    """The preset the run was registered with (name or path), if it still loads as the same one.

    The same one means the same `sha256`."""
    if not name:
        return None
    try:
        preset = load_preset(name)
    except (PresetError, InputError, OSError):
        return None
    if sha256 and preset.sha256 != sha256:
        return None  # changed since: its bounds are not the run's
    return preset


def frozen_preset(folder: Path) -> Preset | None:
    """The preset frozen in the folder's prereg.json (a launched [command]'s run), if any."""
    from fontaine_tui.core.runfolder import RunFolder
    from fontaine_tui.core.verdict.prereg import read_prereg

    if not (folder / PREREG).is_file():
        return None
    try:
        return read_prereg(RunFolder(folder)).frozen_preset()
    except (PresetError, InputError, OSError):
        return None


def _newest(paths: tuple[Path, ...]) -> float | None:
    """The newest modification time of the files.

    For a folder, of what is in it; for an SQLite store, its write-ahead log too."""
    times = [t for p in paths for t in _times_of(p)]
    return max(times) if times else None


def _times_of(path: Path) -> list[float]:
    """The modification times of a file and its write-ahead log; for a folder, of its files too."""
    times = [t for q in (path, path.with_name(path.name + "-wal")) if (t := _mtime(q)) is not None]
    return times + _walk_times(path) if path.is_dir() else times


def _walk_times(folder: Path) -> list[float]:
    """The modification times of the files in a folder, walked until past WALK_MAX of them."""
    times: list[float] = []
    seen = 0
    for root, dirs, names in os.walk(folder):
        seen += len(names)
        times += [t for n in names if (t := _mtime(os.path.join(root, n))) is not None]
        if seen > WALK_MAX:
            dirs.clear()
    return times


def _mtime(path: str | Path) -> float | None:
    """A file's modification time; None where it cannot be read (gone, denied)."""
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def quiet_limit(store: RunStore) -> float:
    """How long without a write still reads as running.

    That is QUIET_FACTOR x the median interval between its recent records, at least
    QUIET_MIN_S."""
    times = [t for t in store.columns["time"][-50:] if t == t]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False) if b >= a]
    return max(QUIET_MIN_S, QUIET_FACTOR * statistics.median(gaps)) if gaps else QUIET_MIN_S


def read_attached(
    run_dir: str, preset_name: str = "", preset_sha256: str = "", now: float | None = None
) -> AttachedRead | None:
    """The state of the run in `run_dir` (registered with that preset), read from its files.

    None when the folder holds a log of ours (or none known): `registry.live_status` reads
    those."""
    from fontaine_tui.core.log.formats.cold import load_source

    folder = Path(run_dir)
    found = _foreign_source(folder, preset_name, preset_sha256)
    if found is None:
        return None
    spec, preset = found
    now = time.time() if now is None else now
    try:
        loaded = load_source(folder, spec)
    except (InputError, OSError) as exc:
        return AttachedRead("quiet", RunStore(), preset, spec.kind, f"not read: {exc}")
    store = loaded.store
    written = _newest(loaded.files)
    return _said_end(store, preset, spec.kind) or _by_writes(store, preset, spec.kind, written, now)


def _foreign_source(
    folder: Path, preset_name: str, preset_sha256: str
) -> tuple[SourceSpec, Preset | None] | None:
    """How the run is read, and with which preset.

    The preset's [source] where it has one, else the foreign log the folder holds (read without
    the preset). None: a log of ours, or none."""
    preset = frozen_preset(folder) or entry_preset(preset_name, preset_sha256)
    if preset is not None and preset.foreign and preset.source is not None:
        return preset.source, preset
    if not (folder / LOG).exists() and (kind := detect_foreign(folder)):
        return SourceSpec(kind), None
    return None


def _said_end(store: RunStore, preset: Preset | None, kind: str) -> AttachedRead | None:
    """The run ended (or failed) as its last event says, or as its final read being in says."""
    last = store.events[-1] if store.events else None
    if last is not None and last.event in ("end", "error"):
        state = "ended" if last.event == "end" else "failed"
        return AttachedRead(
            state,
            store,
            preset,
            kind,
            f"{last.event} at step {last.step}: {last.detail}",
            last.detail,
        )
    if preset is not None and store.has_probe(preset.verdict.endpoint_step):
        return AttachedRead(
            "ended",
            store,
            preset,
            kind,
            f"its final read is in (step {preset.verdict.endpoint_step})",
        )
    return None


def _by_writes(
    store: RunStore, preset: Preset | None, kind: str, written: float | None, now: float
) -> AttachedRead:
    """Running or quiet, by how long ago its log was last written against the quiet limit."""
    if written is None:
        return AttachedRead("quiet", store, preset, kind, "no file written yet")
    age = max(0.0, now - written)
    limit = quiet_limit(store)
    if age <= limit:
        return AttachedRead("running", store, preset, kind, f"{kind} log written {age:.0f} s ago")
    return AttachedRead(
        "quiet",
        store,
        preset,
        kind,
        f"{kind} log not written for {age:.0f} s (limit {limit:.0f} s) and no end said",
    )
