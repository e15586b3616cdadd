"""The run folder contract (docs/run-folder.md): one folder per run, fixed file names."""

from __future__ import annotations

import errno
import os
import re
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core import readfile
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.readfile import check_file

LOG = "train_log.jsonl"
PREREG = "prereg.json"
AMENDMENTS = "amendments.jsonl"
ENGINE_OUT = "engine.out.log"
VERDICT = "verdict.json"
REVIEW = "review.jsonl"
CHECKPOINTS = "checkpoints"
ATTEMPTS = "attempts.jsonl"
TELEMETRY = "telemetry.jsonl"  # the recorder's history of this host (core/host/recorder.py)


def node_telemetry(node: int) -> str:
    """The history file of a Slurm job's node number `node` ($SLURM_NODEID)."""
    return f"telemetry.node{node}.jsonl"


@dataclass(frozen=True, slots=True)
class RunFolder:
    root: Path

    @property
    def log(self) -> Path:
        return self.root / LOG

    @property
    def prereg(self) -> Path:
        return self.root / PREREG

    @property
    def amendments(self) -> Path:
        return self.root / AMENDMENTS

    @property
    def engine_out(self) -> Path:
        return self.root / ENGINE_OUT

    @property
    def verdict(self) -> Path:
        return self.root / VERDICT

    @property
    def review(self) -> Path:
        return self.root / REVIEW

    @property
    def checkpoints(self) -> Path:
        return self.root / CHECKPOINTS

    @property
    def attempts(self) -> Path:
        """Each launch and resume, and how it ended (core/run/attempts.py)."""
        return self.root / ATTEMPTS

    @property
    def telemetry(self) -> Path:
        """The telemetry history the recorder writes beside a run launched here."""
        return self.root / TELEMETRY


NAME_MAX = 255  # bytes in one name of a path, on every file system Linux mounts


def _short(path: str) -> str:
    """`path` with each name longer than NAME_MAX cut, its length said (for one line)."""
    parts = [
        p if len(os.fsencode(p)) <= NAME_MAX else f"{p[:24]}...({len(os.fsencode(p))} bytes)"
        for p in path.split(os.sep)
    ]
    return os.sep.join(parts)


def check_target(target: str | Path) -> str:
    """Check a run folder or log named on the command line, before anything reads it.

    Returns the path to read: `target` itself, or, when `target` is a symbolic link to a
    file, the file it points to (`read_path`): a link to a run folder's log is read as that
    log, its folder's prereg.json and blind included, never as a loose log.

    Raises InputError for a path the system refuses to look up (a name over 255 bytes, a
    loop of links, a folder we may not enter) and for a folder that is `/` itself (a link to
    it would have every reader walk the whole machine and `amend` write into it). A path
    that does not exist passes: each command says what it expected there.
    """
    text = os.fspath(target)
    try:
        st = os.stat(text)
    except (FileNotFoundError, NotADirectoryError):
        return text
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise InputError(
                f"{_short(text)}: a name in this path is longer than a file "
                f"system allows ({NAME_MAX} bytes) or the path is too long: "
                "not a run folder"
            ) from None
        raise InputError(f"{text}: cannot look it up ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode) and os.path.realpath(text) == os.sep:
        how = "" if os.path.abspath(text) == os.sep else " (through a link)"
        raise InputError(f"{text}: this is the root folder /{how}, not a run folder")
    return read_path(text)


def read_path(target: str | Path) -> str:
    """`target`, or the file it points to when it is a symbolic link to one.

    Which run folder a file belongs to is where the file is, not where a link to it was
    made: the link's own folder holds no prereg.json, and a frozen, blinded run would be
    read with any preset. A link to a folder is read through (the folder's own files are
    found through it). A relative `target` gives a path relative to the working folder.
    """
    text = os.fspath(target)
    if not os.path.islink(text) or os.path.isdir(text):
        return text
    real = os.path.realpath(text)
    return real if os.path.isabs(text) else os.path.relpath(real)


def folder_of(target: str | Path) -> RunFolder:
    """The run folder `target` names: the folder itself, else the one holding the file.

    For a link to a file, the one holding the file it points to (`read_path`)."""
    path = Path(read_path(target))
    return RunFolder(path if path.is_dir() else path.parent)


def check_regular(path: Path) -> int:
    """The size of the regular file at `path`.

    Raises InputError for a FIFO, a device, a folder (a read of /dev/zero or a pipe would
    never end), a missing file or one that cannot be read.
    """
    try:
        return check_file(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such log file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def locate_log(target: str | Path) -> tuple[Path, RunFolder | None]:
    """A log file, or a run folder holding one: (log path, run folder or None)."""
    p = Path(read_path(target))
    if p.is_dir():
        folder = RunFolder(p)
        if not folder.log.exists():
            raise InputError(f"{p}: no {LOG} in this run folder")
        check_regular(folder.log)
        return folder.log, folder
    if p.exists():  # a pipe or a device is refused: a read would never end
        check_regular(p)
        return p, RunFolder(p.parent) if p.name == LOG else None
    raise InputError(f"{p}: no such log file or run folder")


ROTATED = re.compile(r"\.([1-9][0-9]{0,5})(\.gz)?")  # logrotate's numbers: .1, never .01


def gz_is_prefix(gz: Path, plain: Path) -> bool:
    """Whether the gzip file `gz` decompresses to a prefix of the file `plain`.

    A rotation caught compressing leaves `.N` and a `.N.gz` cut short, whose stream may end
    early: what it holds so far is compared. At most the whole-file read limit is decompressed;
    False for one past that, one that cannot be decompressed, or any byte that differs."""
    most, seen = readfile.limit(), 0
    inflate = zlib.decompressobj(wbits=31)
    try:
        with gz.open("rb") as packed, plain.open("rb") as whole:
            while data := packed.read(2**16):
                while data:
                    out = inflate.decompress(data, 2**20)
                    seen += len(out)
                    if seen > most or whole.read(len(out)) != out:
                        return False
                    if inflate.eof:
                        data = inflate.unused_data.lstrip(b"\0")
                        inflate = zlib.decompressobj(wbits=31)
                    else:
                        data = inflate.unconsumed_tail
    except (OSError, zlib.error):
        return False
    return True


def rotated_segments(log: str | Path) -> list[Path]:
    """The log's rotated segments beside it, oldest first.

    For example train_log.jsonl.3.gz, .2, .1 (logrotate's numbering: .1 is the newest).
    With both `.N` and `.N.gz` (a rotation caught compressing), the plain file is read when
    the .gz holds a prefix of it; a .gz that holds anything else is other evidence, read
    before the plain file (so that a probe the two give different values is a conflict).
    """
    log = Path(log)
    found: dict[int, list[Path]] = {}
    try:
        names = os.listdir(log.parent)
    except OSError:
        return []
    for name in names:
        if not name.startswith(log.name):
            continue
        m = ROTATED.fullmatch(name, len(log.name))
        if m is None:
            continue
        found.setdefault(int(m.group(1)), []).append(log.parent / name)
    out: list[Path] = []
    for n in sorted(found, reverse=True):
        paths = sorted(found[n], key=lambda p: not p.name.endswith(".gz"))  # the .gz first
        if len(paths) == 2 and gz_is_prefix(paths[0], paths[1]):
            paths = paths[1:]  # compression cut short: the plain file holds it all
        out.extend(paths)
    return out
