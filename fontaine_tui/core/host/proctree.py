"""A run's process tree: each member's role, state, CPU, memory, threads and GPU memory.

The tree is the launched process and its descendants (torchrun, its ranks, their DataLoader
workers). CPU % is the CPU time a member used between two looks, over the wall time between
them, so the first look has none. Memory is each member's PSS (core/host/memory.py's
`process_memory`): a page it shares with the others counts its share, so the column sums to
the tree's memory, as the telemetry gives it. GPU memory is NVML's list of each GPU's compute processes
(core/host/nvml.py); without a GPU the tree says why once, never a number.

A signal goes to a member only while it is still the process that was shown: the same pid,
the same start time, still under the same root. The pid is pinned first (a pidfd), so a pid
reused between the check and the signal is never hit.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fontaine_tui.core.host.memory import process_memory
from fontaine_tui.core.host.nvml import GpuSample, read_gpus

_SAME_START_S = 1e-3  # two looks at one process give the same start time
_TORCHRUN = ("torchrun", "torch.distributed.run", "torch.distributed.launch")
_LOCAL_RANK_ARG = re.compile(r"--local[-_]rank[= ](\d+)")


@dataclass(frozen=True, slots=True)
class Member:
    """One process of the tree, as one look saw it."""

    pid: int
    ppid: int
    depth: int  # 0: the root
    started: float  # its start time: tells it from a later process given the same pid
    name: str
    role: str  # "torchrun", "rank 1", "loader worker (rank 0)", ...; "" when it cannot be told
    state: str  # psutil's status: "running", "sleeping", "disk-sleep", "zombie", ...
    cpu_pct: float | None  # percent of one core since the last look; None on the first
    mem: int | None  # bytes: its PSS, else as `mem_kind` says; None when it cannot be read
    threads: int | None
    argv: tuple[str, ...]
    gpu_mem: int | None = None  # bytes over the GPUs that list it; None when unknown or none
    gpus: tuple[int, ...] = ()  # NVML indices of the GPUs that list it
    mem_kind: str = "PSS"  # "PSS", "USS" or "RSS" (memory.process_memory)


@dataclass(frozen=True, slots=True)
class ProcTree:
    """The members of one tree, the root first and each parent before its children."""

    root: int
    members: tuple[Member, ...]
    gpu_reason: str = ""  # why there is no GPU column ("no GPU (NVML: ...)"); "" when read
    reason: str = ""  # why there is no tree at all (the root is gone, access denied)

    def member(self, pid: int) -> Member | None:
        return next((m for m in self.members if m.pid == pid), None)


# which command lines make a role, in the order role_of asks about them
_LAUNCHERS = ((_TORCHRUN, "torchrun"), (("multiprocessing.resource_tracker",), "resource tracker"))
_SPAWNED = ((("multiprocessing.spawn", "multiprocessing.forkserver"), "worker process"),)


def role_of(
    name: str,
    argv: tuple[str, ...],
    rank: str | None,
    parent_rank: str | None,
    root_role: str | None,
) -> str:
    """What a process is, from its name, command line and RANK (`root_role` for the root).

    The first of these that tells wins: a DataLoader worker, a launcher, what its rank says,
    a spawned worker, a --local-rank argument."""
    joined = " ".join(argv[:4])
    told = (
        _loader_role(name, rank),
        _marked_role(joined, _LAUNCHERS),
        _rank_role(rank, parent_rank, root_role),
        _marked_role(joined, _SPAWNED),
        _local_rank_role(argv),
    )
    return next((role for role in told if role is not None), "")


def _loader_role(name: str, rank: str | None) -> str | None:
    if not name.startswith("pt_data_worker"):  # torch names its DataLoader workers so
        return None
    return f"loader worker (rank {rank})" if rank is not None else "loader worker"


def _marked_role(joined: str, table: tuple[tuple[tuple[str, ...], str], ...]) -> str | None:
    """The role of the first row whose marks appear in the command line."""
    return next((role for marks, role in table if any(m in joined for m in marks)), None)


def _rank_role(rank: str | None, parent_rank: str | None, root_role: str | None) -> str | None:
    """A rank's own process, else the root's role, else a rank's child."""
    if rank is not None and rank != parent_rank:
        return f"rank {rank}"
    if root_role is not None:
        return root_role
    return None if rank is None else f"child of rank {rank}"


