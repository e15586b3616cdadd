"""The kernel OOM killer's counters for one process: its memory cgroup's and /proc/vmstat's.

The counters are those of its memory cgroup (v2 memory.events, v1 memory.oom_control: `oom_kill`)
and /proc/vmstat's system-wide `oom_kill`.

A SIGKILL says nothing of who sent it. The OOM killer counts each kill in the victim's
memory cgroup and in /proc/vmstat, so `MemoryWatch` takes those counters when the engine
starts, follows the engine's cgroup on each poll (a wrapper may move it right after the
start), and `evidence()` says by how much they rose (core/launch/exits.cause_of reads it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.host.memory import cgroup_paths

PROC = Path("/proc")
CGROUP_ROOT = Path("/sys/fs/cgroup")
UNLIMITED = 1 << 60  # cgroup v1 writes 9223372036854771712 for "no limit"


@dataclass(frozen=True, slots=True)
class Cgroup:
    """A memory cgroup: its folder and hierarchy version (1 or 2)."""

    path: Path
    version: int

    @property
    def events(self) -> Path:
        return self.path / ("memory.events" if self.version == 2 else "memory.oom_control")

    def oom_kills(self) -> int | None:
        """Its `oom_kill` counter; None when it cannot be read (gone, no such key)."""
        return _key(self.events, "oom_kill")

    def limit(self) -> tuple[int, Path] | None:
        """(bytes, folder) of the nearest memory limit: its own, else an ancestor's."""
        name = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        p = self.path
        while True:
            try:
                text = (p / name).read_text().strip()
            except OSError:
                return None  # above the mount: no limit found
            if text.isdigit() and int(text) < UNLIMITED:
                return int(text), p
            if p.parent == p:
                return None
            p = p.parent


def _key(path: Path, key: str) -> int | None:
    """`key N` from a flat keyed file (memory.events, memory.oom_control, /proc/vmstat)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(1 << 16)
    except OSError:
        return None
    m = re.search(rb"^" + re.escape(key.encode()) + rb" (\d+)$", data, re.MULTILINE)
    return int(m.group(1)) if m else None


def _cgroup_mounts(proc: Path, root: Path) -> list[tuple[int, str, Path]]:
    """The memory hierarchies as (version, mount root inside the hierarchy, mount point).

    They are read from mountinfo, else taken from the usual places (v1 under memory/, v2 at the
    root or unified/)."""
    try:
        lines = (proc / "self" / "mountinfo").read_text().splitlines()
    except OSError:
        lines = []
    found = [mount for mount in map(_memory_mount, lines) if mount is not None]
    found.sort(key=lambda m: m[0])  # v1 first: on a hybrid system memory lives there
    for usual in ((1, "/", root / "memory"), (2, "/", root), (2, "/", root / "unified")):
        if usual not in found:
            found.append(usual)
    return found


def _memory_mount(line: str) -> tuple[int, str, Path] | None:
    """A mountinfo line's (version, mount root, mount point) if it mounts a memory hierarchy."""
    head, _, tail = line.partition(" - ")
    fields, extra = head.split(), tail.split()
    if len(fields) < 5 or len(extra) < 3:
        return None
    if extra[0] == "cgroup2":
        return 2, fields[3], Path(fields[4])
    if extra[0] == "cgroup" and "memory" in extra[2].split(","):
        return 1, fields[3], Path(fields[4])
    return None


def _inside_mount(path: str, mount_root: str) -> str | None:
    """`path` as seen under a mount of the hierarchy from `mount_root` down; None if outside."""
    if mount_root == "/":
        return path
    # the hierarchy is mounted from a folder down (a container)
    if path != mount_root and not path.startswith(mount_root.rstrip("/") + "/"):
        return None
    return path[len(mount_root) :]


def cgroup_from(text: str, proc: Path = PROC, root: Path = CGROUP_ROOT) -> Cgroup | None:
    """The memory cgroup named by /proc/PID/cgroup's `text`, or None.

    The cgroup is one whose OOM-kill counter this machine shows. A v1 "N:memory:/path" line is
    used, else the v2 "0::/path" line."""
    v2, v1 = cgroup_paths(text)
    paths = {2: v2, 1: v1}
    for version, mount_root, mount in _cgroup_mounts(proc, root):
        path = paths.get(version)
        inside = None if path is None else _inside_mount(path, mount_root)
        if inside is None:
            continue
        group = Cgroup(mount / inside.strip("/"), version)
        if group.events.is_file():
            return group
    return None


def vmstat_oom_kills(proc: Path = PROC) -> int | None:
    """The system-wide count of OOM kills since boot (any process, any cgroup)."""
    return _key(proc / "vmstat", "oom_kill")


