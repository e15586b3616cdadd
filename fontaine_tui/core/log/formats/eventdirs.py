"""The folders and event files of one TensorBoard run, and the name each tag is read under.

A writer's own folder holds its event files; two of its methods write sub-folders of it:

- `add_scalars("loss", {"train": a, "eval": b}, step)`: one writer per dict key, in
  `<logdir>/loss_train/` (torch.utils.tensorboard) or `<logdir>/loss/train/` (tensorboardX),
  each logging the tag `loss`. TensorBoard shows the run `loss_train` with the tag `loss`:
  read here as the key `loss_train/loss` (`loss/train/loss` for tensorboardX), the
  sub-folder's path and the tag joined by "/".
- `add_hparams(hparams, metrics)`: `<logdir>/<time.time()>/` holding each metric under its
  own tag. TensorBoard's HParams dashboard names a metric by its tag alone, and the folder's
  name changes each run, so these keep their tags (`hparam/accuracy`).

So a folder holding event files, with sub-folders holding more, is one run. Folders side by
side (`version_0/`, `version_1/`, no event file above them) are several runs: one is chosen
by [source] path.

Several event files in one folder are one run's, read in the order their writers began,
unless their writers wrote at the same time: those are several runs, and [source] run (a
dot-separated part of the file name, `events.out.tfevents.<time>.<host>.<pid>...`: its
host, pid, `host.pid`, or the whole name) chooses one. A later file that starts below the
step the earlier ones reached is the run restarted into its folder: TensorBoard's data
server (tensorboard-data-server, its default reader) then keeps, of each series, only the
newer values from that step on, and the reader here drops the earlier files' events from
that step on (the run's whole timeline, as a SessionLog START drops it). A later file that
starts at the very step the earlier ones reached is not taken for a restart: two values for
one step stay conflicting evidence.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.errors import InputError

EVENTS = "events.out.tfevents."
DEPTH = 3  # sub-folders looked into below the folder named
HPARAMS_FOLDER = re.compile(r"[0-9]{9,}\.[0-9]+")  # add_hparams's default: str(time.time())


@dataclass(frozen=True, slots=True)
class EventFile:
    path: Path
    prefix: str  # what the tags of this file are keyed under ("" or "loss_train/")


class SeveralRuns(InputError):
    """A folder holding several runs of one kind.

    `found` are their paths, relative to the folder (each one a [source] path that reads that
    run alone)."""

    def __init__(self, message: str, found: tuple[str, ...]) -> None:
        super().__init__(message)
        self.found = found


def event_folders(root: Path, depth: int = DEPTH) -> list[Path]:
    """Folders under `root` (itself included) that hold event files, nearest first."""
    found: list[Path] = []
    frontier = [root]
    for _ in range(depth + 1):
        nxt: list[Path] = []
        for folder in frontier:
            try:
                entries = sorted(folder.iterdir())
            except OSError:
                continue
            if any(p.name.startswith(EVENTS) and p.is_file() for p in entries):
                found.append(folder)
            nxt += [p for p in entries if p.is_dir() and not p.name.startswith(".")]
        frontier = nxt
    return found


def event_time(name: str) -> int:
    """The creation time in an event file's name (events.out.tfevents.<time>.<host>...)."""
    head = name[len(EVENTS) :].split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def prefix_of(root: Path, folder: Path) -> str:
    """The key prefix of a run's sub-folder: its path under the run's folder, and "/".

    There is none for the run's own folder and add_hparams's time-named one."""
    if folder == root:
        return ""
    rel = folder.relative_to(root).as_posix()
    return "" if HPARAMS_FOLDER.fullmatch(rel) else rel + "/"


def run_root(base: Path) -> tuple[Path, list[Path]]:
    """The one run's folder under `base` and its folders holding event files (its own first).

    Raises InputError when there is none, or several runs side by side."""
    found = event_folders(base)
    tops = [f for f in found if not any(t in f.parents for t in found)]  # each a run's own
    if len(tops) == 1:
        return tops[0], _within(tops[0], found)
    if not tops:
        raise InputError(f"{base}: no {EVENTS}* event file here")
    rel = tuple(str(p.relative_to(base)) or "." for p in tops)
    raise SeveralRuns(
        f"{base}: {len(tops)} runs ({', '.join(rel[:6])}): set [source] path to one", rel
    )


def _within(top: Path, found: list[Path]) -> list[Path]:
    """The folders found that are `top` or under it, in the order found."""
    return [f for f in found if f == top or top in f.parents]


def chosen(name: str, run: str) -> bool:
    """Whether an event file belongs to the [source]'s `run`.

    `run` is the whole name or a dot-separated part of what follows `events.out.tfevents.`
    (`host`, `pid`, `host.pid`, the time)."""
    return not run or name == run or f".{run}." in f".{name[len(EVENTS) :]}."


