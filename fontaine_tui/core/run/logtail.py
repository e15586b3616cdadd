"""What a run folder says after a start: its log's and output's tail, its checkpoints, who ran.

The tail of train_log.jsonl (last step, last event) and engine.out.log (the last printed
line, and the last one that names a failed allocation) are read without reading a long log
whole; the newest complete checkpoint; what the launch started (the engine or a preset's own
[command]) and the last step such a command's trainer logged.

What the log and the output quote is masked here, where it is first read (core/secrets.py):
every surface after this one (an exit's words, the exited-early alert, attempts.jsonl's
`detail`, babysit.jsonl, the notifications) is given masked text. They are not blinded here:
an exit's cause is read from them as printed, and each surface that shows them hides, on a
blinded run, those that may quote the read (core/run/exits.py's `shown_detail`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.records import (
    Checkpoint,
    Event,
    Probe,
    Record,
    TrainPoint,
    parse_line,
)
from fontaine_tui.core.readfile import open_regular
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.secrets import mask_text
from fontaine_tui.core.text import literal

TAIL_BYTES = 256 << 10
# what the engine prints when an allocation fails: on the GPU (torch.OutOfMemoryError and
# its text), or in host memory (MemoryError and its kin, numpy's "Unable to allocate", glibc
# and ENOMEM); GPU_OOM is tried first ("OutOfMemoryError" holds "MemoryError")
GPU_OOM = re.compile(
    r"CUDA out of memory|HIP out of memory|OutOfMemoryError|"
    r"CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED|"
    r"MPS backend out of memory"
)
HOST_OOM = re.compile(
    r"MemoryError|Cannot allocate memory|can't allocate memory|"
    r"not enough memory|Unable to allocate|std::bad_alloc|"
    r"malloc of size \d+ failed",
    re.IGNORECASE,
)
OOM = re.compile(
    ("|".join((GPU_OOM.pattern, HOST_OOM.pattern, "out of memory"))).encode(), re.IGNORECASE
)
CHECKPOINT_DIR = re.compile(r"step-(\d+)$")


def newest_checkpoint(folder: RunFolder) -> tuple[int, Path] | None:
    """(step, path) of the newest complete checkpoint (meta.json is written last)."""
    best = None
    root = folder.checkpoints
    if not root.is_dir():
        return None
    for p in root.iterdir():
        m = CHECKPOINT_DIR.match(p.name)
        if m and (p / "meta.json").is_file():
            step = int(m.group(1))
            if best is None or step > best[0]:
                best = (step, p)
    return best


@dataclass(frozen=True, slots=True)
class LogTail:
    last_step: int  # newest step with a train or eval record
    last_time: float | None
    last_event: str  # "end", "error", "start", "resume" or ""
    detail: str  # the last event's words, credentials masked as `output`'s
    checkpoint_step: int | None
    oom: bool
    output: str  # the last line the engine printed (engine.out.log), credentials masked
    oom_line: str = ""  # the last printed line that names a failed allocation


def read_tail(
    folder: RunFolder, nbytes: int = TAIL_BYTES, since: tuple[int, int] = (0, 0)
) -> LogTail:
    """The end of train_log.jsonl and engine.out.log without reading a long log whole.

    `since` = (log offset, output offset) where this start began: events and output from an
    earlier start (before a resume) do not explain this start's exit."""
    log = _read_log_tail(folder, nbytes, since[0])
    _, out = _tail_bytes(folder.engine_out, 16 << 10, since[1])
    oom = bool(OOM.search(log.detail.encode())) or bool(OOM.search(out))
    lines = [ln for ln in out.splitlines() if ln.strip()]
    last_line = lines[-1] if lines else b""
    oom_line = next((ln for ln in reversed(lines) if OOM.search(ln)), b"") if oom else b""
    return LogTail(
        log.last_step,
        log.last_time,
        log.event,
        mask_text(log.detail),
        log.checkpoint_step,
        oom,
        _shown(last_line),
        _shown(oom_line),
    )


@dataclass(slots=True)
class _LogSeen:
    """What the log's tail has said so far, read a record at a time (`take`)."""

    last_step: int = 0
    last_time: float | None = None
    event: str = ""  # the last event of this start's, and its words
    detail: str = ""
    checkpoint_step: int | None = None

    def take(self, rec: Record | None, this_start: bool) -> None:
        """Read one record; `this_start`: it was written after this start began."""
        if isinstance(rec, (TrainPoint, Probe)):
            self.last_step, self.last_time = max(self.last_step, rec.step), rec.time
        elif isinstance(rec, Event):
            if rec.event == "resume":
                self.last_step = rec.step
            if this_start:
                self.event, self.detail = rec.event, rec.detail
        elif isinstance(rec, Checkpoint):
            self.checkpoint_step = rec.step


