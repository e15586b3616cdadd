"""The Slurm client commands: sbatch to submit, squeue, sacct and scontrol to ask, one each.

`submit` hands a job script to `sbatch --parsable` (paths and names as argv, never through a
shell; no notification secret in the job's environment). `look_up` asks the scheduler for a
job's state: `squeue` while the job is queued or running; once it has left the queue `sacct`
(accounting), else `scontrol show job` (a cluster without accounting keeps a finished job for
MinJobAge seconds). A `Runner` runs each command here (`local_runner`) or over SSH.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.runfolder import RunFolder

QUERY_TIMEOUT_S = 30.0  # one scheduler command (squeue, sacct, scontrol, scancel, sbatch)
LOOK_S = 3 * QUERY_TIMEOUT_S  # one status query of a job: squeue, then sacct, then scontrol
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


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise InputError(
            f"{name}: not found on PATH (is this a Slurm login node? the Slurm "
            "client commands are needed to submit and watch the job)"
        )
    return found


def stdio_path(path: Path | str) -> str:
    """`path` as sbatch's --output/--error/--input take it literally.

    Slurm expands filename patterns there (%j, %x, %N, %%...), so `%` is written `%%`. But a name
    holding a backslash is not expanded at all, its backslashes taken as escapes instead (two for
    one): then only the backslashes are doubled. --chdir and the script's path are taken as they
    are."""
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
    """The Key=Value fields of one `scontrol show job -o` record.

    A value with spaces runs on to the next ` Key=`."""
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


# `scontrol show job`'s fields that hold a whole line each: a path there may hold spaces and
# `Key=` text of its own, so they are read from the line, never split on spaces
WHOLE_LINE = ("Command", "WorkDir", "Comment", "StdErr", "StdIn", "StdOut")


def parse_show_job(text: str) -> dict[str, str]:
    """The fields of one `scontrol show job` record (its several-line form).

    The first line is `JobId=N JobName=NAME` (the name runs to the line's end); WorkDir,
    Command, Comment and the standard streams each hold a line of their own; the other lines
    are read as parse_scontrol reads them."""
    lines = text.split("\n")
    head, _, name = lines[0].partition(" JobName=")
    out = {"JobId": head.strip().removeprefix("JobId="), "JobName": name}
    for line in lines[1:]:
        body = line.removeprefix("   ")
        key, eq, value = body.partition("=")
        if eq and key in WHOLE_LINE:
            out.setdefault(key, value.rstrip(" ") if key == "Comment" else value)
        elif body.strip():
            for k, v in parse_scontrol(body).items():
                out.setdefault(k, v)
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
    """Whether the controller answered that it does not hold the job (any more).

    That is an empty answer, or its "Invalid job id specified". Not a failure to ask
    (slurmctld unreachable, a timeout)."""
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
    """Look the job up: its state now, and whether the controller holds no such job.

    Returns (the job's state now, or None when no command can say; whether the controller said
    it holds no such job). squeue for a queued or running job; once it has left the queue,
    sacct (accounting), else scontrol (a finished job kept for MinJobAge). True beside None:
    squeue and scontrol both answered and neither holds it (a finished job forgotten by a
    cluster without accounting), not that they could not be asked."""
    run = run or local_runner(env, timeout)
    queue = run(("squeue", "-h", "-j", job, "-o", "%T|%r"))
    listed = _answer(queue)
    if listed and (queued := _queued(listed)) is not None:
        return queued, False
    res = run(("sacct", "-n", "-P", "-X", "-j", job, "-o", "State,ExitCode"))
    if accounted := _answer(res):
        return _accounted(accounted), False
    res = run(("scontrol", "show", "job", "-o", job))
    if shown := _answer(res):
        return _shown(shown), False
    return None, _not_held(queue) and _not_held(res)


def _answer(res: subprocess.CompletedProcess[str] | None) -> str:
    """What a scheduler command printed, when it ran and succeeded; '' otherwise."""
    if res is None or res.returncode != 0:
        return ""
    return res.stdout.strip()


def _queued(listed: str) -> JobState | None:
    """The job as squeue lists it (`%T|%r`), while queued or running; None once it left."""
    state, _, reason = listed.splitlines()[0].partition("|")
    return JobState(state, reason=reason, source="squeue") if state in ACTIVE else None


def _accounted(rows: str) -> JobState:
    """The job as sacct's first row (`State|ExitCode`) has it."""
    state, _, code = rows.splitlines()[0].partition("|")
    ec, sig = _exit_code(code)
    return JobState(state.split()[0], ec, sig, source="sacct")


def _shown(record: str) -> JobState:
    """The job as `scontrol show job -o` has it."""
    fields = parse_scontrol(record)
    ec, sig = _exit_code(fields.get("ExitCode", ""))
    return JobState(
        fields.get("JobState", "UNKNOWN"), ec, sig, fields.get("Reason", ""), source="scontrol"
    )


def query(
    job: str,
    env: Mapping[str, str] | None = None,
    timeout: float = QUERY_TIMEOUT_S,
    run: Runner | None = None,
) -> JobState | None:
    """The job's state now.

    None when no command can say (the scheduler not answering, or a finished job forgotten by a
    cluster without accounting)."""
    return look_up(job, env, timeout, run)[0]


def alive(
    job: str,
    env: Mapping[str, str] | None = None,
    timeout: float = QUERY_TIMEOUT_S,
    run: Runner | None = None,
) -> bool | None:
    """Whether the job is queued or running.

    False once it has ended (or the controller holds it no more). None when the scheduler cannot
    say now: a failing squeue is never "gone"."""
    state, not_held = look_up(job, env, timeout, run)
    if state is not None:
        return state.active
    return False if not_held else None


def show_job(
    job: str,
    env: Mapping[str, str] | None = None,
    timeout: float = QUERY_TIMEOUT_S,
    run: Runner | None = None,
) -> dict[str, str] | None:
    """The scheduler's own record of the job (`scontrol show job`).

    None when the scheduler holds no such job, or cannot be asked."""
    run = run or local_runner(env, timeout)
    res = run(("scontrol", "show", "job", job))
    if res is None or res.returncode != 0 or not res.stdout.startswith("JobId="):
        return None
    return parse_show_job(res.stdout)
