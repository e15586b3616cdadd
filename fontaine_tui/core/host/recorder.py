"""The telemetry recorder: this host's history, sampled beside a run into its run folder.

`python -m fontaine_tui.core.host.recorder FOLDER --pid PID` appends one JSON line every
`--interval` seconds to FOLDER/telemetry.jsonl (FOLDER/telemetry.nodeN.jsonl with `--node N`,
one file per Slurm node, so no two hosts append to one file): the GPUs (NVML; without one the
line says why, never a number), host RAM, the engine's process tree (PSS, CPU), the run
folder's file system (free bytes, the block device's read and write bytes) and the network
(bytes in and out), each line with its time, its node's name and the step last logged.

It runs as long as the engine does: it exits within a second of the engine's pid going (or
being another process: its start time is checked), and it writes only into a folder that holds
a frozen prereg.json, through no link. It holds that folder open and writes only through the
hold, each time after checking that the folder's path still names it and its prereg.json is the
same file (st_dev, st_ino): a run folder moved away and another made in its place, or another
run frozen there, ends the recording quietly. The history stays bounded: once the file passes
`BOUND` bytes every `THIN`th line goes on into `.1` (itself halved when it passes `BOUND`), so
a week-long run keeps its whole span at a coarser grain, never more than twice `BOUND`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fontaine_tui.core.atomic import replace_own
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.memory import host_ram
from fontaine_tui.core.host.nvml import read_gpus
from fontaine_tui.core.host.telemetry import sample_process
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.readfile import open_regular
from fontaine_tui.core.runfolder import LOG, PREREG, TELEMETRY, node_telemetry

INTERVAL_S = 10.0  # the default time between two samples
INTERVAL_ENV = "FONTAINE_TELEMETRY_S"  # seconds between samples; 0: no recorder is started
BOUND = 1 << 20  # bytes of the newest file before it is thinned into `.1`
THIN = 10  # one line in THIN of the newest file goes on into `.1`
VERSION = 1
MODULE = "fontaine_tui.core.host.recorder"


def block_stat(folder: Path) -> tuple[int, int] | None:
    """(bytes read, bytes written) of the block device under `folder`; None without one."""
    dev = os.stat(folder).st_dev
    try:
        fields = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat").read_text().split()
        return int(fields[2]) * 512, int(fields[6]) * 512  # sectors are 512 bytes here
    except (OSError, IndexError, ValueError):
        return None  # an overlay, tmpfs or network file system: no block device of its own


def net_bytes() -> tuple[int, int] | None:
    """(bytes received, bytes sent) over every interface but loopback."""
    import psutil

    try:
        nics = psutil.net_io_counters(pernic=True)
    except OSError:
        return None
    got = [c for name, c in nics.items() if name != "lo"]
    return sum(c.bytes_recv for c in got), sum(c.bytes_sent for c in got)


def last_step(folder: Path) -> int | None:
    """The step of the last whole record in the run's train_log.jsonl, or None."""
    try:
        with open_regular(folder / LOG) as fh:  # a FIFO of that name is refused, never waited on
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - 16384))
            tail = fh.read()
    except (OSError, InputError):
        return None
    for line in reversed(tail.split(b"\n")[1:-1] if size > 16384 else tail.split(b"\n")[:-1]):
        try:
            step = json_loads(line).get("step")
        except (ValueError, AttributeError):
            continue
        if isinstance(step, int) and not isinstance(step, bool):
            return step
    return None


def sample_line(folder: Path, pid: int, node: str) -> dict[str, Any]:
    """One sample of this host as the recorder writes it (docs/run-folder.md)."""
    out: dict[str, Any] = {"v": VERSION, "t": round(time.time(), 2), "node": node}
    out["host"] = socket.gethostname()
    out["step"] = last_step(folder)
    out |= _gpu_fields()
    out |= _ram_fields()
    out |= _engine_fields(pid)
    out["disk"] = _disk_fields(folder)
    net = net_bytes()
    out["net"] = None if net is None else {"in": net[0], "out": net[1]}
    return out


def _gpu_fields() -> dict[str, Any]:
    """The GPUs the engine sees, or None and why."""
    gpus, why = read_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"))
    if gpus is None:
        return {"gpus": None, "gpu_reason": why}
    return {
        "gpus": [
            {"index": g.index, "uuid": g.uuid, "util": g.util_pct, "mem": g.mem_used}
            | {"mem_total": g.mem_total}
            for g in gpus
        ]
    }