def run_files(base: Path, run: str = "") -> list[EventFile]:
    """The event files of the run under `base` (a folder, or one event file).

    The run's own folder's files come first, each folder's in name order. `run` keeps only the
    files it names."""
    if base.is_file():
        return [EventFile(base, "")]
    root, folders = run_root(base)
    out: list[EventFile] = []
    for folder in folders:
        out += _folder_files(root, folder, run)
    if not out:
        present = sorted(p.name for p in root.iterdir() if p.name.startswith(EVENTS))
        raise InputError(
            f"{root}: source.run: no event file matches {run!r} (here: "
            f"{', '.join(present[:6]) or 'none'})"
        )
    return out


def _folder_files(root: Path, folder: Path, run: str) -> list[EventFile]:
    """A folder's event files that `run` names, in the order they were begun.

    None where the folder cannot be listed."""
    try:
        # not only regular files: a pipe or a device so named is refused by its read
        names = [p for p in folder.iterdir() if p.name.startswith(EVENTS) and not p.is_dir()]
    except OSError:
        return []
    prefix = prefix_of(root, folder)
    return [
        EventFile(p, prefix)
        for p in sorted(names, key=lambda p: (event_time(p.name), p.name))
        if chosen(p.name, run)
    ]


@dataclass(frozen=True, slots=True)
class Span:
    """What one event file logged: its steps and wall times, low and high (None: nothing)."""

    path: Path
    steps: tuple[int, int] | None
    walls: tuple[float, float] | None


def span(
    path: Path, by_tag: Mapping[str, tuple[array, array, array]], before: Mapping[str, int]
) -> Span:
    """A file's span from the columns it appended to (`before`: their lengths before it)."""
    lo_s: int | None = None
    hi_s: int | None = None
    lo_w, hi_w = math.inf, -math.inf
    for tag, (steps, walls, _) in by_tag.items():
        n0 = before.get(tag, 0)
        if len(steps) <= n0:
            continue
        new_s, new_w = steps[n0:], walls[n0:]
        lo, hi = min(new_s), max(new_s)
        lo_s = lo if lo_s is None else min(lo_s, lo)
        hi_s = hi if hi_s is None else max(hi_s, hi)
        lo_w, hi_w = min(lo_w, min(new_w)), max(hi_w, max(new_w))
    if lo_s is None or hi_s is None:
        return Span(path, None, None)
    return Span(path, (lo_s, hi_s), (lo_w, hi_w) if lo_w <= hi_w else None)


def by_first_write(
    listed: list[EventFile], spans: list[Span]
) -> tuple[list[EventFile], list[Span]]:
    """Each folder's files in the order their writers began (their first value's wall time).

    The name's time is in whole seconds, and within one second the names do not give the order
    (`...pid.10` sorts before `...pid.6`)."""
    first: dict[Path, int] = {}
    for k, e in enumerate(listed):
        first.setdefault(e.path.parent, k)

    def began(i: int) -> tuple[int, float, int]:
        walls = spans[i].walls
        return first[listed[i].path.parent], walls[0] if walls else -math.inf, i

    order = sorted(range(len(listed)), key=began)
    return [listed[i] for i in order], [spans[i] for i in order]


def one_run(spans: list[Span]) -> bool:
    """Whether a later file of a folder restarts the run below a step the earlier ones reached.

    TensorBoard then drops the earlier files' events from there on. Raises InputError when two
    files of one folder were written at once: two writers, several runs."""
    restarted = False
    by_folder: dict[Path, list[Span]] = {}
    for s in spans:
        if s.steps is not None:
            by_folder.setdefault(s.path.parent, []).append(s)
    for folder, found in by_folder.items():
        restarted |= _folder_restarts(folder, found)
    return restarted


def _folder_restarts(folder: Path, found: list[Span]) -> bool:
    """Whether a later file of the folder starts below a step its earlier ones reached.

    InputError where two of them were written at once."""
    restarted = False
    for j, later in enumerate(found[1:], 1):
        for earlier in found[:j]:
            if _overlap(earlier, later):
                raise InputError(_at_once(folder, earlier, later))
        top = max(s.steps[1] for s in found[:j] if s.steps is not None)
        if later.steps is not None and later.steps[0] < top:
            restarted = True
    return restarted


def _overlap(earlier: Span, later: Span) -> bool:
    """The later file was begun before the earlier one's last write: both written at once."""
    return bool(later.walls and earlier.walls and later.walls[0] < earlier.walls[1])


def _at_once(folder: Path, a: Span, b: Span) -> str:
    def said(s: Span) -> str:
        lo, hi = s.steps or (0, 0)
        return f"{s.path.name} (steps {lo} to {hi})"

    return (
        f"{folder}: source.run: two writers logged into this folder at once, "
        f"{said(a)} and {said(b)}: several runs, not merged; set [source] run to one "
        f"file's name, or a part of it (its host, pid or host.pid)"
    )
