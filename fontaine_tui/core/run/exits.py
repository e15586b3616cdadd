"""An attempt's exit: what ended it, read from its exit status, its log and the OOM killer.

A SIGKILL says nothing of who sent it: `cause_of` distinguishes an OOM kill from a plain SIGKILL by
whether the OOM killer's counters rose while the engine ran (core/host/oomkill.py).
`ExitInfo` is the same for every target (a process here, an engine on another host, a Slurm
job); `exit_to_dict` and `exit_from_dict` carry it over `fontaine-tui stop --json`.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from fontaine_tui.core.host.oomkill import MemoryEvidence
from fontaine_tui.core.run.logtail import GPU_OOM, HOST_OOM, output_between, read_tail, shown_line
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.text import GIB, gib, literal, mib
from fontaine_tui.core.verdict.blindwords import shown_words

NONFINITE = re.compile(r"non-finite loss")  # the engine's error event (engine/train.py)
NONFINITE_EXIT = 3  # the engine's exit code after a non-finite loss
# a child (a loader worker, a rank under torchrun) killed by SIGKILL, in the engine's words
CHILD_KILLED = re.compile(r"killed by signal: Killed|Signal 9 \(SIGKILL\)|exitcode\s*:\s*-9\b")
STOPPED_BY = re.compile(r"stopped by (SIG[A-Z]+)")
TRACEBACK = b"Traceback (most recent call last):"
# A traceback is the crash only when its exception line is among the last non-blank lines
# printed before the stop. A crashed trainer prints a few lines more on its way out (wandb's
# "Waiting for W&B process to finish...", NCCL or dataloader teardown warnings) and then
# hangs or dies; one that trains on prints a line per step or so, and soon more than this.
CRASH_TAIL_LINES = 20
# a traceback's own end, not a failure: the stop's signal, or a trainer exiting on purpose
NOT_A_CRASH = re.compile(rb"(\w+\.)*(KeyboardInterrupt|SystemExit)\b")

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
# the stops a watcher makes on the preset's [gates] stop_on_lock (core/watch/gatestop.py)
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
OUR_SIGKILL = (
    "SIGKILL from this program: its stop (SIGINT and SIGTERM went unanswered) "
    "or the processes mode's signal"
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
    # the last signal this console sent it (EngineProcess.stop), or that a user's stop from
    # another process sent, as its stop line in attempts.jsonl says (`stop_asked_of`)
    sent: str | None = None
    who: str = "engine"  # what ran: the engine, or a preset's own "command"
    # why a watcher stopped it on [gates] stop_on_lock: (one of GATE_STOPS, in words), or None
    stopped_for: tuple[str, str] | None = None
    # (cause, detail) as judged where the exit was read (another host's `stop --json`), whose
    # words may come blinded: the cause is not judged again from them here (`exit_from_dict`)
    judged: tuple[str, str] | None = None
    # the exception line of a Python traceback printed before this program's stop was asked
    # (`crash_before`): the trainer had crashed, and the stop only ended what hung after it
    crash: str = ""

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
        text = f"{self.who} {self._how(cause)} at step {self.last_step}"
        if self.who == "engine":  # a user's command keeps its checkpoints its own way
            text += f" ({self._checkpoint_words()})"
        if self.code is not None and cause != "crashed":
            text += f", exit {self.code}"
        if cause not in ("finished", "stopped", "unknown") and detail:
            text += f": {literal(detail)}"
        return text

    def _how(self, cause: str) -> str:
        """How it ended, in words, by its cause."""
        # the stop's signal: the one it died of, unless it took the stop its own way
        polite = self.signal in ("SIGINT", "SIGTERM", "SIGHUP")
        sig = (self.signal if polite else None) or self.sent or self.signal
        return {
            "decision-locked": f"stopped by {sig}",
            "gpu-hours-gate": f"stopped by {sig}",
            "finished": "finished",
            "stopped": f"stopped by {sig}",
            "killed": f"killed by {self.signal or 'a signal'}",
            "oom-killed": "killed by the kernel's OOM killer",
            "host-oom": "out of host memory",
            "cuda-oom": "CUDA out of memory",
            "nan": "stopped on a non-finite loss",
            "crashed": self._crash_words(),
            "unknown": "exited (exit status unknown: not started by this console)",
        }[cause]

    def _crash_words(self) -> str:
        """A crash: failed with its exit code, else crashed by its signal, else failed."""
        if self.code is not None:
            return f"failed (exit {self.code})"
        return f"crashed ({self.signal})" if self.signal else "failed"

    def _checkpoint_words(self) -> str:
        if self.checkpoint_step is None:
            return "no checkpoint"
        return f"last checkpoint step {self.checkpoint_step}"


STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGKILL")  # what `stop` sends, in that order


def stop_asked_of(info: ExitInfo) -> ExitInfo:
    """The exit of a user's stop made from another process (`stop`, recorded before its signals).

    The watcher sent nothing itself: the signal that ended the run is the stop's (SIGINT when
    none is known, the trainer having taken it its own way), judged as a stop of its own."""
    if info.sent is not None:
        return info
    sent = info.signal if info.signal in STOP_SIGNALS else "SIGINT"
    return replace(info, sent=sent)


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
    "crash",
)


# the fields that hold the trainer's own words (its log's last event, its printed lines)
WORDS = ("detail", "output", "oom_line", "crash")


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
        crash=text("crash"),
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
    """The first of `_CAUSES` whose test the exit meets, else "unknown"."""
    read = _Read.of(info, memory if memory is not None else info.memory)
    for applies, cause, words in _CAUSES:
        if applies(read):
            return cause, words(read)
    return "unknown", "exit status unknown (not started by this console) and no end event"


@dataclass(frozen=True, slots=True)
class _Read:
    """An exit as its causes are tried on it.

    `texts` are the trainer's words that may name what failed (its error event, its last
    line naming a failed allocation, its last printed line); `child`: they say a child was
    killed by SIGKILL; `silent`: no status and no last event says how it ended."""

    info: ExitInfo
    ev: MemoryEvidence | None  # the OOM killer's counters
    texts: tuple[str, ...]
    child: bool
    silent: bool

    @classmethod
    def of(cls, info: ExitInfo, ev: MemoryEvidence | None) -> _Read:
        error = info.detail if info.event == "error" else ""
        texts = tuple(t for t in (error, info.oom_line, info.output) if t)
        return cls(
            info,
            ev,
            texts,
            child=any(CHILD_KILLED.search(t) for t in texts),
            silent=info.code is None and info.signal is None and info.event not in ("error", "end"),
        )

    def first(self, pattern: re.Pattern[str]) -> str | None:
        return next((t for t in self.texts if pattern.search(t)), None)

    @property
    def allocating(self) -> bool:
        """A failed allocation may explain it: a SIGKILL is none, whatever was printed before."""
        return self.info.signal != "SIGKILL"

    @property
    def oom_line(self) -> str:
        """The line naming an allocation that failed with "out of memory" alone."""
        return self.info.oom_line or (self.texts[0] if self.texts else "out of memory")

    @property
    def killed(self) -> bool:
        """A SIGKILL took it or a child of it."""
        return self.info.signal == "SIGKILL" or self.child

    @property
    def counted(self) -> bool:
        """The OOM killer's counters were read for an exit they may explain."""
        return self.ev is not None and (self.killed or self.silent)

    @property
    def polite(self) -> bool:
        """A signal asking it to stop, and no error event: it did not fail first."""
        return self.info.signal in ("SIGINT", "SIGTERM", "SIGHUP") and self.info.event != "error"

    @property
    def words(self) -> str:
        """What the trainer last said of a failure: its error event's words, else its output."""
        info = self.info
        return info.detail if info.event == "error" and info.detail else info.output


