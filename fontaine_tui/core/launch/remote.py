"""Launching on another host over SSH, and owning the engine there.

The remote host runs its own fontaine-tui (`[hosts.NAME]`: its project folder and python):
`fontaine-tui launch PRESET --detach --json` there runs the same guards on that machine (its
GPUs through NVML or nvidia-smi, its RAM), freezes prereg.json there and starts the engine in
its own session, so the engine outlives the SSH connection. Here, the preset is first checked
to be the same one (the remote's sha256 against this one's), the frozen prereg.json is read
back and kept beside the registry with the same hash, and the run is registered with its
host. `RemoteEngine` is the console's handle on that engine: its state polled over the shared
connection in a thread (the console never waits on SSH), and `stop` runs `fontaine-tui stop`
there (SIGINT, then SIGTERM, then SIGKILL: the same sequence as here).

Every remote command line is built by `fontaine_command`: the fixed words are ours, every
piece a user gave (paths, names, values) single-quoted, so nothing runs that was not asked.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.ssh import SshRun
from fontaine_tui.core.follow.target import SshTarget
from fontaine_tui.core.launch.hosts import HostSettings
from fontaine_tui.core.launch.launcher import ExitInfo, exit_from_dict
from fontaine_tui.core.verdict.prereg import Prereg, parse_prereg
from fontaine_tui.core.verdict.presets import Preset

POLL_S = 5.0  # how often RemoteEngine looks at the remote pid
STOP_TIMEOUT_S = 200.0  # the remote stop's own graces (60 + 30 + 10 s) and the connection


def fontaine_command(settings: HostSettings, *args: str) -> str:
    """`cd PROJECT && exec env K=V... PYTHON -m fontaine_tui ARGS...`, every piece quoted."""
    env = [shlex.quote(f"{k}={v}") for k, v in settings.env.items()]
    return " ".join(["cd", "--", shlex.quote(settings.project), "&&", "exec", "env", "--", *env,
                     shlex.quote(settings.python), "-m", "fontaine_tui",
                     *map(shlex.quote, args)])


def check_host(name: str) -> None:
    """A host as ssh will take it: no option, no space, no shell or control character."""
    if not name or name.startswith("-") or any(c.isspace() or ord(c) < 32 for c in name):
        raise InputError(f"--on {name!r}: expected a host name or ssh alias (no spaces, not "
                         "beginning with '-')")


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


async def _call(ssh: SshRun, settings: HostSettings, *args: str) -> tuple[int, bytes, bytes]:
    rc, out, err = await ssh.shell(fontaine_command(settings, *args))
    if rc == 127 or b"No module named fontaine_tui" in err:
        raise InputError(f"{settings.name}: {settings.python} -m fontaine_tui: not found in "
                         f"{settings.project} ({_last_line(err)}); set [hosts.{settings.name}] "
                         "project and python in config.toml")
    return rc, out, err


async def launch_on(settings: HostSettings, preset: Preset, keep: Path, *,
                    output_dir: str | None = None, resume: bool = False, yes_ram: bool = False,
                    ssh_options: Sequence[str] = (), on: str | None = None) -> RemoteLaunch:
    """Launch `preset` on the host (with `on`, the host's own `--on`: slurm:PARTITION
    submits it to Slurm from there); InputError (one line) for a refusal there or here."""
    host = settings.name
    ssh = SshRun(SshTarget(host, settings.project), ssh_options)
    try:
        rc, out, err = await _call(ssh, settings, "presets", "show", preset.name)
        if rc != 0:
            raise InputError(f"{host}: preset {preset.name}: {_last_line(err) or f'exit {rc}'}")
        theirs = out.decode("utf-8", "replace").rpartition("# sha256 (canonical form): ")[2]
        theirs = theirs.strip()
        if theirs != preset.sha256:
            raise InputError(f"{host}: preset {preset.name} there is not this one (sha256 "
                             f"{theirs[:12] or '?'} there, {preset.sha256[:12]} here): copy "
                             "it there first; nothing was launched")
        args = ["launch", preset.name, "--detach", "--json"]
        args += ["--output-dir", output_dir] if output_dir else []
        args += ["--resume"] if resume else []
        args += ["--yes-ram"] if yes_ram else []
        args += ["--on", on] if on else []
        rc, out, err = await _call(ssh, settings, *args)
        if rc != 0:  # the remote guards' one line (exit 2), or its failure
            raise InputError(f"{host}: {_last_line(err) or f'launch exited {rc}'}")
        try:
            doc = json.loads(out.decode().strip().splitlines()[-1])
            run_dir, pid, job = str(doc["run_dir"]), int(doc["pid"]), str(doc.get("job") or "")
        except (ValueError, IndexError, KeyError, TypeError):
            raise InputError(f"{host}: launch --detach --json: expected one JSON line, got "
                             f"{out[:200]!r}") from None
    finally:
        await ssh.close()
    folder = SshRun(SshTarget(host, run_dir), ssh_options)
    try:
        raw = await folder.read_bytes("prereg.json")
    finally:
        await folder.close()
    if raw is None:
        raise InputError(f"{host}:{run_dir}: no prereg.json after the launch")
    prereg = parse_prereg(raw, f"{host}:{run_dir}/prereg.json")
    if prereg.preset_sha256 != preset.sha256:
        raise InputError(f"{host}:{run_dir}/prereg.json: froze sha256 "
                         f"{prereg.preset_sha256[:12]}, not this preset's {preset.sha256[:12]}")
    local = keep_prereg(keep, host, run_dir, raw)
    return RemoteLaunch(host, run_dir, pid, float(doc.get("pid_started") or 0.0),
                        prereg.preset_sha256, prereg.launched_at, prereg, local, job)


def keep_prereg(keep: Path, host: str, run_dir: str, raw: bytes) -> Path:
    """The remote prereg.json, byte for byte, here: created once, never replaced (a resume
    finds the same bytes; other bytes are kept beside it, numbered)."""
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
    """The engine of a run launched on another host, as the console's `Process`: `poll`
    answers at once from the last look (a thread looks every POLL_S over the shared
    connection), `stop` runs the stop sequence there and returns how it ended."""

    def __init__(self, settings: HostSettings, run_dir: str, pid: int,
                 ssh_options: Sequence[str] = (), poll_s: float = POLL_S, job: str = "") -> None:
        self.settings, self.run_dir, self.pid, self.job = settings, run_dir, pid, job
        self.ssh = SshRun(SshTarget(settings.name, run_dir), ssh_options)
        self.poll_s = poll_s
        self._exit: ExitInfo | None = None
        self._gone = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True,
                                        name=f"remote-engine-{settings.name}")
        self._thread.start()

    def _run(self, command: str, timeout: float) -> subprocess.CompletedProcess:
        # ControlMaster=auto: the first command opens the shared connection, the rest reuse it
        return subprocess.run(self.ssh.argv(command, master="auto"), capture_output=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def alive(self) -> bool | None:
        """Is the pid there (a Slurm job: in squeue's list)? None when the host cannot be
        asked now."""
        if self.job:
            env = [shlex.quote(f"{k}={v}") for k, v in self.settings.env.items()]
            command = " ".join(["env", "--", *env, "squeue", "-h", "-j", str(int(self.job)),
                                "-o", "%T", "|", "grep", "-q", "."])
        else:
            command = f"test -d /proc/{int(self.pid)}"
        try:
            res = self._run(command, 30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return None if res.returncode == 255 else res.returncode == 0

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_s):
            if self.alive() is False:
                self._gone = True
                return

    def poll(self) -> ExitInfo | None:
        if self._exit is not None:
            return self._exit
        if not self._gone:
            return None
        self._exit = self._ask_exit()
        return self._exit

    def _ask_exit(self) -> ExitInfo:
        """How it ended, as the host's fontaine-tui reads its folder (`stop` of a run that
        is gone stops nothing and says how it ended)."""
        try:
            return self._stop_there(timeout=60)
        except InputError as exc:
            return ExitInfo(None, None, False, 0, None, "", str(exc))

    def _stop_there(self, timeout: float) -> ExitInfo:
        command = fontaine_command(self.settings, "stop", self.run_dir, "--yes", "--json")
        try:
            res = self._run(command, timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(f"{self.settings.name}: stop: {exc}") from None
        if res.returncode != 0:
            raise InputError(f"{self.settings.name}: stop exited {res.returncode}: "
                             f"{_last_line(res.stderr)}")
        try:
            return exit_from_dict(json.loads(res.stdout.decode().strip().splitlines()[-1]))
        except (ValueError, IndexError) as exc:
            raise InputError(f"{self.settings.name}: stop --json: {exc}") from None

    def stop(self) -> ExitInfo:
        """SIGINT, SIGTERM, SIGKILL to the engine's process group there (`fontaine-tui stop`)."""
        self._exit = self._stop_there(STOP_TIMEOUT_S)
        self.close()
        return self._exit

    def close(self) -> None:
        """Stop looking; close the shared connection (the engine there goes on)."""
        self._stop.set()
        self.ssh.close_sync()
