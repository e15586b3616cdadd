"""The SSH connection to another host, through the system OpenSSH client.

One master connection (ControlMaster in a short private folder, control.py) carries every
command sent to the host: the follower's streams and reads (core/follow/ssh.py), telemetry,
and a launch's remote fontaine-tui (core/launch/remote.py). The user's ~/.ssh/config, agent
and ProxyJump apply. The first connection is tried again within a bound, until a remote command has been
answered over it (a host may take the connection and cut it in the first command); a failure is
reported in one line that names its kind (authentication, an unreachable host) and the command
to try by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from fontaine_tui.core import children
from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.readfile import KIND_SH, limit, not_regular, too_big
from fontaine_tui.core.ssh.control import new_control_folder
from fontaine_tui.core.ssh.destination import SshTarget

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
# long in all (a loaded machine, a host still booting, sshd not yet listening, a connection
# cut during the first remote command), before it is reported to have failed;
# FONTAINE_SSH_CONNECT_S changes it. An authentication failure or a host name that does not
# resolve is reported at once.
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


# $1 folder, $2 file: exit 3 no such folder, 4 no such file, 5 unreadable, 6 not a regular
# file (its kind, a key of readfile.KINDS, on stdout)
READ_SCRIPT = (
    KIND_SH
    + r"""
