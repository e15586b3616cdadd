"""Starting and owning the engine: argv from a preset, the process, its exit and its cause.

The engine runs in its own session (process group), so the console can close or crash
without taking a nine-hour run with it; a later console finds it again by pid.

A SIGKILL says nothing of who sent it: `cause_of` tells an OOM kill from a plain SIGKILL by
whether the OOM killer's counters rose while the engine ran (core/host/oomkill.py).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from fontaine_tui.core import exitnote
from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.oomkill import MemoryEvidence, MemoryWatch
from fontaine_tui.core.launch.enginename import ENGINE_MODULE
from fontaine_tui.core.log.records import Checkpoint, Event, Probe, TrainPoint, parse_line
from fontaine_tui.core.readfile import open_regular
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.text import GIB, gib, literal, mib
from fontaine_tui.core.verdict.presets import LATER_KEYS, PLATFORM, RECIPE, Preset

# recipe/platform key -> engine flag, in the engine's argv order
RECIPE_FLAGS = (
    "model_size",
    "batch_size",
    "backward_chunks",
    "seed",
    "image_augment",
    "recompute_stats",
    "objective",
    "insulate_flow",
    "flow_decoder_init",
    "init",
    "lr",
    "warmup_steps",
    "steps",
    "eval_every",
    "eval_dataset_breakdown",
    "save_every",
    "chunk_grad_allreduce",
    "micro_batch",
    "datasets",
)
PLATFORM_FLAGS = (
    "num_workers",
    "prefetch_factor",
    "device",
    "precision",
    "activation_checkpointing",
    "compile",
)
TAIL_BYTES = 256 << 10
# what the engine prints when an allocation fails: on the GPU (torch.OutOfMemoryError and
# its text), or in host memory (MemoryError and its kin, numpy's "Unable to allocate", glibc
# and ENOMEM); GPU_OOM is tried first ("OutOfMemoryError" holds "MemoryError")
GPU_OOM = re.compile(
    r"CUDA out of memory|HIP out of memory|OutOfMemoryError|"
    r"CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED|"
    r"MPS backend out of memory"
)
HOST_OOM = re.compile(
    r"MemoryError|Cannot allocate memory|can't allocate memory|"
    r"not enough memory|Unable to allocate|std::bad_alloc|"
    r"malloc of size \d+ failed",
    re.IGNORECASE,
)
OOM = re.compile(
    ("|".join((GPU_OOM.pattern, HOST_OOM.pattern, "out of memory"))).encode(), re.IGNORECASE
)
NONFINITE = re.compile(r"non-finite loss")  # the engine's error event (engine/train.py)
NONFINITE_EXIT = 3  # the engine's exit code after a non-finite loss
# a child (a loader worker, a rank under torchrun) killed by SIGKILL, in the engine's words
CHILD_KILLED = re.compile(r"killed by signal: Killed|Signal 9 \(SIGKILL\)|exitcode\s*:\s*-9\b")
CHECKPOINT_DIR = re.compile(r"step-(\d+)$")
STOPPED_BY = re.compile(r"stopped by (SIG[A-Z]+)")


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def _value(value: object) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def run_dir(preset: Preset, output_dir: str | Path | None = None, cwd: Path | None = None) -> Path:
    """The run folder: --output-dir, else the preset's run.output_dir, against the cwd."""
    target = Path(output_dir) if output_dir else Path(str(preset.run["output_dir"]))
    return (cwd or Path.cwd()) / target if not target.is_absolute() else target


