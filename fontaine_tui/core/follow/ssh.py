"""Follow a run folder on another machine through the system OpenSSH client.

One master connection per source (ControlMaster in a private folder) carries the log
tail, small-file reads and telemetry commands. The user's ~/.ssh/config, agent and
ProxyJump apply. Each (re)connect sends the remote shell one script that checks the file's
device:inode, size, first bytes and last-read bytes against what we had, then streams it,
sending no chunk before the file is seen to still hold the bytes read before it; the stream
stops when the channel's stdin closes, so a cut leaves no orphan.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

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
    MLFLOW_PY,
    MLFLOW_SCRIPT,
    RANGE_SCRIPT,
    READ_SCRIPT,
    STREAM_PY,
)
from fontaine_tui.core.follow.target import SshTarget
from fontaine_tui.core.log.lines import LINE_CAP, LineCutter
from fontaine_tui.core.readfile import limit, too_big
from fontaine_tui.core.runfolder import LOG

# the stream says on stderr that the file no longer holds what was sent, the name watch that
# another file with data has the name: either way we reconnect and let the header check decide
REMOTE_FILES_POLL = 0.5  # follow_files over SSH: a listing of the folder this often
_TAIL_CHANGE = re.compile(rb"@fontaine (truncated|moved)")
_UNREACHABLE = (
    "could not resolve hostname",
    "name or service not known",
    "connection refused",
    "connection timed out",
    "no route to host",
    "network is unreachable",
    "operation timed out",
    "connection reset",
    "connection closed by",
    "temporary failure in name resolution",
    "kex_exchange_identification",
)
_AUTH = (
    "permission denied (",
    "host key verification failed",
    "too many authentication",
    "no more authentication methods",
    "authentication failed",
)
_NO_SUCH_HOST = ("name or service not known", "no address associated with hostname")
# The first connection to a host is tried again with the same back-off as a reconnect, this
# long in all (a loaded machine, a host still booting, sshd not yet listening), before it is
# said to have failed; FONTAINE_SSH_CONNECT_S changes it. An authentication failure or a
# host name that does not resolve is said at once.
FIRST_CONNECT_S = 20.0
CONNECT_ENV = "FONTAINE_SSH_CONNECT_S"


def first_connect_s() -> float:
    """FIRST_CONNECT_S, or FONTAINE_SSH_CONNECT_S's seconds (0: one try)."""
    raw = os.environ.get(CONNECT_ENV, "")
    if not raw:
        return FIRST_CONNECT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise InputError(f"{CONNECT_ENV}: expected seconds >= 0, got {raw[:40]!r}")
    return value


class SshError(InputError):
    """An SSH connection or remote-read failure, as one line with a command to try by hand."""


def remote_command(script: str, *args: str) -> str:
    """One string for the remote login shell: every piece single-quoted, nothing interpreted."""
    return " ".join(["sh", "-c", shlex.quote(script), "fontaine", *map(shlex.quote, args)])


