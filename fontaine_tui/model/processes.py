"""The processes mode's model: whose tree is shown, its rows, and what a key may do to it.

A signal goes only to the tree of a run this console launched (its own child, with the start
time it had when it was started), and only to a member that is still the process shown.
Attached and replayed runs show their tree read-only; a run on another host or on Slurm says
where its processes are.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from fontaine_tui.core.host.proctree import Member, ProcTree, TreeLook, send_signal, still_member
from fontaine_tui.core.host.stacks import StackDump, dump
from fontaine_tui.core.secrets import mask_argv, mask_text
from fontaine_tui.core.text import mib
from fontaine_tui.model.session import Session
from fontaine_tui.model.view import Outcome

if TYPE_CHECKING:
    from fontaine_tui.core.runfolder import RunFolder

SIGNALS = ("SIGTERM", "SIGINT", "SIGKILL", "SIGUSR1")
STOPS = ("SIGTERM", "SIGINT", "SIGKILL")  # a stop the user asked for; SIGUSR1 the trainer handles
# "pss": each member's share of the pages it holds, so the column sums to the tree's memory
COLUMNS = ("pid", "process", "state", "cpu %", "pss", "threads", "gpu mem", "command")
ARGV_SHOWN = 120  # characters of a command line in its cell


@runtime_checkable
class Grouped(Protocol):
    """A process here that leads its own group, as a launch on this host starts it."""

    folder: RunFolder
    pid: int
    sent: str | None  # the last signal sent: a stop is noted there

    def signal_group(self, sig: int) -> bool: ...


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose processes are shown, and whether this console may signal them."""

    root: int | None  # the tree's root pid here; None: no tree on this host
    started: float | None  # the root's start time, when known
    who: str  # the root's role: "engine", or "command" (a preset's own training command)
    ours: bool  # launched by this console: signals allowed
    note: str  # one line: why read-only, or where the processes are
    engine: Grouped | None = None  # the launched process, when ours: a stop is noted there


def who_of(session: Session) -> str:
    """What the run's process is called (Handle.who): "command" or "engine"."""
    return session.process.who if session.process is not None else "engine"


def scope_of(session: Session) -> Scope:
    """The tree the mode shows for a session, and whether it is this console's to signal."""
    process = session.process
    if process is not None and (where := process.elsewhere()):  # another host, a node
        return Scope(None, None, "engine", False, where)
    if process is None or not process.pid:
        why = (
            "replay: a finished run has no processes"
            if session.kind == "replay"
            else "attached by its folder: no process of this run is known here"
        )
        return Scope(None, None, "engine", False, why)
    who = process.who
    started = getattr(process, "started", None)
    if session.kind == "launch" and isinstance(process, Grouped) and _our_child(process.pid):
        return Scope(process.pid, started, who, True, "launched by this console", process)
    return Scope(
        process.pid,
        started,
        who,
        False,
        "read-only: this console did not launch this run (signals go only to its own runs)",
    )


def _our_child(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).ppid() == os.getpid()
    except psutil.Error:
        return False


def look(scope: Scope, looker: TreeLook) -> ProcTree | None:
    """The tree now, or None where there is none on this host."""
    if scope.root is None:
        return None
    return looker.look(scope.root, scope.who)


def shown_argv(argv: tuple[str, ...]) -> str:
    """A command line as shown: its program's name without its folder, secrets masked.

    Every credential in it shows as *** (core/secrets.py, the policy the stack pane's lines
    follow too)."""
    n = 0  # the words shown; only they are masked (and the next, which decides a flag's mask)
    size = 0
    while n < len(argv) and size <= ARGV_SHOWN:
        size += len(argv[n]) + 1
        n += 1
    out = mask_argv(argv[: n + 1])[:n]
    if out and "/" in out[0]:
        out[0] = out[0].rsplit("/", 1)[-1]  # python, not /home/.../bin/python
    text = " ".join(out)
    return text if len(text) <= ARGV_SHOWN else text[: ARGV_SHOWN - 1] + "…"


def row(m: Member, gpu_known: bool) -> tuple[str, ...]:
    """One member's cells, in COLUMNS order; its place in the tree as indentation."""
    return (
        str(m.pid),
        "  " * m.depth + ("└ " if m.depth else "") + _label(m),
        m.state,
        "…" if m.cpu_pct is None else f"{m.cpu_pct:.0f}",
        mib(m.mem, 0) + ("" if m.mem is None or m.mem_kind == "PSS" else f" ({m.mem_kind})"),
        "—" if m.threads is None else str(m.threads),
        _gpu_cell(m, gpu_known),
        shown_argv(m.argv),
    )


def _label(m: Member) -> str:
    """A member's name in the tree: its role, with its process name where that says more."""
    plain = not m.role or m.name in m.role or m.name.startswith("pt_data")
    return (m.role or m.name) if plain else f"{m.role} ({m.name})"


def _gpu_cell(m: Member, gpu_known: bool) -> str:
    """Its GPU memory and GPUs; — for none where GPUs are read, else nothing."""
    if not m.gpus:
        return "—" if gpu_known else ""
    used = mib(m.gpu_mem, 0) if m.gpu_mem is not None else "?"
    return f"{used} on {','.join(map(str, m.gpus))}"