def _local_rank_role(argv: tuple[str, ...]) -> str | None:
    local = _LOCAL_RANK_ARG.search(" ".join(argv))
    return f"local rank {local.group(1)}" if local else None


def _rank(proc: Any) -> str | None:
    try:
        env = proc.environ()
    except Exception:  # another user's, or gone: its rank is unknown
        return None
    rank = env.get("RANK")
    return rank if rank is not None and rank.isdigit() else None


def _cpu_s(proc: Any) -> float:
    t = proc.cpu_times()
    return float(t.user + t.system)


class TreeLook:
    """Looks at one tree again and again; CPU % is the CPU time between two looks."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._cpu: dict[tuple[int, float], float] = {}  # (pid, start) -> CPU seconds then
        self._at: float | None = None

    def look(
        self,
        root: int,
        root_role: str = "engine",
        gpus: tuple[tuple[GpuSample, ...] | None, str] | None = None,
    ) -> ProcTree:
        """The tree under `root` now. `gpus` is read_gpus' answer (None: ask NVML here)."""
        import psutil

        try:
            top = psutil.Process(root)
            found = [top, *top.children(recursive=True)]
        except psutil.NoSuchProcess:
            return ProcTree(root, (), reason=f"process {root} is gone")
        except psutil.AccessDenied:
            return ProcTree(root, (), reason=f"process {root}: access denied")
        members = _arrange(root, self._rows(found), root_role)
        listed, gpu_reason = _gpu_use(read_gpus(None) if gpus is None else gpus)
        if listed:
            members = [_with_gpu(m, listed.get(m.pid)) for m in members]
        return ProcTree(root, tuple(members), gpu_reason)

    def _rows(self, found: list[Any]) -> list[dict[str, Any]]:
        """Each process's fields now, with its CPU % since the last look, which it remembers."""
        import psutil

        now = self.clock()
        wall = None if self._at is None else now - self._at
        cpu: dict[tuple[int, float], float] = {}
        raw: list[dict[str, Any]] = []
        for p in found:
            try:
                row = _read(p)
            except (psutil.NoSuchProcess, psutil.AccessDenied):  # ended while we looked
                continue
            used = row["cpu_s"]
            key = (row["pid"], row["started"])
            if used is not None:
                cpu[key] = used
            row["cpu"] = _cpu_pct(used, self._cpu.get(key), wall)
            raw.append(row)
        self._cpu, self._at = cpu, now
        return raw


def _cpu_pct(used: float | None, before: float | None, wall: float | None) -> float | None:
    """Percent of one core between two looks; None without both looks or time between them."""
    if used is None or before is None or not wall:
        return None
    return max(0.0, 100.0 * (used - before) / wall)


def _read(p: Any) -> dict[str, Any]:
    """One process's fields in one read of /proc; what it keeps from us is None."""
    memory = process_memory(p.pid)
    with p.oneshot():
        return {
            "pid": p.pid,
            "ppid": p.ppid(),
            "started": p.create_time(),
            "name": p.name(),
            "state": str(p.status()),
            "argv": tuple(_maybe(p.cmdline, ())),
            "mem": None if memory is None else memory.bytes,
            "mem_kind": "PSS" if memory is None else memory.kind,
            "threads": _maybe(p.num_threads, None),
            "cpu_s": _maybe(lambda: _cpu_s(p), None),
            "rank": _rank(p),
        }


def _maybe(call: Callable[[], Any], default: Any) -> Any:
    import psutil

    try:
        return call()
    except (psutil.AccessDenied, psutil.ZombieProcess):
        return default


