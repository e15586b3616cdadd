"""Launching on another host over SSH, and owning the engine there.

The remote host runs its own fontaine-tui (`[hosts.NAME]`: its project folder and python):
`fontaine-tui launch PRESET --detach --json` there runs the same guards on that machine (its
GPUs through NVML or nvidia-smi, its RAM), freezes prereg.json there and starts the engine in
its own session, so the engine outlives the SSH connection. Here, the preset is first checked
to be the same one (the remote's sha256 against this one's), the frozen prereg.json is read
back and kept beside the registry with the same hash, and the run is registered with its
host. `RemoteEngine` is the console's handle on that engine: its state polled over the shared
connection in a thread (the console never waits on SSH), and `stop` runs `fontaine-tui stop`
there (SIGINT, then SIGTERM, then SIGKILL: the same sequence as here). Liveness has three
answers: alive, gone, and "cannot say now" (the host or the scheduler not answering), which
is never taken for gone; a run seen gone is read there, never stopped (`read_exit`).

Every remote command line is built by `fontaine_command`: the fixed words are ours, every
piece a user gave (paths, names, values) single-quoted, so nothing runs that was not asked.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shlex
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.exits import ExitInfo, exit_from_dict, exit_to_dict
from fontaine_tui.core.runs.hosts import HostSettings
from fontaine_tui.core.slurm import client as slurm_client
from fontaine_tui.core.slurm import job as slurm_job
from fontaine_tui.core.slurm.submit import check_host
from fontaine_tui.core.ssh.connection import SshConnection, SshError
from fontaine_tui.core.ssh.destination import SshTarget
from fontaine_tui.core.verdict.prereg import Prereg, parse_prereg

if TYPE_CHECKING:
    from fontaine_tui.core.run.attempts import Attempt
    from fontaine_tui.core.runfolder import RunFolder

__all__ = [
    "RemoteEngine",
    "RemoteLaunch",
    "check_host",
    "fontaine_command",
    "keep_prereg",
    "launch_on",
    "python_command",
    "read_exit",
    "report_exit",
]

POLL_S = 5.0  # how often RemoteEngine polls the remote pid
# an SSH connection (ConnectTimeout, a slow login) and the remote python's start, on top of
# what a remote command itself waits for
CONNECT_S = 60.0
CALL_TIMEOUT_S = 120.0  # a short remote fontaine-tui command (`presets show`)
# `launch --detach --json` there: its guards' probes, the engine's identity (engine_argv's 60 s),
# sbatch (slurm_client.QUERY_TIMEOUT_S) and a python start on a slow shared file system
LAUNCH_TIMEOUT_S = 600.0
# the remote stop: SlurmJob.stop's longest sequence (graces and scheduler calls), which
# covers the pid sequence (SIGINT 60 s, SIGTERM 30 s, SIGKILL 10 s), and the connection
STOP_TIMEOUT_S = slurm_job.stop_bound() + CONNECT_S
# read_exit there: one status query of a job (squeue, sacct, scontrol), and the connection
READ_TIMEOUT_S = slurm_client.LOOK_S + CONNECT_S
READ_TRIES = 3  # reads that fail in a row before a run seen gone ends with the failure said
READ_EXIT = (
    "import sys; from fontaine_tui.core.launch.remote import report_exit; "
    "sys.exit(report_exit(*sys.argv[1:]))"
)


def python_command(settings: HostSettings, *argv: str) -> str:
    """`cd PROJECT && exec env K=V... PYTHON ARGV...`, every piece quoted."""
    env = [shlex.quote(f"{k}={v}") for k, v in settings.env.items()]
    return " ".join(
        [
            "cd",
            "--",
            shlex.quote(settings.project),
            "&&",
            "exec",
            "env",
            "--",
            *env,
            shlex.quote(settings.python),
            *map(shlex.quote, argv),
        ]
    )


def fontaine_command(settings: HostSettings, *args: str) -> str:
    """`cd PROJECT && exec env K=V... PYTHON -m fontaine_tui ARGS...`, every piece quoted."""
    return python_command(settings, "-m", "fontaine_tui", *args)


@dataclass(frozen=True, slots=True)
class RemoteLaunch:
    host: str
    run_dir: str
    pid: int
    pid_started: float
    preset_sha256: str
    launched_at: str
    prereg: Prereg
    local_prereg: Path  # the copy kept here
    job: str = ""  # the Slurm job id when submitted there (`--on slurm:PARTITION@HOST`)


def _last_line(err: bytes) -> str:
    lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


async def _call(
    ssh: SshConnection, settings: HostSettings, *args: str, timeout: float = CALL_TIMEOUT_S
) -> tuple[int, bytes, bytes]:
    rc, out, err = await ssh.shell(fontaine_command(settings, *args), timeout)
    if rc == 127 or b"No module named fontaine_tui" in err:
        raise InputError(
            f"{settings.name}: {settings.python} -m fontaine_tui: not found in "
            f"{settings.project} ({_last_line(err)}); set [hosts.{settings.name}] "
            "project and python in config.toml"
        )
    return rc, out, err


async def launch_on(
    settings: HostSettings,
    preset: Preset,
    keep: Path,
    *,
    output_dir: str | None = None,
    resume: bool = False,
    yes_ram: bool = False,
    ssh_options: Sequence[str] = (),
    on: str | None = None,
) -> RemoteLaunch:
    """Launch `preset` on the host.

    With `on`, the host's own `--on` (slurm:PARTITION submits it to Slurm from there). Raises
    InputError (one line) for a refusal there or here."""
    host = settings.name
    args = ["launch", preset.name, "--detach", "--json"]
    args += ["--output-dir", output_dir] if output_dir else []
    args += ["--resume"] if resume else []
    args += ["--yes-ram"] if yes_ram else []
    args += ["--on", on] if on else []
    ssh = SshConnection(SshTarget(host, settings.project), ssh_options)
    try:
        await _same_preset_there(ssh, settings, preset)
        run_dir, pid, job, started = _launched(host, await _launch_there(ssh, settings, args))
    finally:
        await ssh.close()
    try:
        prereg, local = await _keep_frozen(host, run_dir, preset, keep, ssh_options)
    except (InputError, SshError, OSError) as exc:
        # launched there all the same: say so, and how to reach it, rather than a refusal
        what = f"slurm job {job}" if job else f"engine pid {pid}"
        raise InputError(
            f"{exc}; the run was launched there and goes on ({what} in "
            f"{run_dir}): fontaine-tui attach {host}:{run_dir}, or stop it with "
            f"fontaine-tui stop {run_dir} on {host}"
        ) from None
    return RemoteLaunch(
        host, run_dir, pid, started, prereg.preset_sha256, prereg.launched_at, prereg, local, job
    )


async def _same_preset_there(ssh: SshConnection, settings: HostSettings, preset: Preset) -> None:
    """Refuse unless the host's preset of that name has this one's canonical hash."""
    host = settings.name
    rc, out, err = await _call(ssh, settings, "presets", "show", preset.name)
    if rc != 0:
        raise InputError(f"{host}: preset {preset.name}: {_last_line(err) or f'exit {rc}'}")
    theirs = out.decode("utf-8", "replace").rpartition("# sha256 (canonical form): ")[2]
    theirs = theirs.strip()
    if theirs != preset.sha256:
        raise InputError(
            f"{host}: preset {preset.name} there is not this one (sha256 "
            f"{theirs[:12] or '?'} there, {preset.sha256[:12]} here): copy "
            "it there first; nothing was launched"
        )


async def _launch_there(ssh: SshConnection, settings: HostSettings, args: list[str]) -> bytes:
    """The host's `launch --detach --json` output; its refusal or failure as one line."""
    host = settings.name
    try:
        rc, out, err = await _call(ssh, settings, *args, timeout=LAUNCH_TIMEOUT_S)
    except SshError as exc:  # cut mid-launch: what it did there is not known here
        raise InputError(
            f"{exc}; the launch there may have gone on: see `fontaine-tui runs` on {host}"
        ) from None
    if rc != 0:  # the remote guards' one line (exit 2), or its failure
        raise InputError(f"{host}: {_last_line(err) or f'launch exited {rc}'}")
    return out