class SshRun:
    """A run folder on another machine, e.g. SshRun(SshTarget("gpu1", "/runs/a"))."""

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
        self.target = target
        self.remote_python = remote_python  # False: the shell loop even where python3 is
        self.min_gap_s = min_gap_s
        self.label = target.label
        self.ssh_options = tuple(ssh_options)
        self.line_cap, self.backoff, self.ssh = line_cap, backoff, ssh
        self.connect_timeout = connect_timeout
        self._dir = Path(tempfile.mkdtemp(prefix="fontaine-ssh-"))
        self._common = [
            *self.ssh_options,
            "-o",
            "BatchMode=yes",
            "-o",
            f"ServerAliveInterval={alive_interval}",
            "-o",
            f"ServerAliveCountMax={alive_count}",
            "-o",
            f"ConnectTimeout={connect_timeout}",
            "-o",
            f"ControlPath={self._dir}/%C",
            "-o",
            f"ControlPersist={persist_s}",
            *(["-p", str(target.port)] if target.port else []),
        ]
        self._locks: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}
        self._procs: set[asyncio.subprocess.Process] = set()
        self._closed = False
        self._closed_ev = asyncio.Event()
        self._connected = False  # a master has been up once: later failures are said at once
        self.connect_tries = 0  # master starts tried for the first connection
        self.reconnects = 0
        self.resets = 0
        self.skipped_lines: dict[str, list[int]] = {}

    # -- connection ---------------------------------------------------------------------

    def argv(self, command: str, master: str = "no") -> list[str]:
        return [
            self.ssh,
            *self._common,
            "-o",
            f"ControlMaster={master}",
            "--",
            self.target.destination,
            command,
        ]

    def explain(self, stderr: bytes | str, tried: str = "") -> str:
        text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
        low = text.lower()
        if any(s in low for s in _AUTH):
            what = "authentication failed"
        elif any(s in low for s in _UNREACHABLE):
            what = "host unreachable"
        else:
            what = "ssh failed"
        last = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        detail = f" ({last[-1][:160]})" if last else ""
        return (
            f"{self.target.destination}: {what}{detail}{tried}; try by hand: "
            + self.target.hand_command(self.ssh_options)
        )

    def control_argv(self, op: str) -> list[str]:
        """`ssh -O OP` for the shared connection (check, exit)."""
        return [self.ssh, *self._common, "-O", op, "--", self.target.destination]

    def close_sync(self) -> None:
        """close() for a caller without an event loop of its own (a thread, a callback)."""
        self._closed = True
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                self.control_argv("exit"),
                capture_output=True,
                timeout=10,
                stdin=subprocess.DEVNULL,
                env=child_env(),
            )
        shutil.rmtree(self._dir, ignore_errors=True)

    async def _control(self, op: str) -> tuple[int, bytes]:
        proc = await asyncio.create_subprocess_exec(
            *self.control_argv(op),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=child_env(),
        )
        _, err = await proc.communicate()
        assert proc.returncode is not None  # communicate() waited for the exit
        return proc.returncode, err

    async def master_pid(self) -> int | None:
        rc, err = await self._control("check")
        m = re.search(rb"pid=(\d+)", err)
        return int(m.group(1)) if rc == 0 and m else None

    async def ensure_master(self) -> None:
        """Start the shared connection unless it is up; raises SshError if it cannot be."""
        lock = self._locks.setdefault(asyncio.get_running_loop(), asyncio.Lock())
        async with lock:
            if (await self._control("check"))[0] == 0:
                return
            # the first connection: tried again with the reconnect back-off, within a limit
            limit = 0.0 if self._connected else first_connect_s()
            start, delay = time.monotonic(), self.backoff[0]
            while True:
                rc, err = await self._start_master()
                if rc == 0:
                    self._connected = True
                    return
                self.connect_tries += 1
                low = err.decode("utf-8", "replace").lower()
                spent = time.monotonic() - start
                if (
                    self._closed
                    or any(s in low for s in (*_AUTH, *_NO_SUCH_HOST))
                    or spent + delay > limit
                ):
                    tried = (
                        f"; {self.connect_tries} tries in {spent:.0f} s"
                        if self.connect_tries > 1
                        else ""
                    )
                    raise SshError(self.explain(err, tried))
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.backoff[1])

    async def _start_master(self) -> tuple[int, bytes]:
        """One try at the shared connection: (ssh's exit status, its stderr)."""
        for stale in self._dir.iterdir():  # a killed master leaves its socket behind
            if stale.is_socket():
                stale.unlink(missing_ok=True)
        log = self._dir / "master.err"
        with open(log, "wb") as err:
            # -f: fork once authenticated; its stderr is a file so nothing waits on a pipe
            proc = await asyncio.create_subprocess_exec(
                self.ssh,
                *self._common,
                "-o",
                "ControlMaster=yes",
                "-f",
                "-N",
                "--",
                self.target.destination,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=err,
                env=child_env(),
            )
        try:
            rc = await asyncio.wait_for(proc.wait(), self.connect_timeout + 20)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            rc = 255
        return rc, log.read_bytes()

    # How long one remote command may take before it is cut here: a host that stops
    # answering mid-command (a hung file system, a stuck scheduler) while the connection
    # itself stays up would otherwise hold its caller forever. Reads, listings and probes
    # take seconds; a caller with a longer legitimate step passes its own `timeout`.
    EXEC_TIMEOUT_S = 300.0

    async def _exec(
        self, command: str, timeout: float | None = EXEC_TIMEOUT_S
    ) -> tuple[int, bytes, bytes]:
        """(exit status, stdout, stderr) of `command` over the shared connection; SshError
        when ssh fails (255) or the command has not finished within `timeout` seconds (None:
        no limit), the ssh client then killed."""
        await self.ensure_master()
        proc = await asyncio.create_subprocess_exec(
            *self.argv(command),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=child_env(),
        )
        self._procs.add(proc)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except asyncio.TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            # The shared connection's master holds copies of the client's pipes (ssh hands
            # them over the control socket), so they stay open after the client dies and
            # asyncio's wait() would wait for them: close this side's ends too.
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), 10)
            raise SshError(
                f"{self.target.destination}: no answer from the remote command in "
                f"{timeout:g} s (the host or the command there stopped answering); "
                "cut here, it may still be running there; try by hand: "
                + self.target.hand_command(self.ssh_options)
            ) from None
        finally:
            self._procs.discard(proc)
        assert proc.returncode is not None  # communicate() waited for the exit
        if proc.returncode == 255:
            raise SshError(self.explain(err))
        return proc.returncode, out, err

    async def shell(
        self, command: str, timeout: float | None = EXEC_TIMEOUT_S
    ) -> tuple[int, bytes, bytes]:
        """(exit status, stdout, stderr) of one remote shell command line over the shared
        connection; the caller quotes every piece it did not write (remote_command). SshError
        when it has not finished within `timeout` seconds (None: no limit)."""
        return await self._exec(command, timeout)

    async def run_command(self, argv: list[str]) -> bytes:
        """Run argv on the remote host over the shared connection; its stdout.

        Raises SshError if the connection fails or the command exits non-zero.
        """
        rc, out, err = await self._exec(shlex.join(argv))
        if rc != 0:
            line = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            raise SshError(
                f"{self.target.destination}: {shlex.join(argv)} exited {rc}"
                + (f" ({line[0][:160]})" if line[0] else "")
            )
        return out

    async def read_bytes(self, name: str) -> bytes | None:
        rc, out, err = await self._exec(remote_command(READ_SCRIPT, self.target.path, name))
        where = f"{self.target.destination}:{self.target.path}/{name}"
        if rc == 0:
            if len(out) > limit():
                raise too_big(where, len(out), limit())
            return out
        if rc == 4:
            return None
        if rc == 6:  # a pipe would hold the remote cat for ever
            raise InputError(
                f"{where}: not a regular file (a pipe, device or folder); "
                "refused: reading it could wait or run forever"
            )
        hand = self.target.hand_command(self.ssh_options)
        if rc == 3:
            raise SshError(
                f"{self.target.destination}:{self.target.path}: no such run folder;"
                f" try by hand: {hand}"
            )
        if rc == 5:
            raise SshError(
                f"{self.target.destination}:{self.target.path}/{name}: permission "
                f"denied; try by hand: {hand}"
            )
        raise SshError(
            f"{self.target.destination}:{self.target.path}/{name}: cannot read "
            f"(exit {rc}); try by hand: {hand}"
        )

    async def follow_files(
        self, match: Callable[[str], bool], under: str = "", poll_s: float = REMOTE_FILES_POLL
    ) -> AsyncIterator[Chunk]:
        """As LocalRun.follow_files, over the shared connection by polling: each round one
        listing of the folder (size and inode of each file), then the new bytes of each
        matching file that grew, read from the offset already read (`tail -c +N`); a file
        shorter than what was read, or another file under its name, is read from byte 0."""
        folder = f"{self.target.path.rstrip('/')}/{under}" if under else self.target.path
        seen: dict[str, tuple[int, str]] = {}  # name -> (bytes read, inode)
        while not self._closed:
            rc, out, err = await self._exec(remote_command(FILES_SCRIPT, folder))
            if rc == 3:
                raise SshError(f"{self.target.destination}:{folder}: no such folder")
            if rc != 0:
                raise SshError(f"{self.target.destination}:{folder}: cannot list (exit {rc})")
            fresh = False
            for line in out.decode("utf-8", "replace").splitlines():
                size_s, _, rest = line.partition(" ")
                ino, _, name = rest.partition(" ")
                if not name or not match(name) or not size_s.isdigit():
                    continue
                size = int(size_s)
                pos, was = seen.get(name, (0, ino))
                restart = name in seen and (was != ino or size < pos)
                if restart:
                    pos = 0
                if size > pos or restart or name not in seen:
                    data = b""
                    if size > pos:
                        rc, data, err = await self._exec(
                            remote_command(RANGE_SCRIPT, folder, name, str(pos))
                        )
                        if rc != 0:
                            continue  # gone between the listing and the read: next round
                    if data:
                        yield Chunk(name, data, pos, restart)
                    fresh = True
                    yield Chunk(name, b"", pos + len(data), restart and not data, at_end=True)
                    pos += len(data)
                seen[name] = (pos, ino)
            if not fresh:
                yield Chunk("", b"", 0, idle=True)
            await self._pause(poll_s)

    async def mlflow_snapshot(self, store: str) -> dict:
        """An MLflow SQLite store's active runs and their metric rows, read by python3 on
        the host from a read-only connection, over the shared connection (a snapshot: the
        writer is never blocked or changed)."""
        import json

        rc, out, err = await self._exec(
            remote_command(MLFLOW_SCRIPT, self.target.path, store, MLFLOW_PY)
        )
        where = f"{self.target.destination}:{self.target.path}/{store}"
        if rc == 4:
            raise SshError(f"{where}: no such MLflow store")
        if rc == 6:
            raise SshError(f"{where}: no python3 on the host to read the store with")
        if rc != 0:
            last = (err.decode("utf-8", "replace").strip().splitlines() or [""])[-1][:160]
            raise SshError(f"{where}: cannot read (exit {rc})" + (f": {last}" if last else ""))
        try:
            doc = json.loads(out)
        except ValueError:
            raise SshError(f"{where}: the host's reply is not JSON") from None
        return doc if isinstance(doc, dict) else {}

    async def close(self) -> None:
        self._closed = True
        self._closed_ev.set()
        for proc in list(self._procs):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        with contextlib.suppress(OSError):
            await asyncio.wait_for(self._control("exit"), 10)
        shutil.rmtree(self._dir, ignore_errors=True)

    # -- following ----------------------------------------------------------------------

    async def _history(self, name: str) -> AsyncIterator[Batch]:
        """The log's rotated segments on the remote host, oldest first (.gz unpacked here)."""
        import gzip

        from fontaine_tui.core.runfolder import ROTATED

        rc, out, _ = await self._exec(remote_command(LIST_SCRIPT, self.target.path, name))
        found: dict[int, str] = {}
        for raw in out.decode("utf-8", "replace").splitlines():
            m = ROTATED.fullmatch(raw, len(name)) if raw.startswith(name) else None
            if m is not None and (int(m.group(1)) not in found or not m.group(2)):
                found[int(m.group(1))] = raw
        for n in sorted(found, reverse=True):
            seg = found[n]
            yield Batch([], 1, True, f"reading rotated segment {seg}", 0, seg)
            data = await self.read_bytes(seg) or b""
            if seg.endswith(".gz"):
                try:
                    data = gzip.decompress(data)
                except (OSError, EOFError) as exc:
                    yield Batch([], 1, note=f"{seg}: cannot decompress ({exc})")
                    continue
            cutter = LineCutter(self.line_cap)
            lines, first, _ = cutter.feed(data)
            more, _ = cutter.flush()
            if lines or more:
                yield Batch(lines + more, first, end_offset=len(data))
        if found:
            yield Batch([], 1, True, f"reading {name}", 0, name)

    async def follow(self, name: str = LOG, history: bool | None = None) -> AsyncIterator[Batch]:
        """Endless: complete lines of `name`; survives cuts, resumes at the last full line.
        With `history` (default: for the run's log), its rotated segments come first."""
        cutter = LineCutter(self.line_cap)
        ident, head = "-", b""
        delay = self.backoff[0]
        waiting = False
        skipped = self.skipped_lines.setdefault(name, [])
        # after a copy-truncate, until a line of the new content is complete: the state before
        # it, to reconnect with (a second truncate before the stream's first read puts the new
        # content in a rotated copy; the header finds it from the old file's bytes, not from
        # nothing read)
        before_truncate: tuple[LineCutter, bytes] | None = None
        if history if history is not None else name == LOG:
            try:
                async for batch in self._history(name):
                    yield batch
            except SshError as exc:
                yield Batch([], 1, note=f"rotated segments not read ({exc})")
        while not self._closed:
            note, error = "", ""
            proc = None
            if before_truncate is not None and cutter.offset <= 0:
                cutter, head = before_truncate[0].copy(), before_truncate[1]
            before_truncate = None
            anchor = cutter.anchor()
            try:
                await self.ensure_master()
                proc = await asyncio.create_subprocess_exec(
                    *self.argv(
                        remote_command(
                            FOLLOW_SCRIPT,
                            self.target.path,
                            name,
                            str(cutter.offset),
                            ident,
                            str(len(head)),
                            hashlib.sha256(head).hexdigest(),
                            cutter.digest(),
                            str(len(anchor)),
                            hashlib.sha256(anchor).hexdigest(),
                            STREAM_PY if self.remote_python else "",
                        )
                    ),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    limit=CHUNK,
                    env=child_env(),
                )
                self._procs.add(proc)
                header = await asyncio.wait_for(self._header(proc), self.connect_timeout + 20)
                while header[:2] in ([b"@fontaine", b"rest"], [b"@fontaine", b"next"]):
                    if header[1] == b"rest" and len(header) >= 4:
                        cutter = cutter.resume()  # its torn tail is sent again
                        seg = b" ".join(header[3:]).decode("utf-8", "replace")
                        note = f"{name} was rotated: the rest read from {seg}"
                    elif header[1] == b"next" and len(header) >= 5:
                        seg = b" ".join(header[4:]).decode("utf-8", "replace")
                        if header[3] == b"copy":  # the stream's next part, copied out
                            cutter.rebase()
                            note = f"{name} was rotated more than once: {seg} read too"
                        else:  # a file of its own
                            for batch in self._new_file(
                                cutter, seg, f"reading rotated segment {seg}"
                            ):
                                yield batch
                            cutter, note = LineCutter(self.line_cap), ""
                    else:
                        break
                    async for batch in self._rest(proc, cutter, int(header[2]), note):
                        yield batch
                    header = await asyncio.wait_for(self._header(proc), self.connect_timeout + 20)
                    note = ""
                if header[:2] == [b"@fontaine", b"ok"] and len(header) == 5:
                    new_ident, start, mode = header[2].decode(), int(header[3]), header[4]
                    if mode in (b"resume", b"same", b"fresh"):  # the torn tail comes again
                        cutter = cutter.resume()
                        head = head[: cutter.offset]
                        if mode == b"same":
                            note = f"{name} was replaced by a file with the same content"
                    elif mode == b"continue":
                        before_truncate = (cutter.copy(), head)
                        cutter.rebase()
                        head = b""
                        self.resets += 1
                        note = (
                            f"{name} truncated: following its new content; nothing read "
                            "before is dropped"
                        )
                    else:  # another file took the name
                        for batch in self._new_file(
                            cutter,
                            name,
                            f"{name} was rotated or replaced: reading the "
                            "new file (everything read before is kept)",
                        ):
                            yield batch
                        cutter, head = LineCutter(self.line_cap), b""
                        self.resets += 1
                    if not note and (self.reconnects or waiting) and mode != b"segment":
                        note = "connected" if not waiting else f"{name} appeared"
                    ident, waiting, delay = new_ident, False, self.backoff[0]
                    said: list[bytes] = []
                    watcher = asyncio.create_task(self._watch_stderr(proc, said))
                    try:
                        async for sent in self._stream(proc, cutter, head, start, skipped, note):
                            batch, head = sent
                            yield batch
                    finally:
                        watcher.cancel()
                    if watcher.done() and not watcher.cancelled() and watcher.result():
                        await asyncio.sleep(0.05)
                        continue  # the file changed under tail: re-check it at once
                    error = "connection lost" + (
                        f" ({said[-1].decode('utf-8', 'replace').strip()[:160]})" if said else ""
                    )
                elif header[:2] == [b"@fontaine", b"absent"]:
                    if not waiting:
                        waiting = True
                        yield Batch(
                            [],
                            cutter.next_line,
                            note=f"waiting for {name}",
                            end_offset=cutter.offset,
                        )
                    await proc.wait()
                    await self._pause(1.0)
                    continue
                elif header[:2] == [b"@fontaine", b"norun"]:
                    error = f"{self.target.path}: no such run folder"
                elif header[:2] == [b"@fontaine", b"denied"]:
                    error = f"{self.target.path}/{name}: permission denied"
                else:
                    await proc.wait()
                    assert proc.stderr is not None  # spawned with stderr=PIPE
                    err = await proc.stderr.read()
                    error = (
                        self.explain(err)
                        if proc.returncode == 255
                        else (
                            f"remote follow failed (exit {proc.returncode}): "
                            + err.decode("utf-8", "replace").strip()[:160]
                        )
                    )
            except SshError as exc:
                error = str(exc)
            except (asyncio.TimeoutError, asyncio.IncompleteReadError):
                error = "no answer from the remote shell"
            finally:
                if proc is not None:
                    await self._end(proc)
            if self._closed:
                break
            self.reconnects += 1
            yield Batch(
                [],
                cutter.next_line,
                note=f"{error}; reconnecting in {delay:g} s",
                end_offset=cutter.offset,
            )
            await self._pause(delay)
            delay = min(delay * 2, self.backoff[1])

    @staticmethod
    def _new_file(cutter: LineCutter, name: str, note: str) -> list[Batch]:
        """The last file's torn line, then the segment mark for `name`; the caller goes on
        with a fresh cutter."""
        return [*finish(cutter), Batch([], 1, True, note, 0, name)]

    async def _rest(
        self, proc: asyncio.subprocess.Process, cutter: LineCutter, size: int, note: str
    ) -> AsyncIterator[Batch]:
        """Bytes sent from a rotated segment: the rest of the file we were reading, or all of
        one rotated after it."""
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

    async def _pause(self, seconds: float) -> None:
        """Sleep between attempts, but wake at once on close()."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._closed_ev.wait(), seconds)

    @staticmethod
    async def _header(proc: asyncio.subprocess.Process) -> list[bytes]:
        """Our script's first line, past anything a chatty login script printed first."""
        assert proc.stdout is not None  # spawned with stdout=PIPE
        for _ in range(200):
            line = await proc.stdout.readline()
            if not line or line.startswith(b"@fontaine "):
                return line.split()
        return []

    async def _stream(
        self,
        proc: asyncio.subprocess.Process,
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
            if long:
                skipped += [n for n in long if n not in skipped]
                note = cutter.skip_note(long)
            if lines or note:
                yield Batch(lines, first, False, note, cutter.offset), head
                note = ""

    async def _watch_stderr(self, proc: asyncio.subprocess.Process, said: list[bytes]) -> bool:
        """tail reports a truncated file, the watch loop a moved one: reconnect to re-check."""
        assert proc.stderr is not None  # spawned with stderr=PIPE
        while line := await proc.stderr.readline():
            said.append(line)
            if _TAIL_CHANGE.search(line):
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                return True
        return False

    async def _end(self, proc: asyncio.subprocess.Process) -> None:
        self._procs.discard(proc)
        if proc.returncode is None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 2)
            except asyncio.TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