def build_argv(
    preset: Preset, folder: Path, resume: bool = False, python: str = sys.executable
) -> list[str]:
    """The engine command, 1:1 from [recipe] and [platform]: booleans are flags present or
    absent, empty strings are omitted, and so is a key added later (presets.LATER_KEYS) at
    its default (the engine's default is the same). More than one rank (nproc per node x
    nnodes) goes through torch.distributed.run, with nnodes > 1 over a c10d rendezvous."""
    plat = preset.platform
    nproc, nnodes = int(plat["nproc"]), int(plat.get("nnodes", 1))
    head = [python, "-m"]
    if nproc > 1 or nnodes > 1:
        head += ["torch.distributed.run", "--nproc-per-node", str(nproc)]
        if nnodes > 1:
            head += [
                "--nnodes",
                str(nnodes),
                "--node-rank",
                str(plat["node_rank"]),
                "--rdzv-backend",
                "c10d",
                "--rdzv-endpoint",
                str(plat["rdzv_endpoint"]),
                "--rdzv-id",
                str(plat["rdzv_id"]) or preset.run_name,
            ]
        head.append("-m")
    argv = [
        *head,
        ENGINE_MODULE,
        "train",
        "--run-name",
        preset.run_name,
        "--output-dir",
        str(folder),
    ]
    data_dir = str(preset.platform["data_dir"])
    if data_dir:
        argv += ["--data-dir", data_dir]

    later = {
        k: spec[k][1]
        for spec, keys in ((RECIPE, LATER_KEYS["recipe"]), (PLATFORM, LATER_KEYS["platform"]))
        for k in keys
    }

    def add(table: Mapping[str, object], key: str) -> None:
        value = table.get(key, later.get(key, ""))
        if key in later and value == later[key]:
            return
        if key == "backward_chunks" and table.get("micro_batch") and value == 1:
            return  # left at its default: the engine derives it from micro_batch
        if isinstance(value, bool):
            if value:
                argv.append(_flag(key))
        elif value != "":
            argv.extend((_flag(key), _value(value)))

    for key in RECIPE_FLAGS:
        add(preset.recipe, key)
    for key in PLATFORM_FLAGS:
        add(preset.platform, key)
    if resume:
        argv.append("--resume")
    return argv


def engine_identity(argv: list[str], timeout: float = 60) -> dict[str, object]:
    """What the engine of `argv` (its interpreter and --data-dir) says it is and reads:
    `python -m fontaine_engine identity`, for prereg.json. {"error": why} when it cannot say: the
    launch goes on, and the run's provenance is the engine's own meta record alone."""
    import json

    cmd = [argv[0], "-m", ENGINE_MODULE, "identity"]
    if "--data-dir" in argv:
        cmd += ["--data-dir", argv[argv.index("--data-dir") + 1]]
    try:
        res = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env=child_env(),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"python -m fontaine_engine identity: {exc}"}
    last = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
    if res.returncode != 0:
        return {"error": f"python -m fontaine_engine identity: {last}"}
    try:
        doc = json.loads(res.stdout)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        return {"error": "python -m fontaine_engine identity: expected one JSON object"}
    return doc


def newest_checkpoint(folder: RunFolder) -> tuple[int, Path] | None:
    """(step, path) of the newest complete checkpoint (meta.json is written last)."""
    best = None
    root = folder.checkpoints
    if not root.is_dir():
        return None
    for p in root.iterdir():
        m = CHECKPOINT_DIR.match(p.name)
        if m and (p / "meta.json").is_file():
            step = int(m.group(1))
            if best is None or step > best[0]:
                best = (step, p)
    return best


# -- what the log's tail says ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogTail:
    last_step: int  # newest step with a train or eval record
    last_time: float | None
    last_event: str  # "end", "error", "start", "resume" or ""
    detail: str
    checkpoint_step: int | None
    oom: bool
    output: str  # the last line the engine printed (engine.out.log)
    oom_line: str = ""  # the last printed line that names a failed allocation


