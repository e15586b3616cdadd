"""Follow a run folder on another machine over the shared SSH connection (core/ssh).

Each (re)connect sends the remote shell one script that checks the file's device:inode, size,
first bytes and last-read bytes against what we had, then streams it, sending no chunk before
the file is seen to still hold the bytes read before it; the stream stops when the channel's
stdin closes, so a cut leaves no orphan. Files that are not lines are polled (follow_files),
an MLflow store is read as a snapshot there.

Its size: one concept over some 640 lines, a run folder read over the shared connection. The
follow's steps (one connection, its rotated parts, its answer, its stream), the polled files
and the store's snapshot each speak the protocol of remote.py's scripts and share the
connection's state (its reconnects, the lines cut for their length), so they are kept in one
module.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from fontaine_tui.core import children
from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import (
    CHUNK,
    HEAD,
    MIN_GAP,
    Batch,
    Chunk,
    finish,
)
from fontaine_tui.core.follow.remote import (
    FILES_SCRIPT,
    FOLLOW_SCRIPT,
    LIST_SCRIPT,
    MLFLOW_SCRIPT,
    RANGE_SCRIPT,
    STREAM_PY,
    mlflow_program,
)
from fontaine_tui.core.limits import (
    computed_refusal,
    irregular_refusal,
    json_loads,
    sqlite_refusal_of,
)
from fontaine_tui.core.log.lines import LINE_CAP, LineCutter
from fontaine_tui.core.readfile import not_regular
from fontaine_tui.core.runfolder import LOG
from fontaine_tui.core.ssh.connection import SshConnection, SshError, remote_command
from fontaine_tui.core.ssh.destination import SshTarget

# the stream says on stderr that the file no longer holds what was sent, the name watch that
# another file with data has the name: either way we reconnect and let the header check decide
REMOTE_FILES_POLL = 0.5  # follow_files over SSH: a listing of the folder this often
_TAIL_CHANGE = re.compile(rb"@fontaine (truncated|moved)")


# the store reader's exits (MLFLOW_SCRIPT) that say what is missing on the host
_STORE_EXITS = {4: "no such MLflow store", 6: "no python3 on the host to read the store with"}


def _store_failure(rc: int, out: bytes, err: bytes) -> str:
    """Why the host's store reader exited `rc`.

    That is what is missing there, its refusal (exit 7), or the last line it said."""
    if rc in _STORE_EXITS:
        return _STORE_EXITS[rc]
    if rc == 7:
        return refused_there(out)
    last = (err.decode("utf-8", "replace").strip().splitlines() or [""])[-1][:160]
    return f"cannot read (exit {rc})" + (f": {last}" if last else "")


def refused_there(reply: bytes) -> str:
    """What the store's reader on the host refused (mlflow_program's exit 7), as said here.

    A store, or a file SQLite opens beside it, that is not a regular file; what the store
    computes on a read (its views, virtual tables, virtual generated columns), or its SQLite
    error (locked, left mid-write with a hot journal, a read past its budget or
    past SQLITE_HEAP), in core/limits.py's words for the same refusal of a store here."""
    try:
        doc = json_loads(reply)
        if isinstance(doc.get("irregular"), list):
            said, mode = doc["irregular"]
            return irregular_refusal(str(said)[:200], int(mode))
        if isinstance(doc.get("computed"), list):
            kind, names = doc["computed"]
            return computed_refusal(str(kind), [str(n) for n in names][:3])
        code, message = doc["sqlite"]
        code, message = (code if isinstance(code, int) else None), str(message)[:200]
    except (ValueError, KeyError, TypeError, AttributeError):
        return f"the host's refusal is not JSON ({reply[:80]!r})"
    return sqlite_refusal_of(code, message) or f"cannot read ({message})"


# the script's answers, each with the length its line must have (0: any)
_ANSWERS = {b"ok": 5, b"absent": 0, b"special": 3, b"norun": 0, b"denied": 0}


def _answer(header: list[bytes]) -> bytes:
    """The follow script's answer ("ok", "absent", ...) in its first line's words.

    b"" for no answer of ours: ssh failed, or a login script's noise came instead."""
    if header[:1] != [b"@fontaine"] or len(header) < 2:
        return b""
    need = _ANSWERS.get(header[1])
    if need is None or (need and len(header) != need):
        return b""
    return header[1]


