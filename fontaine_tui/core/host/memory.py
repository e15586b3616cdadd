"""This host's memory as a process in it can use it, and what one process of it holds.

Host RAM is /proc/meminfo capped by cgroup limits: psutil.virtual_memory() reports the whole
machine inside a container; the limit that kills us is the cgroup's (v2 memory.max /
memory.current, v1 memory.limit_in_bytes / memory.usage_in_bytes), so the smaller of the two
views wins.

A process's memory is its PSS (`process_memory`, the one figure the telemetry, the recorder,
the processes mode and the stall diagnosis give for the engine tree): a page shared by N
processes counts 1/N in each, so the tree's sum counts a buffer the engine's DataLoader
workers share with it (forked, copy on write) once, where their RSS would count it once a
process. Where the kernel gives no Pss line the figure is the USS (the private pages), and
where smaps_rollup cannot be read at all (another user's process, a kernel before 4.14) the
RSS; each figure says which it is.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

UNLIMITED = 1 << 60  # v1 writes 9223372036854771712 for "no limit"


@dataclass(frozen=True, slots=True)
class HostRam:
    total: int  # bytes usable by us (cgroup limit when it is lower than the machine)
    available: int  # bytes we can still allocate
    source: str  # "meminfo", "cgroup v2 /path", "cgroup v1 /path"


def hostname() -> str:
    return socket.gethostname()


def parse_meminfo(text: str) -> tuple[int, int] | None:
    """(MemTotal, MemAvailable) in bytes from /proc/meminfo text; None if either is missing."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            scale = 1024 if len(parts) > 1 and parts[1].lower() == "kb" else 1
            values[key.strip()] = int(parts[0]) * scale
    if "MemTotal" not in values:
        return None
    available = values.get("MemAvailable")
    if available is None:  # kernels before 3.14
        available = sum(values.get(k, 0) for k in ("MemFree", "Buffers", "Cached"))
    return values["MemTotal"], available


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return UNLIMITED
    return int(text) if text.isdigit() else None


