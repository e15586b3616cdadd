"""Follow a run folder on another machine through the system OpenSSH client.

One master connection per source (ControlMaster in a private folder) carries the log
tail, small-file reads and telemetry commands. The user's ~/.ssh/config, agent and
ProxyJump apply. Each (re)connect sends the remote shell one script that checks the file's
device:inode, size and first-bytes hash against what we had, then streams it with
`tail -c +N -F`; the tail is killed when the channel's stdin closes, so a cut leaves no orphan.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import shlex
import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow import CHUNK, HEAD, LINE_CAP, MIN_GAP, Batch, LineCutter
from fontaine_tui.core.runfolder import LOG
from fontaine_tui.core.target import SshTarget

# $1 folder, $2 file, $3 offset, $4 device:inode we had, $5 head length, $6 head sha256
FOLLOW_SCRIPT = r"""
cd -- "$1" 2>/dev/null || { if [ -e "$1" ]; then echo "@fontaine denied"; else echo "@fontaine norun"; fi; exit 0; }
[ -e "$2" ] || { echo "@fontaine absent"; exit 0; }
[ -r "$2" ] || { echo "@fontaine denied"; exit 0; }
id=$(stat -L -c %d:%i -- "$2") && size=$(stat -L -c %s -- "$2") || exit 1
start=0
if [ "$id" = "$4" ] && [ "$size" -ge "$3" ]; then
  sum=$(head -c "$5" -- "$2" | sha256sum) && [ "${sum%% *}" = "$6" ] && start=$3