def _rotated_part(header: list[bytes]) -> tuple[bytes, bytes, str] | None:
    """A rotated part the follow script sends before its answer, as (kind, size, segment).

    "@fontaine rest N NAME": the rest of the file we were reading (kind b"rest");
    "@fontaine next N KIND NAME": a segment rotated after it, b"copy" (the stream's next
    part, copied out) or b"file" (a file of its own). None for any other line."""
    if header[:2] == [b"@fontaine", b"rest"] and len(header) >= 4:
        return b"rest", header[2], b" ".join(header[3:]).decode("utf-8", "replace")
    if header[:2] == [b"@fontaine", b"next"] and len(header) >= 5:
        kind = b"copy" if header[3] == b"copy" else b"file"
        return kind, header[2], b" ".join(header[4:]).decode("utf-8", "replace")
    return None


def _read_from(had: tuple[int, str] | None, size: int, ino: str) -> tuple[int, bool]:
    """Where a listed file is read from, and whether that is byte 0 again.

    `had`: (bytes read, inode) of the file under that name before (None: none). It is read
    again when it is shorter than what was read, or another file has its name."""
    if had is None:
        return 0, False
    pos, was = had
    if was != ino or size < pos:
        return 0, True
    return pos, False


def _rotated_segments(listing: bytes, name: str) -> list[str]:
    """The rotated segments of `name` in the folder's listing, oldest first.

    One per number: where both name.N and name.N.gz are listed, name.N."""
    from fontaine_tui.core.runfolder import ROTATED

    found: dict[int, str] = {}
    for raw in listing.decode("utf-8", "replace").splitlines():
        m = ROTATED.fullmatch(raw, len(name)) if raw.startswith(name) else None
        if m is not None and (int(m.group(1)) not in found or not m.group(2)):
            found[int(m.group(1))] = raw
    return [found[n] for n in sorted(found, reverse=True)]


def _skipped(cutter: LineCutter, long: list[int], skipped: list[int]) -> str:
    """Lines cut for their length: kept once each in `skipped`, and the note saying so."""
    if not long:
        return ""
    skipped += [n for n in long if n not in skipped]
    return cutter.skip_note(long)


def _lost(said: list[bytes]) -> str:
    """Why a stream ended that no change of the file ended: the last line ssh said."""
    if not said:
        return "connection lost"
    return f"connection lost ({said[-1].decode('utf-8', 'replace').strip()[:160]})"


@dataclass
class _Followed:
    """Where the follow of one file over SSH stands, from one connection to the next."""

    cutter: LineCutter
    delay: float  # the pause before the next reconnect
    skipped: list[int]  # lines cut for their length (SshRun.skipped_lines[name])
    ident: str = "-"  # the file's device:inode, as the last answer said
    head: bytes = b""  # its first bytes read (up to HEAD)
    waiting: bool = False  # the file is not there, and that was said
    # after a copy-truncate, until a line of the new content is complete: the state before
    # it, to reconnect with (a second truncate before the stream's first read puts the new
    # content in a rotated copy; the header finds it from the old file's bytes, not from
    # nothing read)
    before_truncate: tuple[LineCutter, bytes] | None = None
    header: list[bytes] = field(default_factory=list)  # the script's answer
    error: str | None = ""  # why the last connection ended; None: the next one at once

    def back_before_truncate(self) -> None:
        """Reconnect from before a truncate when no line of the new content was complete."""
        if self.before_truncate is not None and self.cutter.offset <= 0:
            self.cutter, self.head = self.before_truncate[0].copy(), self.before_truncate[1]
        self.before_truncate = None

    def mark(self, note: str) -> Batch:
        """A note at where the follow stands."""
        return Batch([], self.cutter.next_line, note=note, end_offset=self.cutter.offset)


