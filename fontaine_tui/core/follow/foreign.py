"""A run another trainer writes, followed live: its transport's bytes through its decoder.

The local transport's bytes (`LocalRun.follow_files`) go through the run's format decoder
(core/log/formats) into records, yielded as `Batch.records`, so the console, `attach --plain` and
the verdict read it as they read ours. The transport knows no format. This module is where the two
meet.

- event files: every `events.out.tfevents.*` of the run's folder and of the sub-folders
  add_scalars and add_hparams write, each decoded from its own byte offset as it grows (a
  torn last record waits for its end; eventrun.py joins the folders and reports restarts); a
  file truncated below what was read is decoded again from its start (the steps already in
  the store are not repeated).
- `trainer_state.json`, `metrics.csv`: rewritten whole, so each change is read whole (a read
  that catches a rewrite half-done fails to parse and is retried at the next change); the
  newest `checkpoint-*/trainer_state.json` is looked up again as checkpoints appear.
- JSONL: appended lines.
- W&B run files (`run-<id>.wandb`): appended records, each file from its own byte offset
  (wandb writes them in 32 KiB blocks, or each `x_transaction_log_flush_interval`). A run
  resumed into a folder of its own (`wandb.init(id=..., resume=...)`) is followed attempt
  after attempt through one decoder, as the cold read reads them (`_attempts`).
- MLflow and trackio stores: read whole (a SQLite store read-only) when their files' sizes or
  times move, checked every CHECK_S, and every second anyway; new steps only, and an MLflow
  run's end from its status (an "end" or "error" event).
- printed lines ([source] kind "lines"): appended lines, the torn last one held until its
  newline.

A step's values may come in more than one write, so the last step read is held until the
source shows it complete (laststep.py); polled.py polls a source read whole. A finished
foreign run replayed is replay.py's ForeignReplay.

Its size: one concept over some 660 lines, following one foreign run. Each way of following
above (event folders, whole rewrites, appended files, W&B attempts, stores) feeds the same
decoder and holds the same last step; they are kept beside the one chunk-to-batch step they
share rather than split by kind.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Protocol

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import Batch, Chunk
from fontaine_tui.core.follow.eventrun import EventRun, events_of
from fontaine_tui.core.follow.laststep import quiet, settle
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.follow.polled import poll_whole, stamps
from fontaine_tui.core.log.formats.base import Decoder, Whole, decoder_notices, odd_values
from fontaine_tui.core.log.formats.eventdirs import EVENTS, SeveralRuns, run_root
from fontaine_tui.core.log.formats.kept import keep
from fontaine_tui.core.log.formats.locate import files
from fontaine_tui.core.log.formats.registry import (
    BY_RECORD,
    BY_STATUS,
    EVENTS_DIRS,
    NEWEST,
    Format,
    Store,
    find,
)
from fontaine_tui.core.log.formats.rows import FormatError
from fontaine_tui.core.log.formats.source import SourceSpec, decoder
from fontaine_tui.core.log.formats.tfrecord import FramingError
from fontaine_tui.core.log.formats.wandb import WandbDecoder
from fontaine_tui.core.log.formats.where import LIST_TRIES, our_log, wandb_id
from fontaine_tui.core.log.oddvalues import NONE as NO_ODD
from fontaine_tui.core.log.oddvalues import OddValues
from fontaine_tui.core.log.records import Event, Record
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.runfolder import LOG

MLFLOW_POLL_S = 1.0  # a store is read whole at least this often (checked each CHECK_S)
SETTLE_S = MLFLOW_POLL_S  # the longest a followed step is held before it goes out
# a W&B attempt's file unchanged this long, without its exit record, is done once a later
# attempt of its run is there (a killed attempt writes no exit record)
ATTEMPT_QUIET_S = 1.0
# why a W&B run's follow ends where its attempts cannot be read as the cold read reads them
_READ_WHOLE = "the run is followed live no further (`verdict` reads it whole)"


SEVERAL = re.compile(r"\b(?:[2-9]|[1-9][0-9]+) (?:W&B )?runs\b")  # "2 runs and none chosen"


def permanent_error(exc: BaseException) -> bool:
    """Whether a source's error is for good, not a run yet to start.

    Such an error is several runs in its folder or store and none chosen (waiting would never
    end it)."""
    text = str(exc)
    return (
        isinstance(exc, SeveralRuns)
        or "writers logged into" in text
        or (bool(SEVERAL.search(text)) and "[source] run" in text)
    )


def at_once(base: Path) -> None:
    """Refuse a run whose event files were written by two writers at once, before any is followed.

    Raises InputError when the event files already in a run's folder were written by two writers
    at once (the cold read's rule, eventdirs.one_run)."""
    from fontaine_tui.core.log.formats.cold import load_source

    files_there = [p for p in base.rglob(f"{EVENTS}*") if p.is_file()] if base.is_dir() else []
    if len({p.parent for p in files_there}) < len(files_there):  # two files in one folder
        load_source(base, SourceSpec("tensorboard"))


def _matcher(name: str) -> Callable[[str], bool]:
    """The file a kind follows (event files: eventrun.py's `events_of`): the one named."""
    return lambda n: n == name


class FileTransport(Protocol):
    """What a foreign run needs of a transport.

    The transport is LocalRun, or SshRun (polling over its shared connection)."""

    label: str

    def follow_files(
        self, match: Callable[[str], bool], under: str = ""
    ) -> AsyncIterator[Chunk]: ...

    def follow(self, name: str = LOG, history: bool | None = None) -> AsyncIterator[Batch]: ...

    async def read_bytes(self, name: str) -> bytes | None: ...

    async def close(self) -> None: ...


class _Decoding:
    """The decoders of a foreign run's files, and what was said of them so far."""

    def __init__(self, spec: SourceSpec) -> None:
        self.spec = spec
        self.decoders: dict[str, Decoder] = {}
        self.told: dict[str, list[str]] = {}  # what each file's decoder said it did not apply
        self.counted = NO_ODD  # the eval values not numbers sent, all files together
        self.settled = True  # no step held since the last quiet poll
        self.last: dict[str, bytes] = {}  # each file read whole: its last read

    def quiet(self) -> Batch | None:
        """The steps each decoder still holds, complete now that no file changed for a poll."""
        if self.settled:
            return None
        self.settled = True
        held = [record for dec in self.decoders.values() for record in quiet(dec)]
        return Batch([], 1, records=tuple(held)) if held else None

    def decoder_for(self, chunk: Chunk) -> Decoder:
        """The chunk's file's decoder: a new one for a new file, or one appended to read anew.

        Bytes, or the file's end, may leave a step held until the next quiet poll."""
        if chunk.data or chunk.at_end:
            self.settled = False
        dec = self.decoders.get(chunk.name)
        if dec is None or (chunk.restart and not dec.whole):
            dec = self.decoders[chunk.name] = decoder(self.spec)
        return dec

    def news(self, dec: Decoder, chunk: Chunk) -> list[str]:
        """What the file's decoder says that it did not say before, the file read anew first."""
        notes = decoder_notices(dec, chunk.name)
        news = [n for n in notes if n not in self.told.get(chunk.name, ())]
        self.told[chunk.name] = notes
        if chunk.restart and chunk.offset == 0 and not dec.whole:
            news.insert(0, f"{chunk.name} was truncated or replaced: read again")
        return news

    def odd_news(self) -> OddValues | None:
        """The eval values not numbers, all files together, when they changed (None: not)."""
        odd = sum((odd_values(d) for d in self.decoders.values()), NO_ODD)
        fresh, self.counted = odd if odd != self.counted else None, odd
        return fresh


class _EventFolders:
    """A TensorBoard run's folders, each followed by a pump of its own into one queue.

    A folder's chunk goes in with the event its pump waits on: a file is read on once its
    chunk is taken (and the batch made of it handed on), as one folder's would be."""

    def __init__(self, run: ForeignRun) -> None:
        self.run = run
        self.queue: asyncio.Queue[tuple[Path, Chunk, asyncio.Event]] = asyncio.Queue()
        self.pumps: dict[Path, asyncio.Task[None]] = {}
        self.chosen = run.spec.options.get("run", "")
        path = Path(run.spec.path)
        self.base = path if path.is_absolute() else run.folder / run.spec.path
        self.said = ""  # the last reason there is no run folder yet, said once
        self.root: Path | None = None  # the run's folder, once found

    async def _pump(self, folder: Path, match: Callable[[str], bool]) -> None:
        run = self.run
        under = str(folder.relative_to(run.folder)) if folder != run.folder else ""
        async for chunk in run.transport.follow_files(match, under):
            taken = asyncio.Event()
            await self.queue.put((folder, chunk, taken))
            await taken.wait()

    def look(self) -> str:
        """Follow every folder of the run not followed yet (the run's own as `root`).

        Returns a note to show, "" when there is no news. An error for good is kept as the
        run's `refused`."""
        found, why = self._find()
        self.root = found or self.root
        if not why or why == self.said:
            return ""
        self.said = why
        return f"waiting: {why}"

    def _find(self) -> tuple[Path | None, str]:
        """The run's folder and its folders now pumped, or None and why there is none yet."""
        try:
            found, folders, one = self._layout()
        except (InputError, OSError) as exc:
            self.run._refuses(exc)
            return None, str(exc)
        if not self.pumps and not one and not self.chosen:  # files there: the cold read's rule
            try:
                at_once(self.base)
            except InputError as exc:
                if self.run._refuses(exc):
                    return None, str(exc)
        for folder in folders:
            if folder not in self.pumps:
                self.pumps[folder] = asyncio.create_task(
                    self._pump(folder, events_of(one, self.chosen))
                )
        return found, ""

    def _layout(self) -> tuple[Path, list[Path], str]:
        """The run's folder, the folders it writes in, and the one file [source] names.

        The name is "" where every event file of those folders is the run's."""
        if self.base.is_file():
            return self.base.parent, [self.base.parent], self.base.name
        found, folders = run_root(self.base)
        return found, folders, ""

    async def close(self) -> None:
        """Stop every pump."""
        for task in self.pumps.values():
            task.cancel()
        await asyncio.gather(*self.pumps.values(), return_exceptions=True)


class ForeignRun:
    """A RunSource for a foreign run folder, on this machine or on another.

    On another machine it reads through `transport` (an SshRun). The files are found by the
    preset's [source]: event files in the folder or its `path`, or a named trainer_state.json,
    metrics.csv or JSONL file."""

    def __init__(
        self,
        folder: str | Path,
        spec: SourceSpec,
        poll_s: float | None = None,
        transport: FileTransport | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.spec = spec
        self.remote = transport is not None
        self.transport: FileTransport = transport or LocalRun(self.folder, poll_s=poll_s)
        self.poll_s = poll_s
        # how its kind is followed (registry.py); a kind no record names is followed as a
        # file, its decoder refusing it at the first bytes
        self.format = find(spec.kind) or Format(spec.kind, our_log)
        self.label = (
            f"{transport.label} ({spec.kind})"
            if transport is not None
            else f"local {self.folder} ({spec.kind})"
        )
        self._closed = asyncio.Event()
        # why the run cannot be followed at all (several runs and none chosen, or over SSH no
        # file named): shown as a note, the follow ends, and `attach --plain` exits 2 with it
        self.refused = ""

    @property
    def records_end(self) -> bool:
        """Whether this source says when its run ended.

        A W&B exit record or an MLflow run's status says it. An MLflow store read over SSH
        carries no status. Where the source says it, a follow to the end waits for that
        word. Elsewhere the final read ends it (its record's `ends`, registry.py)."""
        ends = self.format.ends
        return ends == BY_RECORD or (ends == BY_STATUS and not self.remote)

    async def read_bytes(self, name: str) -> bytes | None:
        return await self.transport.read_bytes(name)

    async def close(self) -> None:
        self._closed.set()
        await self.transport.close()

    async def follow(self, name: str = LOG) -> AsyncIterator[Batch]:
        """The run's records as they are written.

        With `name` other than the log, that file's lines, as our own run's are read: a
        launched [command] prints into the folder's engine.out.log, and the console shows its
        tail as it shows the engine's."""
        if name != LOG:
            async for batch in self.transport.follow(name, history=False):
                yield batch
            return
        async for batch in self._by_kind():
            yield batch

    def _by_kind(self) -> AsyncIterator[Batch]:
        """The follow the run's kind takes.

        Over SSH; a store, or the newest checkpoint's file, read whole again and again; event
        folders; else files appended to."""
        fmt = self.format
        if self.remote:
            return self._remote(fmt)
        if fmt.store is not None:
            return self._store(fmt.store)
        if fmt.follow == NEWEST:
            return self._newest()
        if fmt.follow == EVENTS_DIRS:
            return self._event_run()
        return self._appended()

    async def _appended(self) -> AsyncIterator[Batch]:
        """A run whose files are appended to: its first file waited for, then its folder's."""
        said = ""
        while True:  # until the run's first file is there
            try:
                first = files(self.folder, self.spec)[0]
                break
            except InputError as exc:
                if permanent_error(exc):
                    self.refused = str(exc)
                    yield Batch([], 1, note=str(exc))
                    return
                if str(exc) != said:
                    said = str(exc)
                    yield Batch([], 1, note=f"waiting: {exc}")
            try:
                await asyncio.wait_for(self._closed.wait(), self.poll_s or 0.25)
                return
            except TimeoutError:
                pass
        if isinstance(decoder(self.spec), WandbDecoder):
            async for batch in self._attempts(first):
                yield batch
            return
        async for batch in self._files(_matcher(first.name), self._under(first)):
            yield batch

    def _under(self, path: Path) -> str:
        """The folder of `path`, relative to the run's folder ("" for the run's own)."""
        where = path.parent
        return str(where.relative_to(self.folder)) if where != self.folder else ""

    async def _attempts(self, first: Path) -> AsyncIterator[Batch]:
        """A W&B run's attempts' files, one after the other, through one decoder.

        wandb writes a run resumed (`wandb.init(id=..., resume=...)`) into a folder of its
        own; the cold read reads every attempt's file in the order they began, the decoder
        told of each next one (`next_file`). Here the attempt followed is read to its end;
        once a later attempt of the run is listed (where.py), and the one followed wrote its
        exit record or did not change for ATTEMPT_QUIET_S, the follow goes on into the later
        one, so the records are the cold read's. An earlier attempt's file written on after
        the follow left it, an attempt listed before one already read, or a later attempt's
        file replaced, cannot be read so: the follow ends with why (`refused`)."""
        read = _Decoding(self.spec)
        left: list[tuple[Path, int]] = []  # the attempts read, and the bytes read of each
        path: Path | None = first
        loop = asyncio.get_running_loop()
        while path is not None:
            size, ended, changed = 0, False, loop.time()
            later: Path | None = None
            chunks = self.transport.follow_files(_matcher(path.name), self._under(path))
            try:
                async for chunk in chunks:
                    if not chunk.idle:
                        if chunk.restart and left:  # the attempts before would be lost
                            self.refused = f"{path}: truncated or replaced: {_READ_WHOLE}"
                            yield Batch([], 1, note=self.refused)
                            return
                        batch = await self._batch(read, chunk, self._under(path))
                        size, changed = chunk.offset + len(chunk.data), loop.time()
                        if batch is not None:
                            ended = ended or any(
                                isinstance(r, Event) and r.event in ("end", "error")
                                for r in batch.records
                            )
                            yield batch
                        continue
                    held = read.quiet()  # no change for a poll: the held steps are complete
                    if held is not None:
                        yield held
                    later, why = self._later_attempt(left, path)
                    if why:
                        self.refused = why
                        yield Batch([], 1, note=why)
                        return
                    if later is not None and (ended or loop.time() - changed >= ATTEMPT_QUIET_S):
                        break
            finally:  # a follow left: its file's waker closed now
                close = getattr(chunks, "aclose", None)
                if close is not None:
                    await close()
            if later is None:  # closed
                return
            left.append((path, size))
            dec = read.decoders.get(path.name)
            if isinstance(dec, WandbDecoder):
                dec.next_file(later.parent.name)
            path = later

    def _later_attempt(self, left: list[tuple[Path, int]], path: Path) -> tuple[Path | None, str]:
        """The run's attempt after `path` where one is listed, and why the follow cannot go on.

        `left`: the attempts read before `path`, with the bytes read of each. A listing that
        fails (a file removed as it was listed) is looked at again at the next poll."""
        for done, size in left:
            try:
                grown = os.stat(done).st_size != size
            except OSError:
                grown = True
            if grown:
                return None, f"{done}: written on after {path.parent.name} began: {_READ_WHOLE}"
        try:
            listed = files(self.folder, self.spec)
        except (InputError, OSError):
            return None, ""
        order = [done for done, _ in left] + [path]
        if listed[: len(order)] != order:
            return None, (
                f"{path.parent.parent}: an attempt of W&B run {wandb_id(path)} began before "
                f"{path.parent.name} but was listed after it was read: {_READ_WHOLE}"
            )
        return (listed[len(order)] if len(listed) > len(order) else None), ""

    async def _event_run(self) -> AsyncIterator[Batch]:
        """A TensorBoard run's records, from the event files of its folder and sub-folders.

        The sub-folders are those add_scalars and add_hparams write, searched for again as
        they appear. Each file is decoded with its folder's key prefix (eventdirs.py). A
        step's probe logged in several folders goes out as one. A new file of a folder
        starting below the step the folder reached is a restart (the earlier files' events
        from there on are dropped). Two files of one folder written at once are two runs:
        this is reported, and the run is followed no further."""
        folders = _EventFolders(self)
        events = EventRun(self.spec.fields, 0.0)  # held steps go out at the first quiet poll
        loop = asyncio.get_running_loop()
        every = self.poll_s or 0.25
        next_look = 0.0
        try:
            while not self._closed.is_set():
                if loop.time() >= next_look:
                    note = folders.look()
                    if self.refused:
                        yield Batch([], 1, note=self.refused)
                        return
                    next_look = loop.time() + every * 4
                    if note:
                        yield Batch([], 1, note=note)
                try:
                    folder, chunk, taken = await asyncio.wait_for(folders.queue.get(), every)
                except TimeoutError:
                    continue
                batch = self._taken(events, folders.root, folder, chunk, loop.time())
                if batch is not None:
                    yield batch
                taken.set()
                if events.stopped:
                    return
        finally:
            await folders.close()

    def _taken(
        self, events: EventRun, root: Path | None, folder: Path, chunk: Chunk, now: float
    ) -> Batch | None:
        """The batch a folder's chunk makes.

        Two runs in one folder stop the follow: `refused` is kept before the batch goes out (a
        reader may stop there)."""
        assert root is not None  # a folder is followed once the run's is found
        batch = events.take(root, folder, chunk, now)
        if events.stopped:
            self.refused = batch.note if batch is not None else "several runs"
        return batch

    async def _remote(self, fmt: Format) -> AsyncIterator[Batch]:
        """Over SSH: the files [source] names, through the transport's polling.

        Where [source] names no path, the file (or store) is its record's `remote`; a kind with
        none (a JSONL log) is refused (`refused`: `attach --plain` exits 2 with it)."""
        path = self.spec.path.strip("/")
        if fmt.store is not None:
            async for batch in self._remote_store(fmt.store, path or fmt.remote):
                yield batch
            return
        if fmt.follow == EVENTS_DIRS:
            under, name = path, ""
        else:
            under, _, name = (path or fmt.remote).rpartition("/")
            if not name:  # no folder is searched for one over SSH: refused, as several runs
                self.refused = (
                    f"{self.transport.label}: source.path: name the {fmt.name} file to follow "
                    "on the remote host (only a file named in [source] is followed over SSH)"
                )
                yield Batch([], 1, note=self.refused)
                return
        match = (
            events_of("", self.spec.options.get("run", ""))
            if fmt.follow == EVENTS_DIRS
            else _matcher(name)
        )  # over SSH: the folder [source] names, no deeper
        async for batch in self._files(match, under):
            yield batch

    async def _remote_store(self, store: Store, path: str) -> AsyncIterator[Batch]:
        """A store on another host, read as a snapshot each second (an MLflow SQLite store).

        The read-only snapshot of its rows goes over the transport's shared connection, and
        only new steps go out. A store read on its own host only is said so."""
        snapshot = getattr(self.transport, store.via, None) if store.via else None
        feed = store.snapshot
        if snapshot is None or feed is None or not store.over_ssh(path):
            yield Batch([], 1, note=store.local_only)
            await self._closed.wait()
            return

        dec = decoder(self.spec)

        async def read() -> tuple[list[Record], object]:
            doc = await snapshot(path)
            where = f"{self.transport.label}/{path}"
            return feed(doc, where, self.spec.options, dec), repr(doc)

        async for batch in self._poll_whole(dec, read, MLFLOW_POLL_S):
            yield batch

    async def _files(self, match: Callable[[str], bool], under: str) -> AsyncIterator[Batch]:
        """The records of the files `match` names, each file through a decoder of its own."""
        read = _Decoding(self.spec)
        async for chunk in self.transport.follow_files(match, under):
            if chunk.idle:  # no file changed for one poll: the steps still held are complete
                held = read.quiet()
                if held is not None:
                    yield held
                continue
            batch = await self._batch(read, chunk, under)
            if batch is not None:
                yield batch

    async def _batch(self, read: _Decoding, chunk: Chunk, under: str) -> Batch | None:
        """The batch a file's chunk makes through its decoder (None: no news)."""
        dec = read.decoder_for(chunk)
        try:
            records = await self._records(dec, chunk, under, read.last)
        except (FormatError, FramingError) as exc:
            if not dec.whole:  # framing lost: say so, the rest of this file is unread
                kept = tuple(getattr(exc, "records", ()))  # what came before the break
                return Batch([], 1, note=f"{chunk.name}: {exc}", records=kept)
            return None  # a whole file caught mid-rewrite: the next change reads it again
        news = read.news(dec, chunk)
        fresh = read.odd_news()
        if records or news or fresh is not None:
            return Batch([], 1, note="; ".join(news), records=tuple(records), odd=fresh)
        return None

    async def _records(
        self, dec: Decoder, chunk: Chunk, under: str, last: dict[str, bytes]
    ) -> list[Record]:
        """The records a file's new bytes complete.

        A file rewritten in place is read whole again at each change; one appended to, from
        its new bytes (the writer flushed at its end: its last step is complete). A file
        read whole that its writer started again without the rows read before (base.py's
        `Whole`) has its last read kept in the run folder first (kept.py)."""
        if not dec.whole:
            records = dec.feed(chunk.data) if chunk.data else []
            if chunk.at_end:
                records += settle(dec)
            return records
        if not chunk.at_end:
            return []
        rel = f"{under}/{chunk.name}" if under else chunk.name
        whole = await self.transport.read_bytes(rel)
        if not whole:
            return []
        again = dec.started_again if isinstance(dec, Whole) else 0
        records = dec.feed(whole)
        lost = isinstance(dec, Whole) and dec.started_again > again
        if lost and not self.remote and rel in last:
            await asyncio.to_thread(keep, self.folder, rel, last[rel])
        last[rel] = whole
        return records + settle(dec)

    async def _newest(self) -> AsyncIterator[Batch]:
        """trainer_state.json from the newest checkpoint (looked up again at each read)."""
        dec = decoder(self.spec)

        async def read() -> tuple[list[Record], object]:
            for tries_left in range(LIST_TRIES - 1, -1, -1):
                path = files(self.folder, self.spec)[0]  # the newest, unless [source] names it
                try:
                    data = await asyncio.to_thread(read_whole, path)
                except FileNotFoundError:  # that checkpoint-N/ was removed since: list again
                    if not tries_left:
                        raise
                    continue
                return dec.feed(data), (path, data)
            raise AssertionError("unreachable")  # pragma: no cover

        async def stamp() -> object:
            return await asyncio.to_thread(stamps, [files(self.folder, self.spec)[0]])

        async for batch in self._poll_whole(dec, read, self.poll_s or 0.5, stamp):
            yield batch

    async def _store(self, store: Store) -> AsyncIterator[Batch]:
        """A store (MLflow, trackio) read whole when its files' sizes or times move."""
        dec = decoder(self.spec)
        stamped: list[Callable[[], list[Path]]] = []  # the files of the run read last

        async def read() -> tuple[list[Record], object]:
            path = files(self.folder, self.spec)[0]
            got = await asyncio.to_thread(store.read, path, self.spec.options, dec)
            stamped[:] = [got.stamped]
            return got.records, got.same

        async def stamp() -> object:
            if not stamped:
                return None
            listed = stamped[0]
            return await asyncio.to_thread(lambda: stamps(listed()))

        async for batch in self._poll_whole(dec, read, MLFLOW_POLL_S, stamp):
            yield batch

    def _refuses(self, exc: BaseException) -> bool:
        """Whether `exc` ends the follow for good (permanent_error); its words kept as `refused`."""
        if permanent_error(exc):
            self.refused = str(exc)
            return True
        return False

    def _poll_whole(
        self,
        dec: Decoder,
        read: Callable[[], Awaitable[tuple[list[Record], object]]],
        every: float,
        stamp: Callable[[], Awaitable[object]] | None = None,
    ) -> AsyncIterator[Batch]:
        """polled.poll_whole for this run's source, until it is closed."""
        return poll_whole(dec, read, every, stamp, self._closed, self.spec.kind, self._refuses)