def _launched(host: str, out: bytes) -> tuple[str, int, str, float]:
    """(run folder, engine pid, Slurm job or "", pid start time) from the launch's JSON line."""
    try:
        doc = json_loads(out.decode().strip().splitlines()[-1])
        run_dir, pid, job = str(doc["run_dir"]), int(doc["pid"]), str(doc.get("job") or "")
        started = float(doc.get("pid_started") or 0.0)
        if not math.isfinite(started):
            raise ValueError("pid_started")
    except (ValueError, IndexError, KeyError, TypeError):
        raise InputError(
            f"{host}: launch --detach --json: expected one JSON line, got {out[:200]!r}"
        ) from None
    return run_dir, pid, job, started


async def _keep_frozen(
    host: str, run_dir: str, preset: Preset, keep: Path, ssh_options: Sequence[str]
) -> tuple[Prereg, Path]:
    """The run's prereg.json there, checked to freeze `preset`, kept here byte for byte."""
    folder = SshConnection(SshTarget(host, run_dir), ssh_options)
    try:
        raw = await folder.read_bytes("prereg.json")
    finally:
        await folder.close()
    if raw is None:
        raise InputError(f"{host}:{run_dir}: no prereg.json after the launch")
    prereg = parse_prereg(raw, f"{host}:{run_dir}/prereg.json")
    if prereg.preset_sha256 != preset.sha256:
        raise InputError(
            f"{host}:{run_dir}/prereg.json: froze sha256 "
            f"{prereg.preset_sha256[:12]}, not this preset's {preset.sha256[:12]}"
        )
    return prereg, keep_prereg(keep, host, run_dir, raw)