def _nan_event(r: _Read) -> bool:
    return r.info.event == "error" and bool(NONFINITE.search(r.info.detail))


def _nan_printed(r: _Read) -> bool:
    return r.info.code == NONFINITE_EXIT and bool(NONFINITE.search(r.info.output))


def _finished(r: _Read) -> bool:
    """Exit 0, unless to this program's stop; or the engine's end event of a finished run."""
    info = r.info
    clean = info.code == 0 and info.sent is None
    return clean or (info.event == "end" and info.detail.startswith("finished"))


def _finished_words(r: _Read) -> str:
    info = r.info
    return info.detail if info.event == "end" else f"exit 0 at step {info.last_step}"


def _stopped(r: _Read) -> bool:
    return r.info.event == "end" and r.info.signal in ("SIGINT", "SIGTERM")


def _gpu_oom(r: _Read) -> bool:
    return r.allocating and r.first(GPU_OOM) is not None


def _host_oom(r: _Read) -> bool:
    return r.allocating and r.first(HOST_OOM) is not None


def _oom_alone(r: _Read) -> bool:
    """The log or the output said "out of memory" alone."""
    return r.allocating and r.info.oom


def _gpu_oom_alone(r: _Read) -> bool:
    return _oom_alone(r) and bool(re.search(r"CUDA|GPU|cuDNN|cuBLAS|NCCL", r.oom_line, re.I))


def _cgroup_oom_kill(r: _Read) -> bool:
    return r.counted and bool(r.ev and r.ev.cgroup_kills)


def _system_oom_kill(r: _Read) -> bool:
    """Only the system-wide counter rose (the cgroup's unread), and a SIGKILL says who died."""
    ev = r.ev
    return ev is not None and ev.cgroup_kills is None and bool(ev.system_kills) and r.killed


def _system_words(r: _Read) -> str:
    kills = r.ev.system_kills if r.ev is not None else None
    return (
        f"the system-wide OOM-kill counter (/proc/vmstat oom_kill) rose by {kills} while it "
        "ran; its cgroup's counter could not be read, so this is weaker evidence"
    )


def _sigkill(r: _Read) -> bool:
    return r.info.signal == "SIGKILL"


def _crashed_first(r: _Read) -> bool:
    """A traceback printed before this program's stop: the stop ended a crashed trainer."""
    return r.info.sent is not None and bool(r.info.crash)