def _read_log_tail(folder: RunFolder, nbytes: int, since: int) -> _LogSeen:
    """The last step, event and checkpoint in the last `nbytes` of train_log.jsonl.

    Events before offset `since` (an earlier start's) are not this start's last event."""
    seen = _LogSeen()
    pos, data = _tail_bytes(folder.log, nbytes)
    for raw in data.split(b"\n")[:-1]:  # the last piece is torn or empty
        here, pos = pos, pos + len(raw) + 1
        try:
            rec = parse_line(raw)
        except ValueError:
            continue
        seen.take(rec, here >= since)
    return seen


# the engine's line of what it does before its first record (engine/status.py)
STATUS = b"engine: status: "
STATUS_BYTES = 16 << 10  # a status line is the engine's last words while it prepares


def engine_status(engine: object) -> str:
    """What a launched engine last said it is doing (engine/status.py), "" when nothing.

    Read from the end of its engine.out.log, from where its start began (`since`): a status
    of an earlier start (before a resume) is not this one's. An engine with no local folder
    (one on another host) or a trainer that prints none says nothing."""
    folder = getattr(engine, "folder", None)
    if not isinstance(folder, RunFolder):
        return ""
    since = getattr(engine, "since", (0, 0))
    _, out = _tail_bytes(folder.engine_out, STATUS_BYTES, since[1])
    for line in reversed(out.split(b"\n")[:-1]):  # whole lines only
        if line.startswith(STATUS):
            return _shown(line[len(STATUS) :])
    return ""


def _shown(line: bytes) -> str:
    """A line the engine or a command printed, as every surface quotes it.

    Its credentials are masked (core/secrets.py) before it is cut: no cut leaves part of one."""
    return literal(mask_text(line.decode("utf-8", "replace").strip()))[:300]


def _tail_bytes(path: Path, nbytes: int, offset: int = 0) -> tuple[int, bytes]:
    """(file offset of the first whole line returned, bytes to EOF)."""
    try:
        with open_regular(path) as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(offset, size - nbytes)
            fh.seek(start)
            data = fh.read(max(0, size - start))
    except (OSError, InputError):  # gone, unreadable, or a pipe: no tail
        return offset, b""
    if start > offset:  # drop the partial first line
        cut = data.find(b"\n") + 1
        start, data = start + cut, data[cut:]
    return start, data


def output_between(
    folder: RunFolder, since: int, until: int, nbytes: int = 64 << 10
) -> list[bytes]:
    """The whole lines engine.out.log holds from offset `since` to `until` (its last `nbytes`).

    As printed: a surface quotes one as `shown_line` says."""
    try:
        with open_regular(folder.engine_out) as fh:
            start = max(since, until - nbytes)
            fh.seek(start)
            data = fh.read(max(0, until - start))
    except (OSError, InputError):  # gone, unreadable, or a pipe: nothing
        return []
    lines = data.split(b"\n")[:-1]  # whole lines only: the last piece is torn or empty
    if start > since and lines:
        lines = lines[1:]  # the partial first line
    return lines


def shown_line(line: bytes) -> str:
    """A printed line as every surface quotes it: credentials masked, cut (`_shown`)."""
    return _shown(line)


def command_step(folder: RunFolder) -> int:
    """The last step a launched [command]'s trainer logged, read as its frozen [source] says.

    0 when it cannot be read."""
    from fontaine_tui.core.run.attached import read_attached

    look = read_attached(str(folder.root))
    return look.store.last_step if look is not None else 0


def frozen_blind(folder: RunFolder) -> tuple[tuple[str, ...], bool]:
    """(the metrics its rules read and its labels, whether its preset is blind) of a run folder.

    For a surface that shows an exit's words without reading the verdict (`runs`, `stop`,
    the line after a console closes): a blind preset's run hides the trainer's words that
    may quote the read (core/run/exits.py's `shown_detail`) whether or not the read is
    final yet. A prereg.json that cannot be read counts as blind (no metric known)."""
    from fontaine_tui.core.verdict.blindwords import rule_metrics
    from fontaine_tui.core.verdict.prereg import read_prereg

    if not folder.prereg.exists():
        return (), False
    try:
        preset = read_prereg(folder).frozen_preset()
    except (OSError, InputError):
        return (), True
    return rule_metrics(preset.verdict, preset.labels), preset.verdict.blind


def launched_who(folder: RunFolder) -> str:
    """What a run folder's launch started: "command" or "engine".

    "command" when its prereg.json froze a preset's own [command], else "engine"."""
    from fontaine_tui.core.verdict.prereg import read_prereg

    try:
        prov = read_prereg(folder).provenance
    except (OSError, InputError):
        return "engine"
    return "command" if "command" in prov else "engine"