def keep_prereg(keep: Path, host: str, run_dir: str, raw: bytes) -> Path:
    """Keep the remote prereg.json here, byte for byte.

    It is created once, never replaced: a resume finds the same bytes, and other bytes are kept
    beside it, numbered."""
    folder = keep / "remote" / hashlib.sha256(f"{host}:{run_dir}".encode()).hexdigest()[:24]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "where").write_text(f"{host}:{run_dir}\n")
    for n in range(1000):
        path = folder / ("prereg.json" if n == 0 else f"prereg.{n}.json")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            if path.read_bytes() == raw:
                return path
            continue
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        return path
    raise InputError(f"{folder}: too many different prereg.json copies")


class RemoteEngine:
    """The engine of a run launched on another host, as the console's `Process`.

    `poll` answers at once from the last poll of the host (a thread polls every POLL_S over the
    shared connection, and reads how the run ended there once it is gone). `stop` runs the stop
    sequence there and returns how it ended."""

    remote = True  # the host's fontaine-tui holds the run: its exit is recorded here as seen

    def __init__(
        self,
        settings: HostSettings,
        run_dir: str,
        pid: int,
        ssh_options: Sequence[str] = (),
        poll_s: float = POLL_S,
        job: str = "",
        watch: bool = True,
    ) -> None:
        self.settings, self.run_dir, self.pid, self.job = settings, run_dir, pid, job
        self.ssh = SshConnection(SshTarget(settings.name, run_dir), ssh_options)
        self.who = "engine"  # the host's fontaine-tui says how it ended
        self.poll_s = poll_s
        self._exit: ExitInfo | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, daemon=True, name=f"remote-engine-{settings.name}"
        )
        self._watching = False
        if watch:
            self.watch()

    def watch(self) -> None:
        """Start following the run (once).

        A handle made with watch=False (launch --on, which may only detach or follow the log) opens
        no SSH connection of its own until then."""
        with self._lock:
            if not self._watching and not self._stop.is_set():
                self._watching = True
                self._thread.start()

    def _run(self, command: str, timeout: float) -> subprocess.CompletedProcess:
        # ControlMaster=auto: the first command opens the shared connection, the rest reuse it
        return subprocess.run(
            self.ssh.argv(command, master="auto"),
            capture_output=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env=child_env(),
        )

    def _scheduler(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str] | None:
        """Run a Slurm client command there (slurm_client.Runner).

        None when it could not be run (ssh failed, no such command there) or did not finish."""
        env = [shlex.quote(f"{k}={v}") for k, v in self.settings.env.items()]
        command = " ".join(["env", "--", *env, *map(shlex.quote, argv)])
        try:
            res = self._run(command, slurm_client.QUERY_TIMEOUT_S + CONNECT_S)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if res.returncode in (126, 127, 255):
            return None
        return subprocess.CompletedProcess(
            res.args,
            res.returncode,
            res.stdout.decode("utf-8", "replace"),
            res.stderr.decode("utf-8", "replace"),
        )

    def alive(self) -> bool | None:
        """Whether the pid is there; None when the host or its scheduler cannot say now.

        For a Slurm job: queued or running, as slurm_client.alive asks squeue, then sacct, then
        scontrol there."""
        if self.job:
            return slurm_client.alive(str(int(self.job)), run=self._scheduler)
        try:
            res = self._run(f"test -d /proc/{int(self.pid)}", 30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return {0: True, 1: False}.get(res.returncode)  # 255: ssh failed; else not `test`'s

    def _watch(self) -> None:
        failed = 0
        while not self._stop.wait(self.poll_s):
            if self.alive() is not False:
                continue
            try:
                info = self._ask_exit()
            except InputError as exc:
                failed += 1
                if failed < READ_TRIES:
                    continue
                info = ExitInfo(None, None, False, 0, None, "", str(exc))
            if info is not None:
                with self._lock:
                    if self._exit is None:
                        self._exit = info
                return
            failed = 0  # running after all, or the host cannot say: poll again

    def poll(self) -> ExitInfo | None:
        return self._exit

    def _ask_exit(self) -> ExitInfo | None:
        """How the run ended, as the host's fontaine-tui reads its folder.

        That is `read_exit` there: nothing is stopped or written. None while it runs there after
        all, or while its scheduler cannot say. Raises InputError when it cannot be read."""
        command = python_command(
            self.settings, "-c", READ_EXIT, self.run_dir, str(self.pid), self.job
        )
        where = f"{self.settings.name}: reading how {self.run_dir} ended"
        try:
            res = self._run(command, READ_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(f"{where}: {exc}") from None
        if res.returncode != 0:
            raise InputError(f"{where}: exit {res.returncode}: {_last_line(res.stderr)}")
        try:
            doc = json_loads(res.stdout.decode().strip().splitlines()[-1])
            alive, info = doc["alive"], doc["exit"]
        except (ValueError, IndexError, KeyError, TypeError) as exc:
            raise InputError(f"{where}: expected one JSON line ({exc})") from None
        if alive is False and isinstance(info, dict):
            return exit_from_dict(info)
        return None

    def _stop_there(self, timeout: float) -> ExitInfo:
        command = fontaine_command(self.settings, "stop", self.run_dir, "--yes", "--json")
        try:
            res = self._run(command, timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(f"{self.settings.name}: stop: {exc}") from None
        if res.returncode != 0:
            raise InputError(
                f"{self.settings.name}: stop exited {res.returncode}: {_last_line(res.stderr)}"
            )
        try:
            return exit_from_dict(json_loads(res.stdout.decode().strip().splitlines()[-1]))
        except (ValueError, IndexError) as exc:
            raise InputError(f"{self.settings.name}: stop --json: {exc}") from None

    def stop(self) -> ExitInfo:
        """SIGINT, SIGTERM, SIGKILL to the engine's process group there (`fontaine-tui stop`)."""
        info = self._stop_there(STOP_TIMEOUT_S)
        with self._lock:
            self._exit = info
        self.close()
        return info

    def close(self) -> None:
        """Stop following; close the shared connection (the engine there goes on)."""
        self._stop.set()
        self.ssh.close_sync()

    @property
    def ssh_options(self) -> tuple[str, ...]:
        return tuple(self.ssh.ssh_options)

    def refusal(self) -> str | None:
        return None  # the host's `fontaine-tui stop` refuses there, with its own words

    def elsewhere(self) -> str:
        host = self.settings.name
        return (
            f"launched on {host}: its processes are there "
            f"(ssh {host} ps -o pid,stat,pcpu,rss,nlwp,args --forest -s {self.pid})"
        )

    def release(self, registry: object | None) -> None:
        """Close it; an exit it saw (a stop sent from here) is written into `registry`.

        The registry is a record, not the run: its failure is not said."""
        self.close()
        if registry is not None:
            with contextlib.suppress(Exception):
                record_exit(self, registry)


def record_exit(engine: RemoteEngine, registry) -> ExitInfo | None:
    """Record an exit seen of a remote engine in the registry here, keyed by its host and folder.

    The engine was stopped from here, or seen gone. Returns the exit, or None while it runs.
    The registry's own errors (InputError, OSError) are the caller's to say."""
    from fontaine_tui.core.verdict.prereg import utc_iso

    info = engine.poll()
    if info is not None:
        registry.update(
            engine.run_dir,
            engine.settings.name,
            status=info.status,
            exit_code=info.code,
            last_step=info.last_step,
            updated_at=utc_iso(time.time()),
        )
    return info


# -- on the host: how a run ended, read only ----------------------------------------------------


def read_exit(run_dir: str, pid: int, job: str = "") -> tuple[bool | None, ExitInfo | None]:
    """Read how the run in `run_dir` ended, as `fontaine-tui stop` reads a run already gone.

    The run is named by its engine `pid` here, or its Slurm `job`. It is read without its stop
    or its record: nothing is signalled, cancelled or written. Returns (False, its exit) once it
    has ended, (True, None) while it runs, and (None, None) when the scheduler cannot say now."""
    from fontaine_tui.core.run import attempts
    from fontaine_tui.core.runfolder import RunFolder

    folder = RunFolder(Path(run_dir))
    if not folder.root.is_dir():
        raise InputError(f"{run_dir}: no such run folder")
    tried = attempts.read_attempts(folder, alive=lambda p, started: True)
    last = next((a for a in reversed(tried) if (a.job == job if job else a.pid == pid)), None)
    since = last.since if last is not None else (0, 0)
    if job:
        return _job_exit(folder, job, since)
    return _pid_exit(folder, pid, last, since)


def _job_exit(
    folder: RunFolder, job: str, since: tuple[int, int]
) -> tuple[bool | None, ExitInfo | None]:
    """read_exit of a Slurm job: its scheduler's state, else the folder's once it is not held."""
    from fontaine_tui.core.run.exits import exit_info

    state, not_held = slurm_client.look_up(job)
    if state is not None:
        if state.active:
            return True, None
        return False, slurm_job.scheduler_exit(folder, job, state, since)
    return (False, exit_info(folder, None, since)) if not_held else (None, None)


def _pid_exit(
    folder: RunFolder, pid: int, last: Attempt | None, since: tuple[int, int]
) -> tuple[bool | None, ExitInfo | None]:
    """read_exit of an engine pid: the process found again (its attempt's), polled once."""
    from fontaine_tui.core.run.launcher import found_again

    baseline = last.baseline() if last is not None and not last.ended else None
    engine = found_again(folder, pid, last.pid_started if last else None, since, baseline)
    info = engine.poll()
    return (True, None) if info is None else (False, info)


def report_exit(run_dir: str, pid: str, job: str = "") -> int:
    """Print read_exit as one JSON line (RemoteEngine runs this on the host).

    The line is {"alive": true|false|null, "exit": {...}|null}. Returns 2, with one line on
    stderr, when it cannot be read."""
    import sys

    try:
        alive, info = read_exit(run_dir, int(pid), job)
    except (InputError, OSError, ValueError) as exc:
        print(f"fontaine-tui: {exc}", file=sys.stderr)
        return 2
    print(
        json.dumps(
            {"alive": alive, "exit": None if info is None else exit_to_dict(info)}, default=str
        ),
        flush=True,
    )
    return 0