fi
echo "@fontaine ok $id $start"
tail -c +$((start + 1)) -F -s 1 --pid=$$ -- "$2" &
t=$!
cat >/dev/null
kill "$t" 2>/dev/null
"""

# $1 folder, $2 file: exit 3 no such folder, 4 no such file, 5 unreadable
READ_SCRIPT = r"""
[ -d "$1" ] || exit 3
cd -- "$1" 2>/dev/null || exit 5
[ -e "$2" ] || exit 4
[ -r "$2" ] || exit 5
exec cat -- "$2"
"""

# tail -F tells us on stderr when the file under the name changed; we reconnect and let the
# header check decide between resume and reset.
_TAIL_CHANGE = re.compile(rb"truncated|replaced|inaccessible|appeared|no longer|cannot open")
_UNREACHABLE = ("could not resolve hostname", "name or service not known", "connection refused",
                "connection timed out", "no route to host", "network is unreachable",
                "operation timed out", "connection reset", "connection closed by",
                "temporary failure in name resolution", "kex_exchange_identification")
_AUTH = ("permission denied (", "host key verification failed", "too many authentication",
         "no more authentication methods", "authentication failed")


class SshError(InputError):
    """An SSH connection or remote-read failure, as one line with a command to try by hand."""


def remote_command(script: str, *args: str) -> str:
    """One string for the remote login shell: every piece single-quoted, nothing interpreted."""
    return " ".join(["sh", "-c", shlex.quote(script), "fontaine", *map(shlex.quote, args)])


class SshRun:
    """A run folder on another machine, e.g. SshRun(SshTarget("gpu1", "/runs/a"))."""

    def __init__(self, target: SshTarget, ssh_options: Sequence[str] = (),
                 line_cap: int = LINE_CAP, alive_interval: int = 5, alive_count: int = 3,
                 persist_s: int = 60, backoff: tuple[float, float] = (0.25, 5.0),
                 connect_timeout: int = 10, ssh: str = "ssh", min_gap_s: float = MIN_GAP
                 ) -> None:
        self.target = target
        self.min_gap_s = min_gap_s
        self.label = target.label
        self.ssh_options = tuple(ssh_options)
        self.line_cap, self.backoff, self.ssh = line_cap, backoff, ssh
        self.connect_timeout = connect_timeout
        self._dir = Path(tempfile.mkdtemp(prefix="fontaine-ssh-"))
        self._common = [
            *self.ssh_options,
            "-o", "BatchMode=yes",
            "-o", f"ServerAliveInterval={alive_interval}",
            "-o", f"ServerAliveCountMax={alive_count}",
            "-o", f"ConnectTimeout={connect_timeout}",
            "-o", f"ControlPath={self._dir}/%C",
            "-o", f"ControlPersist={persist_s}",
            *(["-p", str(target.port)] if target.port else []),
        ]
        self._locks: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}
        self._procs: set[asyncio.subprocess.Process] = set()
        self._closed = False
        self._closed_ev = asyncio.Event()
        self.reconnects = 0
        self.resets = 0
        self.skipped_lines: dict[str, list[int]] = {}

    # -- connection ---------------------------------------------------------------------

    def argv(self, command: str, master: str = "no") -> list[str]:
        return [self.ssh, *self._common, "-o", f"ControlMaster={master}",
                self.target.destination, "--", command]

    def explain(self, stderr: bytes | str) -> str:
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
        return f"{self.target.destination}: {what}{detail}; try by hand: " + \
            self.target.hand_command(self.ssh_options)

    async def _control(self, op: str) -> tuple[int, bytes]:
        proc = await asyncio.create_subprocess_exec(
            self.ssh, *self._common, "-O", op, self.target.destination,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE)
        _, err = await proc.communicate()
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
            for stale in self._dir.iterdir():  # a killed master leaves its socket behind
                if stale.is_socket():
                    stale.unlink(missing_ok=True)
            log = self._dir / "master.err"
            with open(log, "wb") as err:
                # -f: fork once authenticated; its stderr is a file so nothing waits on a pipe
                proc = await asyncio.create_subprocess_exec(
                    self.ssh, *self._common, "-o", "ControlMaster=yes", "-f", "-N",
                    self.target.destination, stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL, stderr=err)
            try:
                rc = await asyncio.wait_for(proc.wait(), self.connect_timeout + 20)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
                rc = 255
            if rc != 0:
                raise SshError(self.explain(log.read_bytes()))

    async def _exec(self, command: str) -> tuple[int, bytes, bytes]:
        await self.ensure_master()
        proc = await asyncio.create_subprocess_exec(
            *self.argv(command), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        self._procs.add(proc)
        try:
            out, err = await proc.communicate()
        finally:
            self._procs.discard(proc)
        if proc.returncode == 255:
            raise SshError(self.explain(err))
        return proc.returncode, out, err

    async def run_command(self, argv: list[str]) -> bytes:
        """Run argv on the remote host over the shared connection; its stdout.

        Raises SshError if the connection fails or the command exits non-zero.
        """
        rc, out, err = await self._exec(shlex.join(argv))
        if rc != 0:
            line = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            raise SshError(f"{self.target.destination}: {shlex.join(argv)} exited {rc}"
                           + (f" ({line[0][:160]})" if line[0] else ""))
        return out

    async def read_bytes(self, name: str) -> bytes | None:
        rc, out, err = await self._exec(remote_command(READ_SCRIPT, self.target.path, name))
        if rc == 0:
            return out
        if rc == 4:
            return None
        hand = self.target.hand_command(self.ssh_options)
        if rc == 3:
            raise SshError(f"{self.target.destination}:{self.target.path}: no such run folder;"
                           f" try by hand: {hand}")
        if rc == 5:
            raise SshError(f"{self.target.destination}:{self.target.path}/{name}: permission "
                           f"denied; try by hand: {hand}")
        raise SshError(f"{self.target.destination}:{self.target.path}/{name}: cannot read "
                       f"(exit {rc}); try by hand: {hand}")

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

    async def follow(self, name: str = LOG) -> AsyncIterator[Batch]:
        """Endless: complete lines of `name`; survives cuts, resumes at the last full line."""
        cutter = LineCutter(self.line_cap)
        ident, head = "-", b""
        delay = self.backoff[0]
        waiting = False
        skipped = self.skipped_lines.setdefault(name, [])
        while not self._closed:
            note, error = "", ""
            proc = None
            try:
                await self.ensure_master()
                proc = await asyncio.create_subprocess_exec(
                    *self.argv(remote_command(
                        FOLLOW_SCRIPT, self.target.path, name, str(cutter.offset), ident,
                        str(len(head)), hashlib.sha256(head).hexdigest())),
                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE, limit=CHUNK)
                self._procs.add(proc)
                header = await asyncio.wait_for(self._header(proc), self.connect_timeout + 20)
                if header[:2] == [b"@fontaine", b"ok"] and len(header) == 4:
                    new_ident, start = header[2].decode(), int(header[3])
                    reset = start != cutter.offset and (cutter.offset > 0 or ident != "-")
                    if start != cutter.offset:
                        cutter, head = LineCutter(self.line_cap), b""
                    else:  # resume: the torn tail will be sent again
                        cutter = LineCutter(self.line_cap, cutter.next_line, cutter.offset)
                        head = head[: cutter.offset]
                    if reset:
                        self.resets += 1
                        note = f"{name} replaced or truncated; reading from the start"
                    elif self.reconnects or waiting:
                        note = "connected" if not waiting else f"{name} appeared"
                    ident, waiting, delay = new_ident, False, self.backoff[0]
                    said: list[bytes] = []
                    watcher = asyncio.create_task(self._watch_stderr(proc, said))
                    try:
                        async for batch in self._stream(proc, cutter, head, skipped, reset, note):
                            head = batch[1]
                            yield batch[0]
                    finally:
                        watcher.cancel()
                    if watcher.done() and not watcher.cancelled() and watcher.result():
                        await asyncio.sleep(0.05)
                        continue  # the file changed under tail: re-check it at once
                    error = "connection lost" + (
                        f" ({said[-1].decode('utf-8', 'replace').strip()[:160]})" if said else "")
                elif header[:2] == [b"@fontaine", b"absent"]:
                    if not waiting:
                        waiting = True
                        yield Batch([], cutter.next_line, note=f"waiting for {name}",
                                    end_offset=cutter.offset)
                    await proc.wait()
                    await self._pause(1.0)
                    continue
                elif header[:2] == [b"@fontaine", b"norun"]:
                    error = f"{self.target.path}: no such run folder"
                elif header[:2] == [b"@fontaine", b"denied"]:
                    error = f"{self.target.path}/{name}: permission denied"
                else:
                    await proc.wait()
                    err = await proc.stderr.read()
                    error = self.explain(err) if proc.returncode == 255 else (
                        f"remote follow failed (exit {proc.returncode}): "
                        + err.decode("utf-8", "replace").strip()[:160])
            except SshError as exc:
                error = str(exc)
            except asyncio.TimeoutError:
                error = "no answer from the remote shell"
            finally:
                if proc is not None:
                    await self._end(proc)
            if self._closed:
                break
            self.reconnects += 1
            yield Batch([], cutter.next_line, note=f"{error}; reconnecting in {delay:g} s",
                        end_offset=cutter.offset)
            await self._pause(delay)
            delay = min(delay * 2, self.backoff[1])

    async def _pause(self, seconds: float) -> None:
        """Sleep between attempts, but wake at once on close()."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._closed_ev.wait(), seconds)

    @staticmethod
    async def _header(proc: asyncio.subprocess.Process) -> list[bytes]:
        """Our script's first line, past anything a chatty login script printed first."""
        for _ in range(200):
            line = await proc.stdout.readline()
            if not line or line.startswith(b"@fontaine "):
                return line.split()
        return []

    async def _stream(self, proc: asyncio.subprocess.Process, cutter: LineCutter, head: bytes,
                      skipped: list[int], reset: bool, note: str
                      ) -> AsyncIterator[tuple[Batch, bytes]]:
        pos = cutter.offset
        if reset or note:
            yield Batch([], cutter.next_line, reset, note, cutter.offset), head
            reset, note = False, ""
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
        """tail -F reports a replaced or truncated file on stderr: reconnect to re-check it."""
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