class SshRun(SshConnection):
    """A run folder on another machine, its files followed over the shared connection.

    For example SshRun(SshTarget("gpu1", "/runs/a"))."""

    def __init__(
        self,
        target: SshTarget,
        ssh_options: Sequence[str] = (),
        line_cap: int = LINE_CAP,
        alive_interval: int = 5,
        alive_count: int = 3,
        persist_s: int = 60,
        backoff: tuple[float, float] = (0.25, 5.0),
        connect_timeout: int = 10,
        ssh: str = "ssh",
        min_gap_s: float = MIN_GAP,
        remote_python: bool = True,
    ) -> None:
        super().__init__(
            target,
            ssh_options,
            alive_interval=alive_interval,
            alive_count=alive_count,
            persist_s=persist_s,
            backoff=backoff,
            connect_timeout=connect_timeout,
            ssh=ssh,
        )
        self.remote_python = remote_python  # False: the shell loop even where python3 is
        self.min_gap_s = min_gap_s
        self.label = target.label
        self.line_cap = line_cap
        self.reconnects = 0
        self.skipped_lines: dict[str, list[int]] = {}

    async def follow_files(
        self, match: Callable[[str], bool], under: str = "", poll_s: float = REMOTE_FILES_POLL
    ) -> AsyncIterator[Chunk]:
        """LocalRun.follow_files, over the shared connection by polling.

        Each round makes one listing of the folder (size and inode of each file), then reads
        the new bytes of each matching file that grew, from the offset already read
        (`tail -c +N`). A file shorter than what was read, or another file under its name,
        is read from byte 0."""
        folder = f"{self.target.path.rstrip('/')}/{under}" if under else self.target.path
        seen: dict[str, tuple[int, str]] = {}  # name -> (bytes read, inode)
        while not self._closed:
            fresh = False
            for name, size, ino in await self._listing(folder, match):
                async for chunk in self._file_news(folder, name, size, ino, seen):
                    fresh = fresh or chunk.at_end
                    yield chunk
            if not fresh:
                yield Chunk("", b"", 0, idle=True)
            await self._pause(poll_s)

    async def _listing(
        self, folder: str, match: Callable[[str], bool]
    ) -> list[tuple[str, int, str]]:
        """The folder's files `match` keeps, each as (name, size, inode), in the listing's order."""
        rc, out, _ = await self._exec(remote_command(FILES_SCRIPT, folder))
        if rc == 3:
            raise SshError(f"{self.target.destination}:{folder}: no such folder")
        if rc != 0:
            raise SshError(f"{self.target.destination}:{folder}: cannot list (exit {rc})")
        listed = []
        for line in out.decode("utf-8", "replace").splitlines():
            size_s, _, rest = line.partition(" ")
            ino, _, name = rest.partition(" ")
            if name and match(name) and size_s.isdigit():
                listed.append((name, int(size_s), ino))
        return listed

    async def _file_news(
        self, folder: str, name: str, size: int, ino: str, seen: dict[str, tuple[int, str]]
    ) -> AsyncIterator[Chunk]:
        """A listed file's bytes past what was read, and its end when anything changed.

        A file shorter than what was read, or another file under its name, is read from byte
        0. A file gone between the listing and the read is left for the next round."""
        had = seen.get(name)
        pos, restart = _read_from(had, size, ino)
        if size > pos or restart or had is None:
            data = b""
            if size > pos:
                rc, data, _ = await self._exec(remote_command(RANGE_SCRIPT, folder, name, str(pos)))
                if rc != 0:
                    return  # gone between the listing and the read: next round
            if data:
                yield Chunk(name, data, pos, restart)
            yield Chunk(name, b"", pos + len(data), restart and not data, at_end=True)
            pos += len(data)
        seen[name] = (pos, ino)

    async def mlflow_snapshot(self, store: str) -> dict:
        """An MLflow SQLite store's active runs and their metric rows, read on the host.

        python3 on the host reads them from a read-only connection, over the shared
        connection. It is a snapshot: the writer is never blocked or changed."""

        rc, out, err = await self._exec(
            remote_command(MLFLOW_SCRIPT, self.target.path, store, mlflow_program())
        )
        where = f"{self.target.destination}:{self.target.path}/{store}"
        if rc != 0:
            raise SshError(f"{where}: {_store_failure(rc, out, err)}")
        try:
            doc = json_loads(out)
        except ValueError:
            raise SshError(f"{where}: the host's reply is not JSON") from None
        return doc if isinstance(doc, dict) else {}

    # -- following ----------------------------------------------------------------------

    async def _history(self, name: str) -> AsyncIterator[Batch]:
        """The log's rotated segments on the remote host, oldest first (.gz unpacked here)."""
        from fontaine_tui.core.limits import gunzip

        rc, out, _ = await self._exec(remote_command(LIST_SCRIPT, self.target.path, name))
        segments = _rotated_segments(out, name)
        for seg in segments:
            yield Batch([], 1, True, f"reading rotated segment {seg}", 0, seg)
            data = await self.read_bytes(seg) or b""
            if seg.endswith(".gz"):
                try:
                    data = gunzip(data, seg)
                except InputError as exc:
                    yield Batch([], 1, note=str(exc))
                    continue
            lines = self._segment_lines(data)
            if lines is not None:
                yield lines
        if segments:
            yield Batch([], 1, True, f"reading {name}", 0, name)

    def _segment_lines(self, data: bytes) -> Batch | None:
        """A whole rotated segment's lines, its torn last one a line (None: no lines)."""
        cutter = LineCutter(self.line_cap)
        lines, first, _ = cutter.feed(data)
        more, _ = cutter.flush()
        return Batch(lines + more, first, end_offset=len(data)) if lines or more else None

    async def follow(self, name: str = LOG, history: bool | None = None) -> AsyncIterator[Batch]:
        """Complete lines of `name` as they are written, without end.

        The follow survives cuts and resumes at the last full line. With `history` (default:
        for the run's log), its rotated segments come first.

        Each pass is one connection (`_connection`), which leaves in the follow's state what
        comes next: the next connection at once (`error` None: the file changed under the
        stream, or is not there yet), or after a pause that doubles up to the backoff's cap."""
        at = _Followed(
            LineCutter(self.line_cap), self.backoff[0], self.skipped_lines.setdefault(name, [])
        )
        if history if history is not None else name == LOG:
            async with contextlib.aclosing(self._history_or_note(name)) as batches:
                async for batch in batches:
                    yield batch
        while not self._closed:
            at.back_before_truncate()
            async with contextlib.aclosing(self._connection(name, at)) as batches:
                async for batch in batches:
                    yield batch
            if at.error is None:
                continue
            if self._closed:
                break
            self.reconnects += 1
            yield at.mark(f"{at.error}; reconnecting in {at.delay:g} s")
            await self._pause(at.delay)
            at.delay = min(at.delay * 2, self.backoff[1])

    async def _history_or_note(self, name: str) -> AsyncGenerator[Batch, None]:
        """The rotated segments, or a note that they could not be read."""
        try:
            async for batch in self._history(name):
                yield batch
        except SshError as exc:
            yield Batch([], 1, note=f"rotated segments not read ({exc})")

    async def _connection(self, name: str, at: _Followed) -> AsyncGenerator[Batch, None]:
        """One connection: the script's check of the file, then what its answer says.

        Its rotated parts first (`_rotated`); then the stream (ok), a wait for the file
        (absent), or why it is not followed (`_refused`)."""
        proc = None
        at.error = ""
        try:
            await self.ensure_master()
            proc = await self._spawn_follow(name, at)
            header = await self._next_header(proc)
            if header[:1] == [b"@fontaine"]:  # our script answered: the connection is made
                self.answered()
            async with contextlib.aclosing(self._rotated(proc, name, at, header)) as batches:
                async for batch in batches:
                    yield batch
            word = _answer(at.header)
            if word == b"ok":
                async with contextlib.aclosing(self._streamed(proc, name, at)) as batches:
                    async for batch in batches:
                        yield batch
            elif word == b"absent":
                if not at.waiting:
                    at.waiting = True
                    yield at.mark(f"waiting for {name}")
                await children.end(proc)
                await self._pause(1.0)
                at.error = None
            else:
                at.error = await self._refused(proc, name, word, at.header)
        except SshError as exc:
            at.error = str(exc)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError):
            at.error = "no answer from the remote shell"
        finally:
            if proc is not None:
                await self._end(proc)

    async def _spawn_follow(self, name: str, at: _Followed) -> children.Child:
        """The remote follow script, sent what was read to check the file against."""
        anchor = at.cutter.anchor()
        proc = await children.spawn(
            *self.argv(
                remote_command(
                    FOLLOW_SCRIPT,
                    self.target.path,
                    name,
                    str(at.cutter.offset),
                    at.ident,
                    str(len(at.head)),
                    hashlib.sha256(at.head).hexdigest(),
                    at.cutter.digest(),
                    str(len(anchor)),
                    hashlib.sha256(anchor).hexdigest(),
                    STREAM_PY if self.remote_python else "",
                )
            ),
            stdin=children.PIPE,
            limit=CHUNK,
            env=child_env(),
        )
        self._procs.add(proc)
        return proc

    async def _next_header(self, proc: children.Child) -> list[bytes]:
        """The script's next protocol line, within the connection's time to answer."""
        return await asyncio.wait_for(self._header(proc), self.connect_timeout + 20)

    async def _rotated(
        self, proc: children.Child, name: str, at: _Followed, header: list[bytes]
    ) -> AsyncGenerator[Batch, None]:
        """What was read, found rotated: its rest, then each segment rotated after it.

        The script sends each part ("@fontaine rest" / "@fontaine next") before its answer;
        the answer that follows them is left in `at.header`."""
        while (part := _rotated_part(header)) is not None:
            kind, size, seg = part
            note = ""
            if kind == b"rest":
                at.cutter = at.cutter.resume()  # its torn tail is sent again
                note = f"{name} was rotated: the rest read from {seg}"
            elif kind == b"copy":  # the stream's next part, copied out
                at.cutter.rebase()
                note = f"{name} was rotated more than once: {seg} read too"
            else:  # a file of its own
                for batch in self._new_file(at.cutter, seg, f"reading rotated segment {seg}"):
                    yield batch
                at.cutter = LineCutter(self.line_cap)
            async for batch in self._rest(proc, at.cutter, int(size), note):
                yield batch
            header = await self._next_header(proc)
        at.header = header

    async def _streamed(
        self, proc: children.Child, name: str, at: _Followed
    ) -> AsyncGenerator[Batch, None]:
        """The stream that follows the script's "@fontaine ok ID START MODE".

        What was read is settled by MODE first. A change of the file under the stream (said
        on stderr) asks for the next connection at once."""
        new_ident, start, mode = at.header[2].decode(), int(at.header[3]), at.header[4]
        settled, note = self._settle(at, name, mode)
        for batch in settled:
            yield batch
        note = note or self._back_note(at, name, mode)
        at.ident, at.waiting, at.delay = new_ident, False, self.backoff[0]
        said: list[bytes] = []
        watcher = asyncio.create_task(self._watch_stderr(proc, said))
        try:
            async for batch, head in self._stream(
                proc, at.cutter, at.head, start, at.skipped, note
            ):
                at.head = head
                yield batch
        finally:
            watcher.cancel()
        if watcher.done() and not watcher.cancelled() and watcher.result():
            await asyncio.sleep(0.05)
            at.error = None  # the file changed under tail: re-check it at once
            return
        at.error = _lost(said)

    def _back_note(self, at: _Followed, name: str, mode: bytes) -> str:
        """Said as the stream comes back after a cut, or as the file awaited appears."""
        if mode == b"segment" or not (self.reconnects or at.waiting):
            return ""
        return f"{name} appeared" if at.waiting else "connected"

    def _settle(self, at: _Followed, name: str, mode: bytes) -> tuple[list[Batch], str]:
        """What the answer's MODE makes of what was read: the batches to send, and a note."""
        if mode in (b"resume", b"same", b"fresh"):  # the torn tail comes again
            at.cutter = at.cutter.resume()
            at.head = at.head[: at.cutter.offset]
            same = mode == b"same"
            return [], f"{name} was replaced by a file with the same content" if same else ""
        if mode == b"continue":
            at.before_truncate = (at.cutter.copy(), at.head)
            at.cutter.rebase()
            at.head = b""
            return [], (
                f"{name} truncated: following its new content; nothing read before is dropped"
            )
        # another file took the name
        batches = self._new_file(
            at.cutter,
            name,
            f"{name} was rotated or replaced: reading the new file (everything read before is "
            "kept)",
        )
        at.cutter, at.head = LineCutter(self.line_cap), b""
        return batches, ""

    async def _refused(
        self, proc: children.Child, name: str, word: bytes, header: list[bytes]
    ) -> str:
        """Why the file is not followed: the script's refusal, or ssh's failure."""
        if word == b"special":
            raise not_regular(
                f"{self.target.destination}:{self.target.path}/{name}",
                header[2].decode("ascii", "replace"),
            )
        if word == b"norun":
            return f"{self.target.path}: no such run folder"
        if word == b"denied":
            return f"{self.target.path}/{name}: permission denied"
        assert proc.stderr is not None  # spawned with stderr=PIPE
        err = b""
        with contextlib.suppress(asyncio.TimeoutError):
            err = await asyncio.wait_for(proc.stderr.read(), self.connect_timeout + 20)
        await children.end(proc)
        if proc.returncode == 255:
            return self.explain(err)
        return (
            f"remote follow failed (exit {proc.returncode}): "
            + err.decode("utf-8", "replace").strip()[:160]
        )

    @staticmethod
    def _new_file(cutter: LineCutter, name: str, note: str) -> list[Batch]:
        """The last file's torn line, then the segment mark for `name`.

        The caller goes on with a fresh cutter."""
        return [*finish(cutter), Batch([], 1, True, note, 0, name)]

    async def _rest(
        self, proc: children.Child, cutter: LineCutter, size: int, note: str
    ) -> AsyncIterator[Batch]:
        """Bytes sent from a rotated segment.

        They are the rest of the file we were reading, or all of one rotated after it."""
        if not size and note:
            yield Batch([], cutter.next_line, note=note, end_offset=cutter.offset)
        assert proc.stdout is not None  # spawned with stdout=PIPE
        while size > 0:
            data = await proc.stdout.readexactly(min(CHUNK, size))
            size -= len(data)
            lines, first, _ = cutter.feed(data)
            if lines or note:
                yield Batch(lines, first, note=note, end_offset=cutter.offset)
                note = ""

    @staticmethod
    async def _header(proc: children.Child) -> list[bytes]:
        """Our script's first line, past anything a chatty login script printed first."""
        assert proc.stdout is not None  # spawned with stdout=PIPE
        for _ in range(200):
            line = await proc.stdout.readline()
            if not line or line.startswith(b"@fontaine "):
                return line.split()
        return []

    async def _stream(
        self,
        proc: children.Child,
        cutter: LineCutter,
        head: bytes,
        pos: int,
        skipped: list[int],
        note: str,
    ) -> AsyncIterator[tuple[Batch, bytes]]:
        if note:
            yield Batch([], cutter.next_line, False, note, cutter.offset), head
            note = ""
        assert proc.stdout is not None  # spawned with stdout=PIPE
        loop, last = asyncio.get_running_loop(), 0.0
        while True:
            rest = last + self.min_gap_s - loop.time()
            if rest > 0:  # a fast writer's lines come in batches, not one wake-up per line
                await asyncio.sleep(rest)
            last = loop.time()
            data = await proc.stdout.read(CHUNK)
            if not data:
                return
            if pos < HEAD:
                head += data[: HEAD - pos]
            pos += len(data)
            lines, first, long = cutter.feed(data)
            note = _skipped(cutter, long, skipped)
            if lines or note:
                yield Batch(lines, first, False, note, cutter.offset), head
                note = ""

    async def _watch_stderr(self, proc: children.Child, said: list[bytes]) -> bool:
        """tail reports a truncated file, the watch loop a moved one: reconnect to re-check."""
        assert proc.stderr is not None  # spawned with stderr=PIPE
        while line := await proc.stderr.readline():
            said.append(line)
            if _TAIL_CHANGE.search(line):
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                return True
        return False

    async def _end(self, proc: children.Child) -> None:
        """End a stream's ssh client (its stdin closed ends the remote stream), bounded."""
        self._procs.discard(proc)
        await children.end(proc)