def title(scope: Scope, tree: ProcTree | None) -> str:
    """The line above the table: whose tree, how many, whether it may be signalled, GPU."""
    if tree is None:
        return scope.note
    if tree.reason:
        return f"{tree.reason} ({scope.note})"
    who = tree.members[0].role if tree.members and tree.members[0].role else scope.who
    parts = [f"{who} pid {tree.root}: {len(tree.members)} process(es)", scope.note]
    if tree.gpu_reason:
        parts.append(tree.gpu_reason)
    keys = "k signal, d stack dump" if scope.ours else "d stack dump"
    return " · ".join([*parts, keys])


def signal_member(scope: Scope, m: Member, name: str) -> Outcome:
    """Send signal `name` to member `m`, only if the tree is ours and `m` still that process.

    SIGTERM, SIGINT and SIGKILL are a stop the user asked for, recorded as `stop` records one
    (attempts.jsonl's stop line, the process's `sent`) before the signal: the exit is this
    program's doing, never a preemption [recovery] restarts. A [command]'s root is the small
    parent that notes its exit (core/exitnote.py) and passes on only what its group gets: a
    signal to it goes to the group, as `stop` sends it."""
    checked = _may_signal(scope, name)
    if isinstance(checked, Outcome):
        return checked
    root, started = checked
    sig = signal.Signals[name].value
    engine = scope.engine
    group = engine if m.pid == root and scope.who == "command" else None
    why = still_member(root, started, m.pid, m.started)  # before a stop is noted
    noted = _note_stop(engine) if name in STOPS and not why else ""
    if not why:
        why = (
            _signal_group(group, m.pid, name, sig)
            if group is not None
            else _signal_one(scope, root, started, m, name, sig)
        )
    if why:
        return Outcome(f"{name} not sent: {why}", "error")
    return _sent(name, m, group is not None, noted)


def _may_signal(scope: Scope, name: str) -> tuple[int, float] | Outcome:
    """The tree's (root pid, start time) when `name` may go to it, else the first refusal.

    In order: a signal not offered, a tree not ours, no start time, a root not our child now.
    """
    if name not in SIGNALS:
        return Outcome(f"not a signal offered here: {name}", "error")
    if not scope.ours or scope.root is None:
        return Outcome(f"not sent: {scope.note}", "warning")
    if scope.started is None:
        return Outcome(f"not sent: no start time recorded for pid {scope.root}", "warning")
    if not _our_child(scope.root):
        return Outcome(f"not sent: pid {scope.root} is not this console's child any more", "error")
    return scope.root, scope.started


def _signal_group(engine: Grouped, pid: int, name: str, sig: int) -> str:
    """The signal to a [command]'s process group: '' when sent, else why not.

    Only a stop stays noted as sent: any other is the trainer's to handle, so a later end is
    judged as it comes.
    """
    before = engine.sent
    if not engine.signal_group(sig):
        return f"the process group of pid {pid} is gone"
    if name not in STOPS:
        engine.sent = before
    return ""


def _signal_one(scope: Scope, root: int, started: float, m: Member, name: str, sig: int) -> str:
    """The signal to member `m` once it is checked to be still the process shown: '' or why not.

    A stop sent to it is noted on the engine.
    """
    why = send_signal(root, started, m.pid, m.started, sig)
    if not why and name in STOPS and scope.engine is not None:
        scope.engine.sent = name
    return why


def _sent(name: str, m: Member, grouped: bool, noted: str) -> Outcome:
    """A signal sent, and to whom; a warning when its stop could not be noted (`noted`)."""
    to = (
        f"the command's process group (pid {m.pid}: the command and its own processes)"
        if grouped
        else f"pid {m.pid} ({m.role or m.name})"
    )
    if noted:
        return Outcome(f"{name} sent to {to}; {noted}", "warning")
    return Outcome(f"{name} sent to {to}")


def _note_stop(engine: Grouped | None) -> str:
    """Record a user's stop for the engine's open attempt: '' when recorded, else why not."""
    from fontaine_tui.core.run import attempts

    if engine is None:
        return ""
    try:
        opened = attempts.open_attempt(engine.folder)
        if opened is not None and opened.pid == engine.pid:  # none: no attempt to restart
            attempts.stopping(engine.folder, opened.number)
    except OSError as exc:
        return f"stop not recorded in attempts.jsonl ({exc.strerror or exc})"
    return ""


def stacks(tree: ProcTree, m: Member) -> StackDump:
    """Member `m`'s stacks (py-spy), once it is checked to be still the process shown.

    Every line is masked as the command cell is (core/secrets.py)."""
    root = tree.member(tree.root)
    why = (
        "the tree's root is gone"
        if root is None
        else still_member(tree.root, root.started, m.pid, m.started)
    )
    if why:
        return StackDump(m.pid, "", f"not dumped: {why}")
    got = dump(m.pid)  # its first line is the whole command line: masked as its cell is
    return StackDump(got.pid, mask_text(got.text), mask_text(got.error))
