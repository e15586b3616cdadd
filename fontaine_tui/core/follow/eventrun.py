"""A TensorBoard run's event files and folders, followed live as one run.

The chunks of every event file of its folder and sub-folders (core/log/formats/eventdirs.py) go in
and records come out, as the cold read reads the same files:

- a decoder per file, its tags keyed with its folder's prefix (`loss_train/loss`);
- a step's probes from several folders (add_scalars' writers) joined into one probe (the
  store takes a probe holding the first's values and more in the first's place);
- a restart (a SessionLog START, or a folder's new file starting below the step the
  folder reached) reported once for the run as a resume; an older file's values past it, read
  after it, dropped, as TensorBoard drops them;
- two files of one folder written at once: two runs, reported, and followed no further.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from fontaine_tui.core.follow.base import Batch, Chunk
from fontaine_tui.core.log.formats.eventdirs import EVENTS, chosen, prefix_of
from fontaine_tui.core.log.formats.grouper import FieldMap
from fontaine_tui.core.log.formats.tensorboard import TensorBoardDecoder
from fontaine_tui.core.log.formats.tfrecord import FramingError
from fontaine_tui.core.log.records import Event, Probe, Record


def events_of(name: str, run: str) -> Callable[[str], bool]:
    """The event files followed in a folder: the one named, else those [source] run keeps."""
    if name:
        return lambda n: n == name
    return lambda n: n.startswith(EVENTS) and chosen(n, run)


class EventRun:
    def __init__(self, fields: FieldMap, settle_s: float) -> None:
        self.fields = fields
        self.settle_s = settle_s
        self.decoders: dict[Path, TensorBoardDecoder] = {}
        self.newest: dict[Path, Path] = {}  # folder -> the file begun last
        self.joined: dict[int, dict[Path, Probe]] = {}  # step -> its probe from each folder
        self.restarts: list[int] = []  # the run's restarts: the step each resumed to
        self.epoch: dict[Path, int] = {}  # a file -> the restarts its records come after
        self.folder_epoch: dict[Path, int] = {}
        self.dropped = 0
        self.last_data = -math.inf
        self.settled = True
        self.stopped = False

    def take(self, root: Path, folder: Path, chunk: Chunk, now: float) -> Batch | None:
        """One chunk of a file of `folder` (of the run whose folder is `root`)."""
        if chunk.idle:  # quiet for settle_s: the steps still held are complete
            return self._quiet(now)
        path = folder / chunk.name
        if chunk.data:
            self.last_data, self.settled = now, False
        dec = self.decoders.get(path)
        note = ""
        if dec is None or chunk.restart:
            dec, note = self._begin(root, folder, chunk, dec is not None)
        else:
            two = self._two_writers(folder, path, chunk)
            if two is not None:
                return two
        try:
            records = dec.feed(chunk.data) if chunk.data else []
            if chunk.at_end:  # the writer flushed: its last step's train record now
                dec.grouper.settle_train(records)
        except FramingError as exc:  # framing lost: the rest of this file is unread
            kept = self._apply(getattr(exc, "records", ()), path)
            return Batch([], 1, note=f"{chunk.name}: {exc}", records=tuple(kept))
        return self._batch(self._apply(records, path), note)

    def _quiet(self, now: float) -> Batch | None:
        """The steps every decoder still holds, once the run was quiet for settle_s."""
        if self.settled or now - self.last_data < self.settle_s:
            return None
        self.settled = True
        held: list[Record] = []
        for p, d in self.decoders.items():
            step_out: list[Record] = []
            d.grouper.flush(step_out)
            held += self._apply(step_out, p)
        return self._batch(held)

    def _begin(
        self, root: Path, folder: Path, chunk: Chunk, again: bool
    ) -> tuple[TensorBoardDecoder, str]:
        """A new decoder for a file begun, or read `again` (truncated or replaced), and its note.

        Its steps start past those of the folder's other files."""
        path = folder / chunk.name
        note = ""
        if again and chunk.offset == 0:
            note = f"{chunk.name} was truncated or replaced: read again"
        others = [d for p, d in self.decoders.items() if p.parent == folder and p != path]
        dec = self.decoders[path] = TensorBoardDecoder(
            self.fields,
            prefix=prefix_of(root, folder),
            before=max((d.grouper.top for d in others), default=-1),
        )
        dec.next_file(chunk.name, dec.prefix)
        self.epoch[path] = self.folder_epoch.get(folder, 0)
        if not chunk.restart:
            self.newest[folder] = path  # begun after the folder's others
        return dec, note

    def _two_writers(self, folder: Path, path: Path, chunk: Chunk) -> Batch | None:
        """The run stopped, when an older file of the folder is still written beside the newest.

        Two runs at once are not merged. None: the chunk is not such a write."""
        if not chunk.data or path == self.newest.get(folder, path):
            return None
        newer = self.newest[folder]
        if self.decoders[newer].grouper.top < 0:
            return None
        self.stopped = True
        return Batch(
            [],
            1,
            note=f"{folder}: source.run: two writers log into this "
            f"folder at once ({chunk.name} and {newer.name}): several runs, "
            "not merged; set [source] run to one file's name, or a part of "
            "it (its host, pid or host.pid)",
        )

    def _batch(self, records: list[Record], note: str = "") -> Batch | None:
        if self.dropped:
            note = "; ".join(
                n
                for n in (
                    note,
                    f"{self.dropped} value(s) of the run before its "
                    "restart, read after it, dropped",
                )
                if n
            )
            self.dropped = 0
        return Batch([], 1, note=note, records=tuple(records)) if records or note else None

    def _apply(self, records: Sequence[Record], path: Path) -> list[Record]:
        """A file's records as they count for the run.

        Its restarts are reported once, an older file's records past a restart are dropped,
        and each probe is joined with the other folders' for its step."""
        out: list[Record] = []
        for rec in records:
            e = self.epoch.get(path, 0)
            if isinstance(rec, Event) and rec.event == "resume":
                if self._resumed(rec, path, e):
                    out.append(rec)
                continue
            if any(r < rec.step for r in self.restarts[e:]):
                self.dropped += 1  # the older run's, past a restart read before it
                continue
            out.append(self._joined(rec, path.parent) if isinstance(rec, Probe) else rec)
        return out

    def _resumed(self, rec: Event, path: Path, e: int) -> bool:
        """A file's restart, past its `e` restarts before: whether it is news for the run.

        False: another folder reported this restart already."""
        folder = path.parent
        self.epoch[path] = e + 1
        self.folder_epoch[folder] = max(self.folder_epoch.get(folder, 0), e + 1)
        if e < len(self.restarts):
            if rec.step >= self.restarts[e]:
                return False
            self.restarts[e] = rec.step
        else:
            self.restarts.append(rec.step)
        self.joined = {s: m for s, m in self.joined.items() if s <= rec.step}
        return True

    def _joined(self, rec: Probe, folder: Path) -> Probe:
        """A folder's probe joined with the other folders' probes of its step."""
        mine = self.joined.setdefault(rec.step, {})
        mine[folder] = rec
        if len(mine) == 1:
            return rec
        fields: dict[str, float] = {}
        bits: dict[str, int] = {}
        for p in mine.values():
            fields.update(p.fields)
            bits.update(p.bits)
        return replace(rec, fields=MappingProxyType(fields), bits=MappingProxyType(bits))