def _stat_value(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except OSError:
        pass
    return 0


def cgroup_paths(self_cgroup: str) -> tuple[str | None, str | None]:
    """(v2 path, v1 memory path) from /proc/PID/cgroup text ("0::/p", "N:memory:/p")."""
    v2 = v1 = None
    for line in self_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        if hid == "0" and controllers == "":
            v2 = path
        elif "memory" in controllers.split(","):
            v1 = path
    return v2, v1


def _candidates(base: Path, path: str | None) -> list[Path]:
    """The cgroup's own folder, its ancestors and the mount root.

    A limit anywhere above the cgroup binds too. The mount root is included since inside a
    container the listed path is often not mounted."""
    out: list[Path] = []
    if path:
        p = Path(path.lstrip("/"))
        while True:
            out.append(base / p)
            if p == Path("."):
                break
            p = p.parent
    if base not in out:
        out.append(base)
    return out


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where one cgroup version keeps a folder's memory limit, usage and page cache."""

    folder: str  # the hierarchy's mount under the cgroup root
    limit_name: str
    usage_name: str
    cache_key: str  # memory.stat's reclaimable page cache
    label: str

    def limit_in(self, folder: Path) -> tuple[int, int] | None:
        """(limit, usage less reclaimable page cache) set in `folder`; None without a limit."""
        limit = _read_int(folder / self.limit_name)
        if limit is None or limit >= UNLIMITED:
            return None
        usage = _read_int(folder / self.usage_name) or 0
        return limit, max(0, usage - _stat_value(folder / "memory.stat", self.cache_key))


_V2 = _Layout("", "memory.max", "memory.current", "inactive_file", "cgroup v2")
_V1 = _Layout(
    "memory",
    "memory.limit_in_bytes",
    "memory.usage_in_bytes",
    "total_inactive_file",
    "cgroup v1",
)


def _limit_folders(root: Path, self_cgroup: str) -> Iterator[tuple[_Layout, Path]]:
    """Each folder whose memory limit would bind this process (v2 first), with its layout."""
    v2, v1 = cgroup_paths(self_cgroup)
    for layout, path in ((_V2, v2), (_V1, v1)):
        base = root / layout.folder
        if base.is_dir():
            yield from ((layout, folder) for folder in _candidates(base, path))


def cgroup_limit(
    root: Path = Path("/sys/fs/cgroup"), self_cgroup: str | None = None
) -> tuple[int, int, str] | None:
    """The tightest memory cgroup's limit, usage and source, or None when no limit applies.

    The result is (limit, usage excluding reclaimable page cache, source); of equal limits the
    first found."""
    if self_cgroup is None:
        try:
            self_cgroup = Path("/proc/self/cgroup").read_text()
        except OSError:
            self_cgroup = ""
    limits = [
        (*found, f"{layout.label} {folder}")
        for layout, folder in _limit_folders(root, self_cgroup)
        if (found := layout.limit_in(folder)) is not None
    ]
    return min(limits, key=lambda limit: limit[0], default=None)


def host_ram(
    meminfo_text: str | None = None,
    cgroup_root: Path = Path("/sys/fs/cgroup"),
    self_cgroup: str | None = None,
) -> tuple[HostRam | None, str]:
    """(RAM as we can use it, "") or (None, reason)."""
    if meminfo_text is None:
        try:
            meminfo_text = Path("/proc/meminfo").read_text()
        except OSError as exc:
            return None, f"no /proc/meminfo ({exc.strerror})"
    parsed = parse_meminfo(meminfo_text)
    if parsed is None:
        return None, "no MemTotal in /proc/meminfo"
    total, available = parsed
    ram = HostRam(total, available, "meminfo")
    limit = cgroup_limit(cgroup_root, self_cgroup)
    if limit is not None and limit[0] < total:
        cap, used, source = limit
        ram = HostRam(cap, max(0, min(available, cap - used)), source)
    return ram, ""


# -- one process's memory ---------------------------------------------------------------------

KINDS = ("PSS", "USS", "RSS")  # the figures process_memory gives, the one it prefers first


@dataclass(frozen=True, slots=True)
class Footprint:
    """Bytes of memory and what they are: "PSS", "USS" or "RSS" ("PSS+RSS" for a mixed sum)."""

    bytes: int
    kind: str


def parse_rollup(text: str) -> Footprint | None:
    """The PSS in /proc/PID/smaps_rollup text; the USS without a Pss line; else None."""
    fields: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            fields[key.strip()] = int(parts[0]) << 10  # kB
    if "Pss" in fields:
        return Footprint(fields["Pss"], "PSS")
    private = [
        fields[k] for k in ("Private_Clean", "Private_Dirty", "Private_Hugetlb") if k in fields
    ]
    return Footprint(sum(private), "USS") if private else None


def _statm_rss(pid: int, proc: Path) -> Footprint | None:
    try:
        resident = int((proc / str(pid) / "statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return Footprint(resident * os.sysconf("SC_PAGE_SIZE"), "RSS")


def process_memory(pid: int, proc: Path = Path("/proc")) -> Footprint | None:
    """The memory process `pid` holds: its PSS, else USS, else RSS (see the module's doc).

    None when there is no such process. A process without memory of its own (a zombie, whose
    smaps_rollup the kernel refuses, or one ending) has 0 PSS, not its statm's 0 RSS."""
    try:
        data = (proc / str(pid) / "smaps_rollup").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        if not (proc / str(pid)).exists():
            return None
        if (proc / "self" / "smaps_rollup").exists():  # the kernel has them: this one has
            return Footprint(0, "PSS")  # no address space left (a zombie, or one ending)
        return _statm_rss(pid, proc)  # a kernel before 4.14: no smaps_rollup
    except OSError:  # another user's process: its mappings are not ours to read
        return _statm_rss(pid, proc)
    if not data.strip():
        return Footprint(0, "PSS")  # no address space: a zombie, or one that just ended
    return parse_rollup(data.decode("ascii", "replace")) or _statm_rss(pid, proc)


def summed(parts: Iterable[Footprint]) -> Footprint:
    """The processes' figures summed; its kind names every kind that went in ("PSS+RSS")."""
    parts = list(parts)
    kinds = {k for p in parts for k in p.kind.split("+")} or {"PSS"}
    return Footprint(sum(p.bytes for p in parts), "+".join(k for k in KINDS if k in kinds))