def _arrange(root: int, raw: list[dict[str, Any]], root_role: str) -> list[Member]:
    """Depth first from the root, children by pid; a member whose parent went hangs under it."""
    by_pid = {r["pid"]: r for r in raw}
    children: dict[int, list[int]] = {}
    for r in raw:
        if r["pid"] != root:
            parent = r["ppid"] if r["ppid"] in by_pid else root
            children.setdefault(parent, []).append(r["pid"])
    out: list[Member] = []

    def add(pid: int, depth: int, parent_rank: str | None) -> None:
        r = by_pid[pid]
        role = role_of(r["name"], r["argv"], r["rank"], parent_rank, None if depth else root_role)
        out.append(
            Member(
                pid,
                r["ppid"],
                depth,
                r["started"],
                r["name"],
                role,
                r["state"],
                r["cpu"],
                r["mem"],
                r["threads"],
                r["argv"],
                mem_kind=r["mem_kind"],
            )
        )
        for child in sorted(children.get(pid, ())):
            add(child, depth + 1, r["rank"])

    if root in by_pid:
        add(root, 0, None)
    return out


def _gpu_use(
    answer: tuple[tuple[GpuSample, ...] | None, str],
) -> tuple[dict[int, list[tuple[int, int | None]]], str]:
    """Each listed pid's (NVML index, bytes) pairs, and why there are none."""
    gpus, why = answer
    if gpus is None:
        return {}, f"no GPU ({why})" if why else "no GPU"
    listed: dict[int, list[tuple[int, int | None]]] = {}
    unlisted = [g.index for g in gpus if g.processes is None]
    for g in gpus:
        for p in g.processes or ():
            listed.setdefault(p.pid, []).append((g.index, p.used_mem))
    if unlisted:
        return listed, f"NVML lists no processes on GPU {', '.join(map(str, unlisted))}"
    return listed, ""


def _with_gpu(m: Member, uses: list[tuple[int, int | None]] | None) -> Member:
    from dataclasses import replace

    if not uses:
        return m
    known = [used for _, used in uses if used is not None]
    return replace(
        m, gpus=tuple(i for i, _ in uses), gpu_mem=sum(known) if len(known) == len(uses) else None
    )


# -- a signal, only to a member still in the tree --------------------------------------------


def still_member(root: int, root_started: float, pid: int, started: float) -> str:
    """'' when `pid` is still the process that was shown under `root`; else why not."""
    import psutil

    try:
        top = psutil.Process(root)
        if abs(top.create_time() - root_started) > _SAME_START_S:
            return f"process {root} is not the run's any more (its pid was reused)"
        if pid != root and pid not in {c.pid for c in top.children(recursive=True)}:
            return f"pid {pid} is not in the run's process tree"
        if abs(psutil.Process(pid).create_time() - started) > _SAME_START_S:
            return f"pid {pid} is another process now (started at another time)"
    except psutil.NoSuchProcess as exc:
        return f"process {exc.pid} is gone"
    except psutil.AccessDenied as exc:
        return f"process {exc.pid}: access denied"
    return ""


def send_signal(root: int, root_started: float, pid: int, started: float, sig: int) -> str:
    """Send `sig` to `pid` if it is still that member of the tree: '' when sent, else why not.

    The pid is pinned (pidfd_open) before the check: if it ends and its number is given to
    another process after that, the signal finds the pinned, ended one and goes nowhere."""
    try:
        pinned = _pin(pid)
    except ProcessLookupError:
        return f"process {pid} is gone"
    try:
        why = still_member(root, root_started, pid, started)
        if why:
            return why
        if pinned is not None:
            signal.pidfd_send_signal(pinned, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        return f"process {pid} is gone"
    except PermissionError:
        return f"process {pid}: not permitted"
    finally:
        if pinned is not None:
            os.close(pinned)
    return ""


def _pin(pid: int) -> int | None:
    """A pidfd for `pid`; None where there is none to have (then it is signalled by pid).

    Raises ProcessLookupError when the process is gone."""
    if not (hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")):
        return None
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        raise
    except OSError:  # a kernel older than 5.3: checked, then signalled by pid
        return None
