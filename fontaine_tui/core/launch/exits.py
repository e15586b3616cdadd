"""An attempt's exit: what ended it, read from its exit status, its log and the OOM killer.

A SIGKILL says nothing of who sent it: `cause_of` distinguishes an OOM kill from a plain SIGKILL by
whether the OOM killer's counters rose while the engine ran (core/host/oomkill.py).
`ExitInfo` is the same for every target (a process here, an engine on another host, a Slurm
job); `exit_to_dict` and `exit_from_dict` carry it over `fontaine-tui stop --json`.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fontaine_tui.core.host.oomkill import MemoryEvidence
from fontaine_tui.core.launch.logtail import GPU_OOM, HOST_OOM, read_tail
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.text import GIB, gib, literal, mib
from fontaine_tui.core.verdict.blindwords import shown_words

NONFINITE = re.compile(r"non-finite loss")  # the engine's error event (engine/train.py)
NONFINITE_EXIT = 3  # the engine's exit code after a non-finite loss
# a child (a loader worker, a rank under torchrun) killed by SIGKILL, in the engine's words
CHILD_KILLED = re.compile(r"killed by signal: Killed|Signal 9 \(SIGKILL\)|exitcode\s*:\s*-9\b")
STOPPED_BY = re.compile(r"stopped by (SIG[A-Z]+)")

CAUSES = (
    "finished",
    "stopped",
    "crashed",
    "killed",
    "oom-killed",
    "host-oom",
    "cuda-oom",
    "nan",
    "unknown",
    "decision-locked",
    "gpu-hours-gate",
)
# the stops a watcher makes on the preset's [gates] stop_on_lock (core/launch/gatestop.py)
GATE_STOPS = ("decision-locked", "gpu-hours-gate")
STATUS_OF = {
    "decision-locked": "stopped",
    "gpu-hours-gate": "stopped",
    "finished": "finished",
    "stopped": "stopped",
    "killed": "killed",
    "oom-killed": "oom",
    "host-oom": "oom",
    "cuda-oom": "oom",
    "nan": "failed",
    "crashed": "failed",
    "unknown": "exited",
}
# the causes whose detail may be the trainer's own words (its error event, its last printed
# line): shown blinded where a surface shows an exit of a blinded run (`shown_detail`)
QUOTING = ("finished", "stopped", "crashed", "nan", "cuda-oom", "host-oom")
OUTSIDE_SIGKILL = (
    "SIGKILL from outside the program: a user, a scheduler, or an OOM killer "
    "this machine does not report"
)


@dataclass(frozen=True, slots=True)
class ExitInfo:
    code: int | None  # exit status; None when killed by a signal or not our child
    signal: str | None  # "SIGKILL" when killed by a signal (or 128+N exit after SIGINT/SIGTERM)
    oom: bool  # the log or the output names a failed allocation
    last_step: int
    checkpoint_step: int | None
    event: str  # the log's last event ("end", "error", ...) or ""
    detail: str
    output: str = ""  # the engine's last printed line (for a failure the log does not explain)
    oom_line: str = ""  # the last printed line naming a failed allocation
    memory: MemoryEvidence | None = None  # the OOM killer's counters at the exit
    sent: str | None = None  # the last signal this console sent it (EngineProcess.stop)
    who: str = "engine"  # what ran: the engine, or a preset's own "command"
    # why a watcher stopped it on [gates] stop_on_lock: (one of GATE_STOPS, in words), or None
    stopped_for: tuple[str, str] | None = None
    # (cause, detail) as judged where the exit was read (another host's `stop --json`), whose
    # words may come blinded: the cause is not judged again from them here (`exit_from_dict`)
    judged: tuple[str, str] | None = None

    @property
    def cause(self) -> str:
        """One of CAUSES: why this attempt ended (cause_of)."""
        return cause_of(self)[0]

    @property
    def cause_detail(self) -> str:
        return cause_of(self)[1]

    @property
    def status(self) -> str:
        """The registry's word for the cause of the exit.

        One of finished | stopped | killed | oom | failed | exited (not our child, no end event)."""
        return STATUS_OF[self.cause]

    def describe(self, metrics: Sequence[str] = (), blinded: bool = False) -> str:
        """The exit in words.

        `blinded`: the trainer's words that may quote the read are hidden (`shown_detail`);
        the cause is still judged from them as they were printed."""
        cause, detail = cause_of(self)
        detail = shown_detail(cause, detail, metrics, blinded)
        ckpt = (
            "no checkpoint"
            if self.checkpoint_step is None
            else f"last checkpoint step {self.checkpoint_step}"
        )
        sig = self.signal or self.sent
        crashed = "failed" if self.code is None else f"failed (exit {self.code})"
        how = {
            "decision-locked": f"stopped by {sig}",
            "gpu-hours-gate": f"stopped by {sig}",
            "finished": "finished",
            "stopped": f"stopped by {sig}",
            "killed": f"killed by {self.signal or 'a signal'}",
            "oom-killed": "killed by the kernel's OOM killer",
            "host-oom": "out of host memory",
            "cuda-oom": "CUDA out of memory",
            "nan": "stopped on a non-finite loss",
            "crashed": crashed
            if self.code is not None or not self.signal
            else f"crashed ({self.signal})",
            "unknown": "exited (exit status unknown: not started by this console)",
        }[cause]
        text = f"{self.who} {how} at step {self.last_step}"
        if self.who == "engine":  # a user's command keeps its checkpoints its own way
            text += f" ({ckpt})"
        if self.code is not None and cause != "crashed":
            text += f", exit {self.code}"
        if cause not in ("finished", "stopped", "unknown") and detail:
            text += f": {literal(detail)}"
        return text


def shown_detail(
    cause: str, detail: str, metrics: Sequence[str] = (), blinded: bool = False
) -> str:
    """An exit's `detail` as a surface shows it.

    Blinded, the trainer's words (a cause in QUOTING) that may quote the read are hidden
    (core/verdict/blindwords.py); the words this program says of an exit are its own."""
    return shown_words(detail, metrics, blinded) if cause in QUOTING else detail


EXIT_FIELDS = (
    "code",
    "signal",
    "oom",
    "last_step",
    "checkpoint_step",
    "event",
    "detail",
    "output",
    "oom_line",
    "sent",
    "who",
)


# the fields that hold the trainer's own words (its log's last event, its printed lines)
WORDS = ("detail", "output", "oom_line")


def exit_to_dict(
    info: ExitInfo, metrics: Sequence[str] = (), blinded: bool = False
) -> dict[str, object]:
    """An exit as JSON (a remote `fontaine-tui stop --json`), read back by exit_from_dict.

    It holds the cause judged here from the words as printed (`cause`, `cause_detail`), so a
    reader does not judge it again from words that may be hidden: `blinded` (a blind preset's
    run) hides the trainer's words that may quote the read (core/verdict/blindwords.py) in
    every field that holds them, as `describe` does."""
    cause, detail = cause_of(info)
    doc: dict[str, object] = {k: getattr(info, k) for k in EXIT_FIELDS}
    doc.update({k: shown_words(getattr(info, k), metrics, blinded) for k in WORDS})
    doc["memory"] = None if info.memory is None else info.memory.as_dict()
    doc.update(
        status=info.status,
        cause=cause,
        describe=info.describe(metrics, blinded),
        cause_detail=shown_detail(cause, detail, metrics, blinded),
    )
    return doc


def exit_from_dict(doc: Mapping[str, object]) -> ExitInfo:
    """The same exit, with the cause judged where it was written (`cause`, `cause_detail`).

    A line without them (an older fontaine-tui's) is judged again here from its fields."""

    def num(key: str) -> int | None:
        v = doc.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def text(key: str) -> str:
        v = doc.get(key)
        return v if isinstance(v, str) else ""

    mem = doc.get("memory")
    cause, said = doc.get("cause"), doc.get("cause_detail")
    judged = (cause, said) if cause in CAUSES and isinstance(said, str) else None
    return ExitInfo(
        num("code"),
        text("signal") or None,
        doc.get("oom") is True,
        num("last_step") or 0,
        num("checkpoint_step"),
        text("event"),
        text("detail"),
        text("output"),
        text("oom_line"),
        MemoryEvidence.from_dict(mem) if isinstance(mem, dict) else None,
        text("sent") or None,
        text("who") or "engine",
        judged=judged,
    )


def cause_of(info: ExitInfo, memory: MemoryEvidence | None = None) -> tuple[str, str]:
    """The (cause, detail) of an attempt's end.

    They are read from its exit, its log and output, and the OOM killer's counters (`memory`,
    else the info's own), or, for an exit read back from another host's JSON, as judged
    there (`judged`). The cause is one of CAUSES. A stop a watcher made on the preset's
    stop_on_lock gate is that gate's cause (`stopped_for`): a clean stop, or a trainer that
    took its signal its own way (an exit code, or the SIGKILL after it went unanswered)."""
    cause, detail = info.judged if info.judged is not None else _cause_of(info, memory)
    ours = info.sent is not None and cause in ("crashed", "killed", "finished")
    if info.stopped_for is not None and (cause == "stopped" or ours):
        return info.stopped_for
    return cause, detail


def _cause_of(info: ExitInfo, memory: MemoryEvidence | None) -> tuple[str, str]:
    ev = memory if memory is not None else info.memory
    sig, event, detail = info.signal, info.event, info.detail
    texts = [t for t in (detail if event == "error" else "", info.oom_line, info.output) if t]
    if event == "error" and NONFINITE.search(detail):
        return "nan", detail
    if info.code == NONFINITE_EXIT and NONFINITE.search(info.output):
        return "nan", info.output
    if info.code == 0 or (event == "end" and detail.startswith("finished")):
        return "finished", detail if event == "end" else f"exit 0 at step {info.last_step}"
    if event == "end" and sig in ("SIGINT", "SIGTERM"):
        return "stopped", detail
    if sig != "SIGKILL":  # a SIGKILL is no allocation failure, whatever was printed before
        if gpu := next((t for t in texts if GPU_OOM.search(t)), None):
            return "cuda-oom", gpu
        if host := next((t for t in texts if HOST_OOM.search(t)), None):
            return "host-oom", host
        if info.oom:  # "out of memory" alone
            line = info.oom_line or (texts[0] if texts else "out of memory")
            return (
                "cuda-oom"
                if re.search(r"CUDA|GPU|cuDNN|cuBLAS|NCCL", line, re.IGNORECASE)
                else "host-oom"
            ), line
    child = any(CHILD_KILLED.search(t) for t in texts)
    silent = info.code is None and sig is None and event not in ("error", "end")
    if ev is not None and (sig == "SIGKILL" or child or silent):
        if ev.cgroup_kills:
            return "oom-killed", _cgroup_words(ev)
        if ev.cgroup_kills is None and ev.system_kills and (sig == "SIGKILL" or child):
            return "oom-killed", (
                f"the system-wide OOM-kill counter (/proc/vmstat oom_kill) "
                f"rose by {ev.system_kills} while it ran; its cgroup's "
                "counter could not be read, so this is weaker evidence"
            )
    if sig == "SIGKILL":
        if info.sent == "SIGKILL":
            return "killed", (
                "SIGKILL from this program: its stop (SIGINT and SIGTERM went unanswered) "
                "or the processes mode's signal"
            )
        return "killed", _outside_sigkill(ev)
    if sig in ("SIGINT", "SIGTERM", "SIGHUP") and event != "error":
        if info.sent == sig:
            return (
                "stopped",
                f"{sig} from this console's stop; no end event (no checkpoint on the way out)",
            )
        return (
            "killed",
            f"{sig} from outside the program before it could stop cleanly (no end event)",
        )
    if info.code is not None or event == "error" or sig is not None:
        what = detail if event == "error" and detail else info.output
        if sig is not None and info.code is None:
            return "crashed", what or f"killed by {sig}, no error line"
        return "crashed", what or f"exit {info.code}, no error line"
    if event == "end":
        return "finished", detail
    return "unknown", "exit status unknown (not started by this console) and no end event"


def _cgroup_words(ev: MemoryEvidence) -> str:
    n = ev.cgroup_kills
    where = f"cgroup {ev.cgroup}"
    if ev.limit is None:
        limit = "no memory limit found"
    elif ev.limit_at == ev.cgroup:
        limit = f"memory limit {_size(ev.limit)}"
    else:
        limit = f"memory limit {_size(ev.limit)} set at {ev.limit_at}"
    return f"{where} ({limit}) counted {n} OOM kill{'s' if n != 1 else ''} while it ran"


def _size(n: int) -> str:
    return gib(n) if n >= GIB else mib(n, 0)


def _outside_sigkill(ev: MemoryEvidence | None) -> str:
    if ev is None or ev.cgroup_kills is None:
        return OUTSIDE_SIGKILL
    text = (
        f"SIGKILL from outside the program: a user or a scheduler (its cgroup {ev.cgroup} "
        "counted no OOM kill"
    )
    if ev.system_kills:
        text += (
            f"; the system-wide OOM-kill counter rose by {ev.system_kills}: another "
            "process was the victim"
        )
    return text + ")"


def exit_info(
    folder: RunFolder,
    returncode: int | None,
    since: tuple[int, int] = (0, 0),
    memory: MemoryEvidence | None = None,
    sent: str | None = None,
    who: str = "engine",
) -> ExitInfo:
    tail = read_tail(folder, since=since)
    code, sig = returncode, None
    if returncode is not None and returncode < 0:
        code, sig = None, signal.Signals(-returncode).name
    elif returncode is not None and returncode > 128:
        try:
            sig = signal.Signals(returncode - 128).name
        except ValueError:
            sig = None
    if tail.last_event == "end" and code != 0 and (m := STOPPED_BY.search(tail.detail)):
        # This start's log says how it stopped; torchrun around ranks that stopped cleanly
        # exits 1, or aborts on the way out, and that is not the run's story.
        sig = m.group(1)
    return ExitInfo(
        code,
        sig,
        tail.oom and returncode != 0,
        tail.last_step,
        tail.checkpoint_step,
        tail.last_event,
        tail.detail,
        tail.output,
        tail.oom_line,
        memory,
        sent,
        who,
    )