def _ram_fields() -> dict[str, Any]:
    """The host RAM used and usable, or None and why."""
    ram, why = host_ram()
    if ram is None:
        return {"ram": None, "ram_reason": why}
    return {"ram": {"used": ram.total - ram.available, "total": ram.total}}


def _engine_fields(pid: int) -> dict[str, Any]:
    """The engine's process tree, or None and why."""
    proc, why = sample_process(pid)
    if proc is None:
        return {"engine": None, "engine_reason": why}
    return {
        "engine": {
            "pid": pid,
            "mem": proc.mem,  # PSS: a page the tree's processes share counted once
            "mem_kind": proc.mem_kind,
            "cpu": None if proc.cpu_pct is None else round(proc.cpu_pct, 1),
            "procs": proc.processes,
        }
    }


def _disk_fields(folder: Path) -> dict[str, Any]:
    """The free space under the folder and its block device's bytes read and written."""
    fs = os.statvfs(folder)
    disk: dict[str, Any] = {"free": fs.f_bavail * fs.f_frsize}
    io = block_stat(folder)
    disk |= {"read": None, "write": None} if io is None else {"read": io[0], "write": io[1]}
    return disk


HEAD = b'{"v":1,'  # how every line the recorder writes begins


def ours(head: bytes) -> bool:
    """Whether a file that begins with `head` is a history the recorder wrote (or empty)."""
    return not head or head.startswith(HEAD)


