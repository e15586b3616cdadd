"""One process's Python stacks, as `py-spy dump --pid N` prints them.

py-spy is optional (pip install py-spy). It reads the process's memory, which the kernel may
refuse (ptrace permission: a container without CAP_SYS_PTRACE, Yama's ptrace_scope): then its
error line is what the user sees.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.childenv import child_env

INSTALL_HINT = "py-spy is not installed: pip install py-spy (or pip install 'fontaine-tui[stacks]')"
DUMP_S = 20.0  # a dump of a live process takes well under a second


@dataclass(frozen=True, slots=True)
class StackDump:
    """py-spy's output, or the one line saying why there is none."""

    pid: int
    text: str
    error: str = ""


def py_spy() -> str | None:
    """The py-spy executable: on PATH, or beside this Python (a virtual environment's bin)."""
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.is_file() else None


def _error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.lower().startswith("error")]
    return (errors or lines or ["no output"])[0][:300]


def dump(pid: int, timeout: float = DUMP_S, exe: str | None = None) -> StackDump:
    """`py-spy dump --pid PID`; its error line when it fails, the install hint without it."""
    exe = exe or py_spy()
    if exe is None:
        return StackDump(pid, "", INSTALL_HINT)
    try:
        done = subprocess.run(
            [exe, "dump", "--pid", str(pid)],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=child_env(),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return StackDump(pid, "", f"py-spy dump --pid {pid}: no answer in {timeout:g} s")
    except OSError as exc:
        return StackDump(pid, "", f"py-spy: {exc.strerror or exc}")
    if done.returncode != 0:
        return StackDump(pid, done.stdout, f"py-spy: {_error_line(done.stderr + done.stdout)}")
    return StackDump(pid, done.stdout)
