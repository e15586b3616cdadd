"""Launching as a Slurm batch job: `fontaine-tui launch PRESET --on slurm:PARTITION`.

The login node is not where the run trains, so only the run folder's guards run here (a
folder already holding another run, the init checkpoint); the GPU and RAM checks belong to the
node Slurm picks, and Slurm's own request (`--gpus-per-node`, `--mem`) stands for them.
prereg.json is frozen before anything is submitted, then `job.sbatch` is written into the run
folder (the job's whole script, kept with the run) and handed to `sbatch --parsable`.

The script holds only what this program writes: `#SBATCH` lines of numbers from the preset's
[platform] and values from `[slurm]` in config.toml, each checked against a strict pattern (no
space, quote or newline can reach the script); the engine command with every piece
shell-quoted. Paths and names (the run folder, the job name) go to sbatch as argv, never
through a shell. One node: the batch script `exec`s the engine (or torch.distributed.run for
several ranks). Several nodes: `srun` starts one torch.distributed.run per node, over a c10d
rendezvous at the job's first node on `[slurm] port`.

`SlurmJob` is the console's handle on the job (`poll`, `stop`, as EngineProcess): a thread
asks the scheduler every few seconds — `squeue` while the job is queued or running; once it
has left the queue `sacct` (accounting), else `scontrol show job` (a cluster without
accounting keeps a finished job for MinJobAge seconds) — so the console never waits on the
scheduler. `stop` is the local sequence through `scancel --full --signal`: SIGINT (the engine
checkpoints and exits), SIGTERM, then `scancel` itself; a job still pending is cancelled.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fontaine_tui.core import tomlfile
from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.oomkill import MemoryEvidence, MemoryWatch
from fontaine_tui.core.launch.enginename import ENGINE_MODULE
from fontaine_tui.core.launch.exits import ExitInfo, exit_info
from fontaine_tui.core.launch.logtail import command_step, launched_who
from fontaine_tui.core.readfile import read_text
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.ssh.destination import check_destination

SCRIPT = "job.sbatch"
POLL_S = 3.0
QUERY_TIMEOUT_S = 30.0  # one scheduler command (squeue, sacct, scontrol, scancel, sbatch)
LOOK_S = 3 * QUERY_TIMEOUT_S  # one look at a job: squeue, then sacct, then scontrol
# SlurmJob.stop's graces: after SIGINT (the engine checkpoints), after SIGTERM, after scancel
GRACE_INT_S, GRACE_TERM_S, GRACE_CANCEL_S = 60.0, 30.0, 120.0
# the scheduler's states while the job has not ended (squeue's %T words)
ACTIVE = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "RESV_DEL_HOLD",
        "SPECIAL_EXIT",
        "STOPPED",
    }
)
# ends the scheduler caused: said with the exit (the engine's log alone would not know)
SCHEDULER_ENDS = {
    "TIMEOUT": "the job reached its time limit",
    "OUT_OF_MEMORY": "the job went over its memory request (Slurm's OOM kill)",
    "NODE_FAIL": "a node of the job failed",
    "PREEMPTED": "the job was preempted",
    "BOOT_FAIL": "a node of the job did not boot",
    "DEADLINE": "the job reached its deadline",
    "CANCELLED": "the job was cancelled (scancel, or an administrator)",
    "REVOKED": "the job was revoked (a federated sibling ran it)",
}
PARTITION = re.compile(r"[A-Za-z0-9_.-]+")
PATTERNS: dict[str, tuple[re.Pattern[str], str]] = {
    "time": (re.compile(r"(\d+-)?\d+(:\d{1,2}){0,2}"), "minutes, H:MM:SS or D-HH:MM:SS"),
    "account": (PARTITION, "a Slurm account name"),
    "qos": (PARTITION, "a Slurm QOS name"),
    "constraint": (re.compile(r"[A-Za-z0-9_.&|()\[\]*:,!-]+"), "a node feature expression"),
    "mem": (re.compile(r"\d+[KMGT]?"), "a size such as 64G"),
    "cpus_per_task": (re.compile(r"[1-9]\d{0,3}"), "a positive number of CPUs"),
    "gres": (re.compile(r"[A-Za-z0-9_.:,-]+"), "a generic resource list such as gpu:a100:8"),
}


def check_host(name: str) -> None:
    """A host as ssh will take it: no option, no space, no shell or control character (here,
    beside `slurm:PARTITION@LOGIN`'s parsing, so that remote.py may import this module)."""
    check_destination(name, "--on")


@dataclass(frozen=True, slots=True)
class OnSlurm:
    partition: str
    host: str | None  # a login node to submit from over SSH; None: submit from here


def parse_target(on: str) -> OnSlurm | None:
    """`slurm:PARTITION[@LOGIN]` as a target; None when `on` is a plain host."""
    if not on.startswith("slurm:"):
        return None
    partition, _, host = on[len("slurm:") :].partition("@")
    if not PARTITION.fullmatch(partition):
        raise InputError(
            f"--on {on!r}: expected slurm:PARTITION[@LOGIN] (a partition name of "
            "letters, digits, '_', '.', '-')"
        )
    if host:
        check_host(host)
    return OnSlurm(partition, host or None)


@dataclass(frozen=True, slots=True)
class SlurmSettings:
    """`[slurm]` in config.toml: what a user's cluster asks of every job (never part of the
    preset, never hashed: an account or a QOS is the user's, not the experiment's)."""

    time: str = ""
    account: str = ""
    qos: str = ""
    constraint: str = ""
    mem: str = ""
    cpus_per_task: str = ""
    gres: str = ""
    port: int = 29500  # the c10d rendezvous port on the job's first node (several nodes)


def slurm_settings(config: Path) -> SlurmSettings:
    """`[slurm]` of config.toml; defaults without one; InputError naming the key otherwise."""
    try:
        doc = tomlfile.loads(read_text(config))
    except FileNotFoundError:
        return SlurmSettings()
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{config}: cannot read ({exc})") from None
    raw = doc.get("slurm", {})
    if not isinstance(raw, dict):
        raise InputError(f"{config}: slurm: expected a table")
    known = {f.name for f in dataclasses.fields(SlurmSettings)}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in known:
            raise InputError(
                f"{config}: slurm.{key}: unknown key (expected one of {', '.join(sorted(known))})"
            )
        if key == "port":
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 65536:
                raise InputError(f"{config}: slurm.port: expected a port number, got {value!r}")
            values[key] = value
            continue
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        pattern, what = PATTERNS[key]
        if not isinstance(text, str) or not pattern.fullmatch(text):
            raise InputError(f"{config}: slurm.{key}: expected {what}, got {value!r}")
        values[key] = text
    return SlurmSettings(**values)


# -- the job script ---------------------------------------------------------------------------


def _engine_tail(argv: Sequence[str]) -> list[str]:
    """`fontaine_engine train ...` of build_argv's command (after its `-m`)."""
    for i in range(1, len(argv)):
        if argv[i] == ENGINE_MODULE and argv[i - 1] == "-m":
            return list(argv[i:])
    raise ValueError(f"not an engine command: {argv!r}")


def render_script(
    argv: Sequence[str], platform: Mapping[str, object], settings: SlurmSettings, run_name: str
) -> str:
    """The batch script for build_argv's `argv` under [platform] (nproc, nnodes, device)."""
    python, tail = argv[0], _engine_tail(argv)
    nproc, nnodes = int(str(platform["nproc"])), int(str(platform.get("nnodes", 1)))
    cuda = str(platform.get("device", "cpu")) == "cuda"
    lines = [
        "#!/bin/bash",
        f"# The engine of run {_comment(run_name)} as a Slurm batch job: written by",
        "# `fontaine-tui launch --on slurm:...` beside the run's frozen prereg.json and",
        "# submitted with sbatch. Resubmitting it by hand starts a run that no console",
        "# launched: use `fontaine-tui launch PRESET --resume --on slurm:...` instead.",
        f"#SBATCH --nodes={nnodes}",
        "#SBATCH --ntasks-per-node=1",
    ]
    if cuda:
        lines.append(f"#SBATCH --gpus-per-node={nproc}")
    for key in ("time", "account", "qos", "constraint", "mem", "cpus_per_task", "gres"):
        value = getattr(settings, key)
        if value:
            lines.append(f"#SBATCH --{key.replace('_', '-')}={value}")
    lines += [
        "set -u",
        "export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1",
        'echo "fontaine-tui: slurm job $SLURM_JOB_ID on $(hostname) (nodes: $SLURM_JOB_NODELIST)"',
    ]
    quoted = " ".join(map(shlex.quote, tail))
    py = shlex.quote(python)
    if nnodes > 1:
        lines += [
            'head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
            f"exec srun --kill-on-bad-exit=1 --ntasks-per-node=1 {py} -m "
            f'torch.distributed.run --nnodes "$SLURM_NNODES" --nproc-per-node {nproc} '
            f'--rdzv-backend c10d --rdzv-endpoint "$head:{settings.port}" '
            f'--rdzv-id "$SLURM_JOB_ID" -m {quoted}',
        ]
    elif nproc > 1:
        lines.append(f"exec {py} -m torch.distributed.run --nproc-per-node {nproc} -m {quoted}")
    else:
        lines.append(f"exec {py} -m {quoted}")
    return "\n".join(lines) + "\n"


def render_command_script(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], settings: SlurmSettings, run_name: str
) -> str:
    """The batch script for a preset's own [command]: one task, in the command's folder,
    with its frozen env (and FONTAINE_OUTPUT_DIR) exported, the argv run as it is. GPUs and
    the rest are the user's to ask for through [slurm] in config.toml (gres, ...)."""
    lines = [
        "#!/bin/bash",
        f"# The [command] of run {_comment(run_name)} as a Slurm batch job: written by",
        "# `fontaine-tui launch --on slurm:...` beside the run's frozen prereg.json and",
        "# submitted with sbatch. Resubmitting it by hand starts a run that no console",
        "# launched: use `fontaine-tui launch PRESET --resume --on slurm:...` instead.",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks-per-node=1",
    ]
    for key in ("time", "account", "qos", "constraint", "mem", "cpus_per_task", "gres"):
        value = getattr(settings, key)
        if value:
            lines.append(f"#SBATCH --{key.replace('_', '-')}={value}")
    lines += ["set -u", "export PYTHONUNBUFFERED=1"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    lines += [
        'echo "fontaine-tui: slurm job $SLURM_JOB_ID on $(hostname) (nodes: $SLURM_JOB_NODELIST)"',
        f"cd {shlex.quote(str(cwd))}",
        "exec " + " ".join(map(shlex.quote, argv)),
    ]
    return "\n".join(lines) + "\n"


def _comment(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


def write_script(folder: RunFolder, text: str) -> Path:
    """The job's script in the run folder: job.sbatch, or job.N.sbatch for a later attempt
    (created, never written over: a file there is the user's or an earlier attempt's)."""
    for n in range(1, 1000):
        path = folder.root / (SCRIPT if n == 1 else f"job.{n}.sbatch")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path
    raise InputError(f"{folder.root}: job.1.sbatch ... job.999.sbatch all exist")


def offsets(folder: RunFolder) -> tuple[int, int]:
    """Where this attempt starts in train_log.jsonl and engine.out.log (its `since`)."""

    def size(path: Path) -> int:
        try:
            return path.stat().st_size
        except FileNotFoundError:
            return 0

    return size(folder.log), size(folder.engine_out)


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise InputError(
            f"{name}: not found on PATH (is this a Slurm login node? the Slurm "
            "client commands are needed to submit and watch the job)"
        )
    return found


def stdio_path(path: Path | str) -> str:
    """`path` as sbatch's --output/--error/--input take it literally. Slurm expands filename
    patterns there (%j, %x, %N, %%...), so `%` is written `%%`; but a name holding a backslash
    is not expanded at all, its backslashes taken as escapes instead (two for one): then only
    the backslashes are doubled. --chdir and the script's path are taken as they are."""
    text = str(path)
    if "\\" in text:
        return text.replace("\\", "\\\\")
    return text.replace("%", "%%")


def submit_argv(
    sbatch: str, folder: RunFolder, script: Path, partition: str, job_name: str
) -> list[str]:
    """sbatch's command line: the output appended to engine.out.log, run in the folder."""
    return [
        sbatch,
        "--parsable",
        f"--partition={partition}",
        f"--job-name={job_name}",
        f"--output={stdio_path(folder.engine_out)}",
        "--open-mode=append",
        f"--chdir={folder.root}",
        str(script),
    ]


def submit(
    folder: RunFolder,
    script: Path,
    partition: str,
    job_name: str,
    env: Mapping[str, str] | None = None,
) -> str:
    """sbatch the script (its output appended to engine.out.log); the job id."""
    argv = submit_argv(tool("sbatch"), folder, script, partition, job_name)
    try:  # sbatch hands the job the environment it gets: no notification secret in it
        res = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=QUERY_TIMEOUT_S,
            env=child_env(env),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise InputError(
            f"sbatch: no answer from the scheduler in {QUERY_TIMEOUT_S:.0f} s; "
            "nothing was submitted that fontaine-tui knows of"
        ) from None
    if res.returncode != 0:
        why = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
        raise InputError(f"sbatch --partition={partition}: {why[:300]}")
    job = res.stdout.strip().split(";")[0]
    if not job.isdigit():
        raise InputError(f"sbatch --parsable: expected a job id, got {res.stdout[:100]!r}")
    return job


# -- the job's state --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobState:
    state: str  # squeue/sacct/scontrol's word: RUNNING, COMPLETED, CANCELLED, TIMEOUT, ...
    exit_code: int | None = None  # the batch script's exit status ("A" of ExitCode A:B)
    signal: int | None = None  # the signal that ended it ("B")
    reason: str = ""  # why pending, or the node list
    source: str = ""  # "squeue" | "sacct" | "scontrol"

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    def returncode(self) -> int | None:
        """As Popen's returncode: -N for signal N, else the exit status."""
        if self.signal:
            return -self.signal
        return self.exit_code


def _exit_code(text: str) -> tuple[int | None, int | None]:
    code, _, sig = text.strip().partition(":")
    try:
        return int(code), int(sig or 0)
    except ValueError:
        return None, None


def parse_scontrol(text: str) -> dict[str, str]:
    """Key=Value fields of one `scontrol show job -o` record (a value with spaces runs on to
    the next ` Key=`)."""
    out: dict[str, str] = {}
    key = None
    for token in text.strip().split(" "):
        name, eq, value = token.partition("=")
        if eq and re.fullmatch(r"[A-Za-z][A-Za-z0-9_:/]*", name):
            key = name
            out[key] = value
        elif key is not None:
            out[key] += " " + token
    return out


# runs one scheduler command (argv[0] a name: squeue, sacct, scontrol) and gives its text
# result, or None when it could not be run or did not finish (here: local_runner; over SSH:
# remote.RemoteEngine's)
Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str] | None"]


def local_runner(env: Mapping[str, str] | None = None, timeout: float = QUERY_TIMEOUT_S) -> Runner:
    def run(argv: Sequence[str]) -> subprocess.CompletedProcess[str] | None:
        path = shutil.which(argv[0])
        if path is None:
            return None
        try:
            return subprocess.run(
                [path, *argv[1:]],
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                env=child_env(env),
            )
        except (OSError, subprocess.TimeoutExpired):
            return None

    return run


def _not_held(res: subprocess.CompletedProcess[str] | None) -> bool:
    """The controller answered, and does not hold the job (any more): an empty answer, or
    its "Invalid job id specified". Not a failure to ask (slurmctld unreachable, a timeout)."""
    if res is None:
        return False
    if res.returncode == 0:
        return not res.stdout.strip()
    return "invalid job id" in res.stderr.lower()


def look_up(
    job: str,
    env: Mapping[str, str] | None = None,
    timeout: float = QUERY_TIMEOUT_S,
    run: Runner | None = None,
) -> tuple[JobState | None, bool]:
    """(the job's state now, or None when no command can say; whether the controller said it
    holds no such job). squeue for a queued or running job; once it has left the queue,
    sacct (accounting), else scontrol (a finished job kept for MinJobAge). True beside None:
    squeue and scontrol both answered and neither holds it (a finished job forgotten by a
    cluster without accounting), not that they could not be asked."""
    run = run or local_runner(env, timeout)
    queue = run(("squeue", "-h", "-j", job, "-o", "%T|%r"))
    if queue is not None and queue.returncode == 0 and queue.stdout.strip():
        state, _, reason = queue.stdout.strip().splitlines()[0].partition("|")
        if state in ACTIVE:
            return JobState(state, reason=reason, source="squeue"), False
    res = run(("sacct", "-n", "-P", "-X", "-j", job, "-o", "State,ExitCode"))
    if res is not None and res.returncode == 0 and res.stdout.strip():
        state, _, code = res.stdout.strip().splitlines()[0].partition("|")
        ec, sig = _exit_code(code)
        return JobState(state.split()[0], ec, sig, source="sacct"), False
    res = run(("scontrol", "show", "job", "-o", job))
    if res is not None and res.returncode == 0 and res.stdout.strip():
        fields = parse_scontrol(res.stdout)
        ec, sig = _exit_code(fields.get("ExitCode", ""))
        return JobState(
            fields.get("JobState", "UNKNOWN"), ec, sig, fields.get("Reason", ""), source="scontrol"
        ), False
    return None, _not_held(queue) and _not_held(res)


def query(
    job: str,
    env: Mapping[str, str] | None = None,
    timeout: float = QUERY_TIMEOUT_S,
    run: Runner | None = None,
) -> JobState | None:
    """The job's state now; None when no command can say (the scheduler not answering, or a
    finished job forgotten by a cluster without accounting)."""
    return look_up(job, env, timeout, run)[0]


def alive(
    job: str,
    env: Mapping[str, str] | None = None,
    timeout: float = QUERY_TIMEOUT_S,
    run: Runner | None = None,
) -> bool | None:
    """Is the job queued or running? False once it has ended (or the controller holds it no
    more); None when the scheduler cannot say now: a failing squeue is never "gone"."""
    state, not_held = look_up(job, env, timeout, run)
    if state is not None:
        return state.active
    return False if not_held else None


def stop_bound(
    grace_int: float = GRACE_INT_S,
    grace_term: float = GRACE_TERM_S,
    grace_cancel: float = GRACE_CANCEL_S,
) -> float:
    """The longest SlurmJob.stop can take with these graces: its first look, then for each of
    SIGINT, SIGTERM and scancel a scancel call, the grace, and the look that runs past it,
    every scheduler command taking its whole QUERY_TIMEOUT_S."""
    return LOOK_S + 3 * (QUERY_TIMEOUT_S + LOOK_S) + grace_int + grace_term + grace_cancel


def scheduler_exit(
    folder: RunFolder,
    job: str,
    state: JobState,
    since: tuple[int, int] = (0, 0),
    sent: str | None = None,
) -> ExitInfo:
    """The exit as the engine's log and output tell it, with what Slurm says about it: a
    time limit, a preemption, Slurm's own OOM kill (its cgroup's, so the cause is oom-killed)."""
    memory = None
    if state.state == "OUT_OF_MEMORY":
        memory = MemoryEvidence(cgroup=f"slurm job {job}", cgroup_kills=1)
    who = launched_who(folder)
    info = exit_info(folder, state.returncode(), since, memory, sent, who)
    if who == "command":  # its steps are in its own trainer's log
        info = dataclasses.replace(info, last_step=max(info.last_step, command_step(folder)))
    why = SCHEDULER_ENDS.get(state.state)
    if why is not None and not (state.state == "CANCELLED" and sent):
        said = f"slurm job {job}: {state.state}: {why}"
        info = dataclasses.replace(
            info,
            output=said if not info.output else f"{said}; the engine's last line: {info.output}",
        )
        if info.code is None and info.signal is None and info.event not in ("end", "error"):
            info = dataclasses.replace(info, signal="SIGKILL")
    return info


class SlurmJob:
    """A run's Slurm job as the console's `Process`: `poll` answers from the last look (a
    thread asks every `poll_s`), `stop` runs the stop sequence through scancel."""

    pid = 0  # no process here: the job runs on a node Slurm picks

    def __init__(
        self,
        folder: RunFolder,
        job: str,
        since: tuple[int, int] = (0, 0),
        env: Mapping[str, str] | None = None,
        poll_s: float = POLL_S,
        watch: bool = True,
    ) -> None:
        self.folder, self.job, self.since, self.env = folder, job, since, env
        self.poll_s = poll_s
        self.started: float | None = None
        self.memory = MemoryWatch(0, None, None, None)  # attempts.begin's baseline: none here
        self.sent: str | None = None
        self.last: JobState | None = None
        self._exit: ExitInfo | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        if watch:
            self._thread = threading.Thread(
                target=self._watch, daemon=True, name=f"slurm-job-{job}"
            )
            self._thread.start()

    @property
    def label(self) -> str:
        return f"slurm job {self.job}"

    def look(self) -> JobState | None:
        state = query(self.job, self.env)
        with self._lock:
            if state is not None:
                self.last = state
                if not state.active and self._exit is None:
                    self._exit = scheduler_exit(self.folder, self.job, state, self.since, self.sent)
        return state

    def _watch(self) -> None:
        while not self._done.is_set():
            self.look()
            if self._exit is not None:
                return
            self._done.wait(self.poll_s)

    def poll(self) -> ExitInfo | None:
        if self._thread is None and self._exit is None:
            self.look()
        return self._exit

    def wait(self, timeout: float | None = None, interval: float = 0.5) -> ExitInfo | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._exit is None:
                self.look()
            if self._exit is not None:
                return self._exit
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(interval)

    def scancel(self, *args: str) -> bool:
        try:
            res = subprocess.run(
                [tool("scancel"), *args, self.job],
                capture_output=True,
                text=True,
                timeout=QUERY_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
                env=child_env(self.env),
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        return res.returncode == 0

    def signal_job(self, name: str) -> bool:
        """`scancel --full --signal=NAME`: every process of the job, the batch script's
        included (torchrun and its ranks, as a process group here)."""
        if self.poll() is not None:
            return False
        ok = self.scancel("--full", f"--signal={name.removeprefix('SIG')}")
        if ok:
            self.sent = name
        return ok

    def stop(
        self,
        grace_int: float = GRACE_INT_S,
        grace_term: float = GRACE_TERM_S,
        grace_cancel: float = GRACE_CANCEL_S,
    ) -> ExitInfo:
        """SIGINT (the engine checkpoints and exits), SIGTERM, then scancel (Slurm's own
        SIGTERM-then-SIGKILL); a job not yet running is cancelled at once."""
        state = self.look()
        if self._exit is not None:
            return self._exit
        if state is not None and state.state == "PENDING":
            self.scancel()  # nothing ran: no signal, Slurm's CANCELLED says it
            info = self.wait(grace_cancel)
        else:
            info = None
            for sig, grace in (("SIGINT", grace_int), ("SIGTERM", grace_term)):
                self.signal_job(sig)
                info = self.wait(grace)
                if info is not None:
                    break
            if info is None:
                self.sent = "SIGKILL"
                self.scancel()
                info = self.wait(grace_cancel)
        if info is None:
            raise InputError(
                f"slurm job {self.job}: still {self.last.state if self.last else '?'}"
                f" after scancel; see `scontrol show job {self.job}`"
            )
        self.close()
        return info

    def close(self) -> None:
        self._done.set()