def read_tail(
    folder: RunFolder, nbytes: int = TAIL_BYTES, since: tuple[int, int] = (0, 0)
) -> LogTail:
    """The end of train_log.jsonl and engine.out.log without reading a long log whole.

    `since` = (log offset, output offset) where this start began: events and output from an
    earlier start (before a resume) do not explain this start's exit."""
    last_step, last_time, event, detail, ckpt = 0, None, "", "", None
    pos, data = _tail_bytes(folder.log, nbytes)
    for raw in data.split(b"\n")[:-1]:  # the last piece is torn or empty
        here, pos = pos, pos + len(raw) + 1
        try:
            rec = parse_line(raw)
        except ValueError:
            continue
        if isinstance(rec, (TrainPoint, Probe)):
            last_step, last_time = max(last_step, rec.step), rec.time
        elif isinstance(rec, Event):
            if rec.event == "resume":
                last_step = rec.step
            if here >= since[0]:
                event, detail = rec.event, rec.detail
        elif isinstance(rec, Checkpoint):
            ckpt = rec.step
    _, out = _tail_bytes(folder.engine_out, 16 << 10, since[1])
    oom = bool(OOM.search(detail.encode())) or bool(OOM.search(out))
    lines = [ln for ln in out.splitlines() if ln.strip()]
    last_line = lines[-1] if lines else b""
    oom_line = next((ln for ln in reversed(lines) if OOM.search(ln)), b"") if oom else b""
    return LogTail(
        last_step, last_time, event, detail, ckpt, oom, _shown(last_line), _shown(oom_line)
    )


def _shown(line: bytes) -> str:
    return literal(line.decode("utf-8", "replace").strip())[:300]


def _tail_bytes(path: Path, nbytes: int, offset: int = 0) -> tuple[int, bytes]:
    """(file offset of the first whole line returned, bytes to EOF)."""
    try:
        with open_regular(path) as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(offset, size - nbytes)
            fh.seek(start)
            data = fh.read(max(0, size - start))
    except (OSError, InputError):  # gone, unreadable, or a pipe: no tail
        return offset, b""
    if start > offset:  # drop the partial first line
        cut = data.find(b"\n") + 1
        start, data = start + cut, data[cut:]
    return start, data