class Sidecar:
    """The history file: appended a whole line at a time, thinned into `.1` past `bound`.

    Neither file is written when it holds something else than the recorder's lines (a file
    of that name the user put there): `check` and `thin` raise InputError, and nothing of it
    changes."""

    def __init__(self, path: Path, bound: int = BOUND) -> None:
        self.path, self.bound = path, bound
        self.older = path.with_name(path.name + ".1")

    def check(self) -> None:
        """Raise InputError when the newest file is there and not the recorder's."""
        try:
            with open_regular(self.path) as fh:
                head = fh.read(len(HEAD))
        except FileNotFoundError:
            return
        if not ours(head):
            raise InputError(f"{self.path}: not a telemetry history; left untouched")

    def append(self, record: Mapping[str, Any]) -> None:
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            os.write(fd, data)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > self.bound:
            self.thin()

    def thin(self) -> None:
        """Move every THIN-th line of the newest file into `.1`, halving `.1` past the bound."""
        with open_regular(self.path) as fh:
            lines = fh.read().splitlines(keepends=True)
        try:
            with open_regular(self.older) as fh:
                kept = fh.read().splitlines(keepends=True)
        except FileNotFoundError:
            kept = []
        kept += lines[::THIN]
        while kept and sum(map(len, kept)) > self.bound:
            kept = kept[::2]
        replace_own(self.older, b"".join(kept), ours, "a telemetry history")
        fd = os.open(self.path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
        os.close(fd)


def engine_alive(pid: int, started: float | None) -> bool:
    """The engine's pid still runs (no zombie) and is the process started then."""
    import psutil

    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(p.create_time() - started) < 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _identity(path: Path) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the regular file at `path`, never through a link; None otherwise."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _still_the_run(folder: Path, fd: int, prereg: tuple[int, int]) -> bool:
    """Whether `folder` still names the run folder held open (`fd`), with its own prereg.json.

    A folder moved away and another made at its path, or a prereg.json replaced (another
    run frozen there), is not the run the recorder was started beside."""
    try:
        here, held = os.stat(folder, follow_symlinks=False), os.fstat(fd)
    except OSError:
        return False
    same = (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)
    return same and _identity(folder / PREREG) == prereg


def record(
    folder: Path,
    pid: int,
    started: float | None,
    node: int | None = None,
    interval: float = INTERVAL_S,
    bound: int = BOUND,
) -> int:
    """Sample into the folder's sidecar until the engine goes; the number of samples.

    The folder is held open from the start and written only through that hold: each sample is
    written once `folder` is checked to name it still, with the same prereg.json (its st_dev and
    st_ino). When it does not, the recording ends quietly, writing nothing more anywhere."""
    fd, prereg = _hold(folder)
    held = Path(f"/proc/self/fd/{fd}")  # the folder held open, whatever its path names now
    name = TELEMETRY if node is None else node_telemetry(node)
    here = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    sidecar, count = Sidecar(held / name, bound), 0
    try:
        sidecar.check()
        sample_process(pid)  # the first look primes the CPU percentages
        while engine_alive(pid, started):
            if not _outlived(pid, started, interval):
                return count
            try:
                line = sample_line(held, pid, here)
                if not _still_the_run(folder, fd, prereg):
                    return count  # moved, deleted or replaced: not this run's folder any more
                sidecar.append(line)
            except InputError:  # `.1` is someone else's: the history stops, bounded, untouched
                return count
            except OSError:  # the folder went (its disk unmounted): nothing to write
                return count
            count += 1
        return count
    finally:
        os.close(fd)


def _hold(folder: Path) -> tuple[int, tuple[int, int]]:
    """The run folder held open and its prereg.json's identity; InputError for another folder."""
    prereg = _identity(folder / PREREG)
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        prereg = None
    if prereg is None:
        raise InputError(f"{folder}: no {PREREG} here: not a launched run folder, not recorded")
    return fd, prereg


def _outlived(pid: int, started: float | None, interval: float) -> bool:
    """Sleep out one interval, a second at a time; whether the engine still runs after each."""
    due = time.monotonic() + interval
    while time.monotonic() < due:
        time.sleep(min(1.0, max(0.0, due - time.monotonic())))
        if not engine_alive(pid, started):
            return False
    return True


def interval_s() -> float:
    """The seconds between two samples: $FONTAINE_TELEMETRY_S, else INTERVAL_S (0: none)."""
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    try:
        value = float(raw) if raw else INTERVAL_S
    except ValueError:
        raise InputError(
            f"{INTERVAL_ENV}: expected a number of seconds, got {raw[:40]!r}"
        ) from None
    if not value >= 0 or value == float("inf"):
        raise InputError(f"{INTERVAL_ENV}: expected a number of seconds >= 0, got {raw[:40]!r}")
    return value


def recorder_on() -> bool:
    """Whether a launch starts the recorder ($FONTAINE_TELEMETRY_S is not 0)."""
    return interval_s() > 0


_spawned: list[subprocess.Popen] = []  # the recorders started here, reaped as they end


def spawn(
    folder: Path, pid: int, started: float | None, env: Mapping[str, str] | None = None
) -> subprocess.Popen:
    """Start the recorder beside a run launched here, in its own session (a console may go).

    It sees the GPUs the engine sees (`env`'s CUDA_VISIBLE_DEVICES)."""
    from fontaine_tui.core.childenv import child_env

    run_env = dict(os.environ)
    if env is not None and "CUDA_VISIBLE_DEVICES" in env:
        run_env["CUDA_VISIBLE_DEVICES"] = env["CUDA_VISIBLE_DEVICES"]
    argv = [sys.executable, "-m", MODULE, str(folder), "--pid", str(pid)]
    argv += ["--interval", repr(interval_s())]
    if started:
        argv += ["--started", repr(started)]
    _spawned[:] = [p for p in _spawned if p.poll() is None]  # the ended ones reaped
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=child_env(run_env),
        close_fds=True,
    )
    _spawned.append(proc)
    # it ends with the engine, maybe long before this process: waited for then, not left a
    # zombie until the next launch
    threading.Thread(target=proc.wait, name=f"recorder {proc.pid}", daemon=True).start()
    return proc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="the run folder (holding its prereg.json)")
    ap.add_argument("--pid", type=int, required=True, help="the engine's pid")
    ap.add_argument("--started", type=float, default=None, help="its start time (psutil's)")
    ap.add_argument("--node", type=int, default=None, help="the Slurm node number")
    ap.add_argument("--interval", type=float, default=None, help="seconds between samples")
    args = ap.parse_args(argv)
    if args.interval is None:
        args.interval = interval_s() or INTERVAL_S
    if args.interval <= 0:
        ap.error("--interval: expected a positive number of seconds")
    # a stop's SIGINT to every process of a Slurm job is the engine's cue to checkpoint: the
    # recorder goes on through it and ends with the engine
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        record(args.folder, args.pid, args.started, args.node, args.interval)
    except InputError as exc:
        print(f"{ap.prog}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