@dataclass(frozen=True, slots=True)
class MemoryEvidence:
    """What the OOM killer's counters said when an attempt ended.

    Each is the rise since its start, of its cgroup's oom_kill and of the system-wide one (None
    when not readable)."""

    cgroup: str | None = None  # the engine's memory cgroup folder, last seen
    version: int | None = None
    cgroup_kills: int | None = None
    limit: int | None = None  # bytes, the nearest limit (its own or an ancestor's)
    limit_at: str | None = None  # the folder that sets it
    system_kills: int | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "cgroup": self.cgroup,
            "version": self.version,
            "cgroup_oom_kills": self.cgroup_kills,
            "limit": self.limit,
            "limit_at": self.limit_at,
            "system_oom_kills": self.system_kills,
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, object]) -> MemoryEvidence:
        def num(key: str) -> int | None:
            v = doc.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) else None

        def text(key: str) -> str | None:
            v = doc.get(key)
            return v if isinstance(v, str) else None

        return cls(
            text("cgroup"),
            num("version"),
            num("cgroup_oom_kills"),
            num("limit"),
            text("limit_at"),
            num("system_oom_kills"),
        )


class MemoryWatch:
    """The engine's OOM-kill counters, taken at its start and read again at its exit.

    The engine's cgroup is followed on each poll (one read of /proc/PID/cgroup), and a new
    cgroup's counter is taken when it is first seen. `evidence` gives the rise at the exit."""

    def __init__(
        self,
        pid: int,
        cgroup: Cgroup | None,
        cgroup_at_start: int | None,
        vmstat_at_start: int | None,
        proc: Path = PROC,
        root: Path = CGROUP_ROOT,
    ) -> None:
        self.pid, self.cgroup, self.cgroup_at_start = pid, cgroup, cgroup_at_start
        self.vmstat_at_start = vmstat_at_start
        self._proc, self._root = proc, root
        self._seen: bytes | None = None  # the /proc/PID/cgroup text last read

    @classmethod
    def start(cls, pid: int, proc: Path = PROC, root: Path = CGROUP_ROOT) -> MemoryWatch:
        watch = cls(pid, None, None, vmstat_oom_kills(proc), proc, root)
        watch.refresh()
        return watch

    @classmethod
    def restore(cls, pid: int, baseline: Mapping[str, object]) -> MemoryWatch:
        """A watch rebuilt from `baseline()`'s form, which attempts.jsonl keeps.

        A reattached engine's counters are thus still judged from its start."""
        cg = baseline.get("cgroup")
        group, at_start = None, None
        if isinstance(cg, Mapping) and isinstance(cg.get("path"), str):
            version = cg.get("version")
            group = Cgroup(Path(str(cg["path"])), version if version in (1, 2) else 1)
            at = cg.get("oom_kill_at_start")
            at_start = at if isinstance(at, int) else None
        vm = baseline.get("vmstat_oom_kill_at_start")
        return cls(pid, group, at_start, vm if isinstance(vm, int) else None)

    def baseline(self) -> dict[str, object]:
        cg = (
            None
            if self.cgroup is None
            else {
                "path": str(self.cgroup.path),
                "version": self.cgroup.version,
                "oom_kill_at_start": self.cgroup_at_start,
            }
        )
        return {"cgroup": cg, "vmstat_oom_kill_at_start": self.vmstat_at_start}

    def refresh(self) -> None:
        try:
            with open(self._proc / str(self.pid) / "cgroup", "rb") as fh:
                text = fh.read()
        except OSError:
            return  # gone: the last cgroup seen is the one it died in
        if text == self._seen or self._exiting():
            return  # an exiting task is shown in the root cgroup (v1): not a move
        self._seen = text
        group = cgroup_from(text.decode("utf-8", "replace"), self._proc, self._root)
        if group is not None and group != self.cgroup:
            self.cgroup, self.cgroup_at_start = group, group.oom_kills()

    def _exiting(self) -> bool:
        """A zombie, or on its way out (PF_EXITING), or gone."""
        try:
            stat = (self._proc / str(self.pid) / "stat").read_bytes()
        except OSError:
            return True
        fields = stat[stat.rfind(b")") + 2 :].split()
        return len(fields) < 7 or fields[0] in (b"Z", b"X") or bool(int(fields[6]) & 0x4)

    def evidence(self) -> MemoryEvidence:
        system = vmstat_oom_kills(self._proc)
        rise = (
            None
            if system is None or self.vmstat_at_start is None
            else system - self.vmstat_at_start
        )
        if self.cgroup is None:
            return MemoryEvidence(system_kills=rise)
        now = self.cgroup.oom_kills()
        kills = None if now is None or self.cgroup_at_start is None else now - self.cgroup_at_start
        limit = self.cgroup.limit()
        return MemoryEvidence(
            str(self.cgroup.path),
            self.cgroup.version,
            kills,
            limit[0] if limit else None,
            str(limit[1]) if limit else None,
            rise,
        )