[ -d "$1" ] || exit 3
cd -- "$1" 2>/dev/null || exit 5
[ -e "$2" ] || exit 4
[ -f "$2" ] || { kind "$2"; exit 6; }
[ -r "$2" ] || exit 5
exec cat -- "$2"
"""
)


class SshConnection:
    """The shared connection to a host, addressed to a folder there.

    For example SshConnection(SshTarget("gpu1", "/runs/a")). It runs remote commands and reads
    their files whole."""

    def __init__(
        self,
        target: SshTarget,
        ssh_options: Sequence[str] = (),
        alive_interval: int = 5,
        alive_count: int = 3,
        persist_s: int = 60,
        backoff: tuple[float, float] = (0.25, 5.0),
        connect_timeout: int = 10,
        ssh: str = "ssh",
    ) -> None:
        self.target = target
        self.ssh_options = tuple(ssh_options)
        self.backoff, self.ssh = backoff, ssh
        self.connect_timeout = connect_timeout
        # the control socket's folder (control.py), made at the first command: a host that
        # is never asked for anything leaves nothing behind
        self._dir: Path | None = None
        self._options = [
            *self.ssh_options,
            "-o",
            "BatchMode=yes",
            "-o",
            f"ServerAliveInterval={alive_interval}",
            "-o",
            f"ServerAliveCountMax={alive_count}",
            "-o",
            f"ConnectTimeout={connect_timeout}",
        ]
        self._persist = [
            "-o",
            f"ControlPersist={persist_s}",
            *(["-p", str(target.port)] if target.port else []),
        ]
        self._locks: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}
        self._procs: set[children.Child] = set()
        self._closed = False
        self._closed_ev = asyncio.Event()
        # a remote command has been answered once: later failures are reported at once
        self._connected = False
        self._first: tuple[float, float] | None = None  # the first connection: start, end
        self.connect_tries = 0  # failed tries of the first connection (a master, a command)

    def control_dir(self) -> Path:
        """The private folder of the shared connection's socket, made at its first use.

        A short folder of this user's (control.py); SshError, one line, when none can be
        made here."""
        if self._dir is None:
            if self._closed:  # closed before its first command: nothing is made
                raise self._closed_error()
            try:
                self._dir = new_control_folder()
            except InputError as exc:
                raise SshError(f"{self.target.destination}: {exc}") from None
        return self._dir

    @property
    def _common(self) -> list[str]:
        """The options of every ssh run for this connection, its ControlPath included."""
        return [
            *self._options,
            "-o",
            f"ControlPath={self.control_dir()}/%C",
            *self._persist,
        ]

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
        if self._dir is None:  # no command was sent: no connection, no folder
            return
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
        """`ssh -O OP`: (its exit status, its stderr); 255 when it did not answer in time."""
        proc = await children.spawn(
            *self.control_argv(op), stdout=children.DEVNULL, env=child_env()
        )
        try:
            _, err = await asyncio.wait_for(proc.communicate(), self.connect_timeout + 20)
        except asyncio.TimeoutError:
            err = b"no answer from the shared connection"
        finally:
            await children.end(proc)  # at once when it has exited; killed when cancelled
        return (255 if proc.returncode is None else proc.returncode), err

    async def master_pid(self) -> int | None:
        rc, err = await self._control("check")
        m = re.search(rb"pid=(\d+)", err)
        return int(m.group(1)) if rc == 0 and m else None

    async def ensure_master(self) -> None:
        """Start the shared connection unless it is up; raises SshError if it cannot be."""
        lock = self._locks.setdefault(asyncio.get_running_loop(), asyncio.Lock())
        async with lock:
            if self._closed:  # its control folder is gone: nothing more starts
                raise self._closed_error()
            if (await self._control("check"))[0] == 0:
                return
            # the first connection: tried again with the reconnect back-off, within a limit
            delay = self.backoff[0]
            while True:
                if self._first is None:  # its bound runs from its first try
                    now = time.monotonic()
                    self._first = (now, now + first_connect_s())
                rc, err = await self._start_master()
                if rc == 0:
                    return
                self._again_or_raise(err, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.backoff[1])

    def _again_or_raise(self, err: bytes, delay: float) -> None:
        """A failed try of the first connection: return to try it again after `delay`, or raise.

        The first connection lasts until a remote command is answered over it, within
        first_connect_s() of its first try; an authentication failure or a host name that does
        not resolve ends it at once, and so does close(). After it, every failure is said."""
        now = time.monotonic()
        if self._first is None:
            self._first = (now, now + first_connect_s())
        if self._connected:
            raise SshError(self.explain(err))
        self.connect_tries += 1
        low = err.decode("utf-8", "replace").lower()
        if (
            self._closed
            or any(s in low for s in (*_AUTH, *_NO_SUCH_HOST))
            or now + delay > self._first[1]
        ):
            spent = now - self._first[0]
            tried = (
                f"; {self.connect_tries} tries in {spent:.0f} s" if self.connect_tries > 1 else ""
            )
            raise SshError(self.explain(err, tried))

    def answered(self) -> None:
        """A remote command was answered: the first connection is made."""
        self._connected = True

    async def _start_master(self) -> tuple[int, bytes]:
        """One try at the shared connection: (ssh's exit status, its stderr).

        Raises SshError when close() took the control folder away meanwhile."""
        try:
            return await self._try_master()
        except OSError:
            if self._closed:
                raise self._closed_error() from None
            raise

    def _closed_error(self) -> SshError:
        return SshError(f"{self.target.destination}: the connection was closed here")

    async def _try_master(self) -> tuple[int, bytes]:
        folder = self.control_dir()
        for stale in folder.iterdir():  # a killed master leaves its socket behind
            if stale.is_socket():
                stale.unlink(missing_ok=True)
        log = folder / "master.err"
        with open(log, "wb") as err:
            # -f: fork once authenticated; its stderr is a file so nothing waits on a pipe
            proc = await children.spawn(
                self.ssh,
                *self._common,
                "-o",
                "ControlMaster=yes",
                "-f",
                "-N",
                "--",
                self.target.destination,
                stdout=children.DEVNULL,
                stderr=err,
                env=child_env(),
            )
        try:
            rc = await asyncio.wait_for(proc.wait(), self.connect_timeout + 20)
        except asyncio.TimeoutError:
            rc = 255
        finally:
            await children.end(proc)  # at once when it has exited; killed when cancelled
        return rc, log.read_bytes()

    # How long one remote command may take before it is cut here: a host that stops
    # answering mid-command (a hung file system, a stuck scheduler) while the connection
    # itself stays up would otherwise hold its caller forever. Reads, listings and probes
    # take seconds; a caller with a longer legitimate step passes its own `timeout`.
    EXEC_TIMEOUT_S = 300.0

    async def _exec(
        self, command: str, timeout: float | None = EXEC_TIMEOUT_S
    ) -> tuple[int, bytes, bytes]:
        """Run `command` over the shared connection and return (exit status, stdout, stderr).

        Raises SshError when ssh fails (255) or the command has not finished within
        `timeout` seconds (None: no limit). The ssh client is then killed. A first command
        whose connection fails (255: the host cut it) is run again as the first connection is
        tried again (_again_or_raise): the first command a caller sends reads, never
        changes, what is there."""
        delay = self.backoff[0]
        while True:
            await self.ensure_master()
            rc, out, err = await self._exec_once(command, timeout)
            if rc != 255:
                self.answered()
                return rc, out, err
            self._again_or_raise(err, delay)
            await self._pause(delay)
            delay = min(delay * 2, self.backoff[1])

    async def _exec_once(self, command: str, timeout: float | None) -> tuple[int, bytes, bytes]:
        """One run of `command` over the shared connection (_exec), its ssh exit 255 included."""
        proc = await children.spawn(*self.argv(command), env=child_env())
        self._procs.add(proc)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except asyncio.TimeoutError:
            # killed, its pipes closed here (the master holds copies of them) and waited for
            await children.end(proc, first=signal.SIGKILL)
            raise SshError(
                f"{self.target.destination}: no answer from the remote command in "
                f"{timeout:g} s (the host or the command there stopped answering); "
                "cut here, it may still be running there; try by hand: "
                + self.target.hand_command(self.ssh_options)
            ) from None
        finally:
            self._procs.discard(proc)
            if proc.returncode is None:  # cancelled (a console quitting): no client left
                await children.end(proc, first=signal.SIGKILL)
        assert proc.returncode is not None  # communicate() waited for the exit
        return proc.returncode, out, err

    async def shell(
        self, command: str, timeout: float | None = EXEC_TIMEOUT_S
    ) -> tuple[int, bytes, bytes]:
        """Run one remote shell command line over the shared connection.

        Returns (exit status, stdout, stderr). The caller quotes every piece it did not
        write (remote_command). Raises SshError when it has not finished within `timeout`
        seconds (None: no limit)."""
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
            raise not_regular(where, out.decode("ascii", "replace").strip())
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

    async def close(self) -> None:
        self._closed = True
        self._closed_ev.set()
        for proc in list(self._procs):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        if self._dir is None:  # no command was sent: no connection, no folder
            return
        with contextlib.suppress(OSError):
            await asyncio.wait_for(self._control("exit"), 10)
        shutil.rmtree(self._dir, ignore_errors=True)

    async def _pause(self, seconds: float) -> None:
        """Sleep between attempts, but wake at once on close()."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._closed_ev.wait(), seconds)