# -- the process ------------------------------------------------------------------------------

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
)
STATUS_OF = {
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

    @property
    def cause(self) -> str:
        """One of CAUSES: why this attempt ended (cause_of)."""
        return cause_of(self)[0]

    @property
    def cause_detail(self) -> str:
        return cause_of(self)[1]

    @property
    def status(self) -> str:
        """finished | stopped | killed | oom | failed | exited (not our child, no end event);
        the registry's word for the cause."""
        return STATUS_OF[self.cause]

    def describe(self) -> str:
        cause, detail = cause_of(self)
        ckpt = (
            "no checkpoint"
            if self.checkpoint_step is None
            else f"last checkpoint step {self.checkpoint_step}"
        )
        sig = self.signal or self.sent
        crashed = "failed" if self.code is None else f"failed (exit {self.code})"
        how = {
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


def exit_to_dict(info: ExitInfo) -> dict[str, object]:
    """An exit as JSON (a remote `fontaine-tui stop --json`), read back by exit_from_dict."""
    doc: dict[str, object] = {k: getattr(info, k) for k in EXIT_FIELDS}
    doc["memory"] = None if info.memory is None else info.memory.as_dict()
    doc.update(status=info.status, cause=info.cause, describe=info.describe())
    return doc


def exit_from_dict(doc: Mapping[str, object]) -> ExitInfo:
    """The same exit, its cause judged again from the same fields."""

    def num(key: str) -> int | None:
        v = doc.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def text(key: str) -> str:
        v = doc.get(key)
        return v if isinstance(v, str) else ""

    mem = doc.get("memory")
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
    )


def cause_of(info: ExitInfo, memory: MemoryEvidence | None = None) -> tuple[str, str]:
    """(cause, detail) of an attempt's end, from its exit, its log and output, and the OOM
    killer's counters (`memory`, else the info's own). The cause is one of CAUSES."""
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
                "SIGKILL from this console's stop: SIGINT and SIGTERM went unanswered"
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


def _signum(name: str | None) -> int:
    try:
        return signal.Signals[name or ""].value
    except KeyError:
        return signal.SIGKILL.value


def command_step(folder: RunFolder) -> int:
    """The last step a launched [command]'s trainer logged, read as its frozen [source] says
    (0 when it cannot be read)."""
    from fontaine_tui.core.launch.foreign_look import look_foreign

    look = look_foreign(str(folder.root))
    return look.store.last_step if look is not None else 0


def launched_who(folder: RunFolder) -> str:
    """What a run folder's launch started: "command" when its prereg.json froze a preset's
    own [command], else "engine"."""
    from fontaine_tui.core.verdict.prereg import read_prereg

    try:
        prov = read_prereg(folder).provenance
    except (OSError, InputError):
        return "engine"
    return "command" if "command" in prov else "engine"


def process_started(pid: int, zombie_ok: bool = False) -> float | None:
    """The process's start time (to tell it from a later process given the same pid). A
    zombie has none unless `zombie_ok`: our own unreaped child keeps its pid and start time."""
    import psutil

    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE and not zombie_ok:
            return None
        return p.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def pid_alive(pid: int, started: float | None = None) -> bool:
    """Is `pid` running, and (if `started` is given) the same process as when registered?"""
    if pid <= 0:
        return False
    now_started = process_started(pid)
    if now_started is None:
        return False
    return started is None or abs(now_started - started) < 1.0


def label(engine: object) -> str:
    """How a run's process is named to the user: "engine pid N", or its Slurm job."""
    return (
        getattr(engine, "label", None)
        or f"{getattr(engine, 'who', 'engine')} pid {getattr(engine, 'pid', 0)}"
    )


class EngineProcess:
    """An engine run: started here (a child) or found again by pid (reattached). `memory`
    follows its OOM-kill counters; each poll while it runs refreshes its cgroup."""

    def __init__(
        self,
        folder: RunFolder,
        pid: int,
        popen: subprocess.Popen | None,
        started: float | None,
        since: tuple[int, int] = (0, 0),
        memory: MemoryWatch | None = None,
    ) -> None:
        self.folder, self.pid, self._popen = folder, pid, popen
        self.started: float | None = None  # 0.0 or none at all: not recorded
        if isinstance(started, (int, float)) and not isinstance(started, bool) and started > 0:
            self.started = float(started)
        self.since = since  # where this start begins in train_log.jsonl and engine.out.log
        self.memory = memory if memory is not None else MemoryWatch.start(pid)
        self.sent: str | None = None  # the last signal sent to its group
        self.who = "engine"  # or "command": a preset's own training command
        self._exit: ExitInfo | None = None

    @classmethod
    def start(
        cls,
        argv: list[str],
        folder: RunFolder,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> EngineProcess:
        """Start the engine (or a user's command) in its own session, stdout+stderr appended
        to engine.out.log; `env` (default: this one's) and `cwd` (default: this one's) as
        the argv's maker says (core/launch/makers.py)."""
        run_env = dict(os.environ if env is None else env)
        run_env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            log_size = folder.log.stat().st_size
        except FileNotFoundError:
            log_size = 0
        # never through a link planted in the folder: the output would land where it points
        fd = os.open(
            folder.engine_out, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644
        )
        with os.fdopen(fd, "ab") as out:
            since = (log_size, out.seek(0, os.SEEK_END))
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=child_env(run_env),  # no webhook token
                cwd=cwd,
                close_fds=True,
            )
        return cls(folder, popen.pid, popen, process_started(popen.pid, zombie_ok=True), since)

    @classmethod
    def reattach(
        cls,
        folder: RunFolder,
        pid: int,
        started: float | None = None,
        since: tuple[int, int] = (0, 0),
        memory: MemoryWatch | None = None,
    ) -> EngineProcess:
        """A run started by an earlier console; exit codes are then unknown, the log tells
        (a launched [command]'s are noted: core/exitnote.py). `since` and `memory` from its
        attempt (attempts.py) judge it from its own start."""
        found = cls(folder, pid, None, started, since, memory)
        found.who = launched_who(folder)
        return found

    @property
    def is_child(self) -> bool:
        return self._popen is not None

    def close(self) -> None:
        """Nothing to let go of: the process is looked at only when polled."""

    def poll(self) -> ExitInfo | None:
        """None while running; the exit, once, then the same answer."""
        if self._exit is not None:
            return self._exit
        if self._popen is not None:
            rc = self._popen.poll()
            alive = rc is None
        else:
            rc, alive = None, self._leads_its_group()
        if alive:
            self.memory.refresh()  # a wrapper may have moved it into another cgroup
            return None
        if rc is None and self.who == "command":  # not our child: its exit was noted
            noted = exitnote.read(self.folder.root, self.pid)
            if noted is not None:
                code, sig = noted
                rc = code if code is not None else -_signum(sig)
        self._exit = exit_info(
            self.folder, rc, self.since, self.memory.evidence(), self.sent, self.who
        )
        if self.who == "command":  # its steps are in its own trainer's log, not ours
            self._exit = replace(
                self._exit, last_step=max(self._exit.last_step, command_step(self.folder))
            )
        return self._exit

    def wait(self, timeout: float | None = None, interval: float = 0.1) -> ExitInfo | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (info := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(interval)
        return info

    def refusal(self) -> str | None:
        """Why this engine's pid is never signalled, or None. A pid found again (not our
        child) is signalled only with its recorded start time: without one, the process that
        holds the pid now may be anyone's."""
        if self._popen is not None or self.started is not None:
            return None
        return (
            f"engine pid {self.pid}: no start time recorded for it (pid_started missing "
            "or 0), so the process holding that pid now may not be the engine; not "
            "signalled (stop it by hand if it is yours)"
        )

    def signal_group(self, sig: int) -> bool:
        """Send `sig` to the engine's process group (torchrun and its ranks, loader workers)."""
        if self.refusal() is not None:
            return False
        if self.poll() is not None or not self._leads_its_group():
            return False  # gone, or its pid is another process's now
        try:
            os.killpg(self.pid, sig)  # its own session: the group id is its pid
        except ProcessLookupError:
            return False
        self.sent = signal.Signals(sig).name
        return True

    def _leads_its_group(self) -> bool:
        """Is the group `pid` names still the engine's? Its leader must be the process we
        started or registered (same start time when known), leading its own group, and never
        init's or this program's own group: a pid reused by another process, or a registry
        entry edited by hand, never turns a stop into a kill of someone else's processes."""
        if self.pid <= 1:
            return False
        try:
            if os.getpgid(self.pid) != self.pid or self.pid == os.getpgrp():
                return False
        except ProcessLookupError:
            return False
        if self._popen is not None:  # our child, not yet reaped: its pid cannot be reused
            return True
        return pid_alive(self.pid, self.started)  # a zombie is gone

    def stop(self, grace_int: float = 60.0, grace_term: float = 30.0) -> ExitInfo:
        """SIGINT (the engine checkpoints and exits), then SIGTERM, then SIGKILL; InputError
        (nothing sent) for a pid without its recorded start time (`refusal`)."""
        if (why := self.refusal()) is not None and self.poll() is None:
            raise InputError(why)
        for sig, grace in ((signal.SIGINT, grace_int), (signal.SIGTERM, grace_term)):
            self.signal_group(sig)
            info = self.wait(grace)
            if info is not None:
                return info
        self.signal_group(signal.SIGKILL)
        info = self.wait(10.0)
        if info is None:  # pragma: no cover - a process that survives SIGKILL (D state)
            raise RuntimeError(f"engine pid {self.pid} survived SIGKILL")
        return info