def _sigkill_ours(r: _Read) -> bool:
    return _sigkill(r) and r.info.sent == "SIGKILL"


def _stop_ours(r: _Read) -> bool:
    """A polite signal this program's stop sent: the last it sent, or one it sent before.

    The stop sends SIGINT, then SIGTERM: a trainer that dies of the SIGINT after the SIGTERM
    went out (its shutdown took the grace) was stopped by it all the same."""
    info = r.info
    if not r.polite or info.sent is None:
        return False
    if info.sent == info.signal:
        return True
    order = STOP_SIGNALS
    sent, got = info.sent, info.signal
    return sent in order and got in order and order.index(got) <= order.index(sent)


def _stop_taken(r: _Read) -> bool:
    """This program's stop, taken the trainer's own way: an exit code, or another signal.

    Lightning exits 1 on SIGINT, some trainers 0 or 130, torchrun may abort on the way out:
    the stop is the cause, unless the trainer's own error event says it failed."""
    return r.info.sent is not None and r.info.event != "error"


def _stop_taken_words(r: _Read) -> str:
    info = r.info
    how = f"exit {info.code}" if info.code is not None else f"died of {info.signal}"
    return f"{info.sent} from this program's stop, taken its own way ({how})"


def _polite(r: _Read) -> bool:
    return r.polite


def _signalled(r: _Read) -> bool:
    """A signal with no exit status: the signal ended it."""
    return r.info.signal is not None and r.info.code is None


def _crashed(r: _Read) -> bool:
    info = r.info
    return info.code is not None or info.event == "error" or info.signal is not None


def _ended(r: _Read) -> bool:
    return r.info.event == "end"


_Test = Callable[[_Read], bool]
_Words = Callable[[_Read], str]
# An exit's causes in the order they are tried: the first whose test it meets is its cause.
_CAUSES: tuple[tuple[_Test, str, _Words], ...] = (
    (_nan_event, "nan", lambda r: r.info.detail),
    (_nan_printed, "nan", lambda r: r.info.output),
    (_finished, "finished", _finished_words),
    (_stopped, "stopped", lambda r: r.info.detail),
    (_gpu_oom, "cuda-oom", lambda r: r.first(GPU_OOM) or ""),
    (_host_oom, "host-oom", lambda r: r.first(HOST_OOM) or ""),
    (_gpu_oom_alone, "cuda-oom", lambda r: r.oom_line),
    (_oom_alone, "host-oom", lambda r: r.oom_line),
    (_cgroup_oom_kill, "oom-killed", lambda r: _cgroup_words(r.ev) if r.ev else ""),
    (_system_oom_kill, "oom-killed", _system_words),
    (_crashed_first, "crashed", lambda r: r.info.crash),
    (_sigkill_ours, "killed", lambda r: OUR_SIGKILL),
    (_sigkill, "killed", lambda r: _outside_sigkill(r.ev)),
    (
        _stop_ours,
        "stopped",
        lambda r: (
            f"{r.info.signal} from this console's stop; no end event (no checkpoint on the way out)"
        ),
    ),
    (
        _polite,
        "killed",
        lambda r: (
            f"{r.info.signal} from outside the program before it could stop cleanly (no end event)"
        ),
    ),
    (_stop_taken, "stopped", _stop_taken_words),
    (_signalled, "crashed", lambda r: r.words or f"killed by {r.info.signal}, no error line"),
    (_crashed, "crashed", lambda r: r.words or f"exit {r.info.code}, no error line"),
    (_ended, "finished", lambda r: r.info.detail),
)


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
    code, sig = _code_and_signal(returncode)
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


def crash_before(folder: RunFolder, since: int, until: int) -> str:
    """The exception line of the last Python traceback in engine.out.log before `until`, or "".

    `since`: where this start's output began; `until`: its size when a stop was asked. A
    traceback of KeyboardInterrupt or SystemExit is no crash; nor is one whose exception line
    is not printed yet, nor one with more than a crash's teardown printed after it
    (CRASH_TAIL_LINES): output went on, so it was handled (`logger.exception`)."""
    lines = [ln for ln in output_between(folder, since, until) if ln.strip()]
    starts = [i for i, ln in enumerate(lines) if ln.rstrip() == TRACEBACK]
    if not starts:
        return ""
    # its frames are indented; the exception line is the first line after them that is not
    at = next((i for i in range(starts[-1] + 1, len(lines)) if lines[i][:1] not in b" \t"), None)
    if at is None or len(lines) - at > CRASH_TAIL_LINES:
        return ""  # not printed yet, or training printed on after it: handled
    said = lines[at]
    return "" if NOT_A_CRASH.match(said) else shown_line(said)


def _code_and_signal(returncode: int | None) -> tuple[int | None, str | None]:
    """(exit code, signal name) of a return code.

    A negative one is the signal that killed it (no code); one over 128 keeps its code and
    names the signal a shell reports so."""
    if returncode is not None and returncode < 0:
        return None, signal.Signals(-returncode).name
    if returncode is not None and returncode > 128:
        try:
            return returncode, signal.Signals(returncode - 128).name
        except ValueError:
            return returncode, None
    return returncode, None
