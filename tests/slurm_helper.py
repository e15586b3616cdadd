"""A real single-node Slurm cluster (munged + slurmctld + slurmd) for tests, all under one folder.

Nothing is started by systemd: the test set-up starts the three daemons as subprocesses in the
foreground, each with its own socket, pid, log and state paths under `root`, and `stop()` kills
them. No slurmdbd (AccountingStorageType=accounting_storage/none), so `sacct` does not work on
this cluster: it is the "no accounting" case, where `scontrol show job` is the fallback.

    cluster = SlurmCluster(tmp_path).start()
    subprocess.run(["sbatch", "--parsable", "--wrap", "hostname"], env=cluster.env(), ...)
    cluster.stop()

Debian packages: slurmctld slurmd slurm-client munge (bookworm: Slurm 22.05.8, munge 0.5.15);
scripts/test installs them.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from fontaine_tui.core.slurm.client import parse_scontrol

PARTITION = "debug"
CLUSTER_NAME = "fontaine-test"
NEEDED = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol")
_SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")


def find_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in _SBIN:
        cand = os.path.join(d, name)
        if os.access(cand, os.X_OK):
            return cand
    return None


def missing_tools() -> list[str]:
    """The programs the cluster needs that are not installed (empty when all are)."""
    return [name for name in NEEDED if find_tool(name) is None]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def real_memory_mb() -> int:
    """MemTotal from /proc/meminfo in MiB, less 10 %.

    slurmd drains a node whose RealMemory is above what it finds.
    """
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(int(line.split()[1]) / 1024 * 0.9)
    return 1024


class SlurmError(RuntimeError):
    """A daemon did not start, or the node did not come up; the message carries the log tails."""


class SlurmCluster:
    """Start with `SlurmCluster(root).start()`; `env()` is the environment for client commands."""

    def __init__(
        self,
        root: Path,
        *,
        cpus: int | None = None,
        startup_timeout: float = 60.0,
        extra_conf: str = "",
    ) -> None:
        self.root = Path(root)
        self.extra_conf = extra_conf
        self.hostname = socket.gethostname().split(".")[0]
        self.cpus = cpus or os.cpu_count() or 1
        self.memory_mb = real_memory_mb()
        self.startup_timeout = startup_timeout
        self.munge_dir = self.root / "munge"
        self.slurm_dir = self.root / "slurm"
        self.munge_socket = self.munge_dir / "munged.socket"
        self.munge_key = self.munge_dir / "munge.key"
        self.conf = self.slurm_dir / "slurm.conf"
        self.ctld_log = self.slurm_dir / "slurmctld.log"
        self.slurmd_log = self.slurm_dir / "slurmd.log"
        # munged -F logs to stderr (not to --log-file): its stdout/stderr file is the log
        self.munged_log = self.root / "munged.stdout"
        self.ctld_port = free_port()
        self.slurmd_port = free_port()
        while self.slurmd_port == self.ctld_port:
            self.slurmd_port = free_port()
        self.procs: dict[str, subprocess.Popen] = {}
        self.startup_s: float | None = None

    # -- public --------------------------------------------------------------------------

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment a client command (sbatch, squeue, scontrol, sacct...) needs.

        SLURM_CONF is enough: the conf's AuthInfo=socket=... names the munged that the
        clients' auth/munge plugin talks to."""
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = str(self.conf)
        return env

    def run(
        self, *args: str, check: bool = False, timeout: float = 30
    ) -> subprocess.CompletedProcess:
        """Run a client command against this cluster (text output)."""
        return subprocess.run(
            list(args), env=self.env(), capture_output=True, text=True, check=check, timeout=timeout
        )

    def start(self) -> SlurmCluster:
        missing = missing_tools()
        if missing:
            raise FileNotFoundError(f"not installed: {', '.join(missing)}")
        # unix socket paths (munged's, slurmstepd's <spool>/<node>_<job>.<step>) hold 107 bytes
        longest = max(len(str(self.munge_socket)), len(str(self.slurm_dir / "spool")) + 30)
        if longest > 104:
            raise SlurmError(
                f"root {self.root} is too long for unix socket paths ({longest} > 104)"
            )
        t0 = time.monotonic()
        try:
            self._start_munged()
            self._write_conf()
            self._start_daemon(
                "slurmctld",
                [find_tool("slurmctld"), "-D", "-f", str(self.conf), "-L", str(self.ctld_log)],
            )
            self._wait_ctld()
            self._start_daemon(
                "slurmd",
                [
                    find_tool("slurmd"),
                    "-D",
                    "-f",
                    str(self.conf),
                    "-N",
                    self.hostname,
                    "-L",
                    str(self.slurmd_log),
                ],
            )
            self._wait_node_idle()
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """Kill slurmd, slurmctld and munged, in that order.

        Nothing outside root is touched, and nothing under root is removed (the logs stay
        for a post-mortem).
        """
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        # slurmstepd processes of jobs still running are children of slurmd's session;
        # they outlive slurmd: end those we started (their parent is gone, they hold our root)
        self._kill_leftover_stepds()

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def logs(self, lines: int = 30) -> str:
        """The last lines of each daemon's log and stdout/stderr (for error messages)."""
        out = []
        paths = [
            self.munged_log,
            self.ctld_log,
            self.slurmd_log,
            self.root / "slurmctld.stdout",
            self.root / "slurmd.stdout",
        ]
        for path in paths:
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(out)

    # -- munge ---------------------------------------------------------------------------

    def _start_munged(self) -> None:
        self.munge_dir.mkdir(parents=True, exist_ok=True)
        # munged refuses group/other-writable directories on the key/socket/log paths, and
        # warns unless everyone may traverse the socket's folder (clients of other users)
        self.munge_dir.chmod(0o755)
        self.root.chmod(self.root.stat().st_mode & ~0o022)
        subprocess.run(
            [find_tool("mungekey"), "--create", "--keyfile", str(self.munge_key)],
            check=True,
            capture_output=True,
            text=True,
        )
        self.munge_key.chmod(0o600)
        cmd = [
            find_tool("munged"),
            "-F",
            "-f",
            f"--socket={self.munge_socket}",
            f"--key-file={self.munge_key}",
            f"--pid-file={self.munge_dir / 'munged.pid'}",
            f"--log-file={self.munge_dir / 'munged.log'}",
            f"--seed-file={self.munge_dir / 'munged.seed'}",
        ]
        self._start_daemon("munged", cmd)
        deadline = time.monotonic() + 15
        while not self.munge_socket.exists():
            self._check_alive("munged")
            if time.monotonic() > deadline:
                raise SlurmError("munged did not create its socket\n" + self.logs())
            time.sleep(0.05)

    # -- slurm ---------------------------------------------------------------------------

    def conf_text(self) -> str:
        d = self.slurm_dir
        return (
            f"""\
ClusterName={CLUSTER_NAME}
SlurmctldHost={self.hostname}(127.0.0.1)
SlurmctldPort={self.ctld_port}
SlurmdPort={self.slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={d / "state"}
SlurmdSpoolDir={d / "spool"}
SlurmctldPidFile={d / "slurmctld.pid"}
SlurmdPidFile={d / "slurmd.pid"}
SlurmctldLogFile={self.ctld_log}
SlurmdLogFile={self.slurmd_log}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MailProg=/bin/true
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName={self.hostname} NodeAddr=127.0.0.1 NodeHostname={self.hostname} CPUs={self.cpus} RealMemory={self.memory_mb} State=UNKNOWN
PartitionName={PARTITION} Nodes={self.hostname} Default=YES MaxTime=INFINITE State=UP
"""
            + self.extra_conf
        )

    def _write_conf(self) -> None:
        for sub in ("state", "spool"):
            (self.slurm_dir / sub).mkdir(parents=True, exist_ok=True)
        self.conf.write_text(self.conf_text())

    def _start_daemon(self, name: str, cmd: list) -> None:
        out = open(self.root / f"{name}.stdout", "wb")
        env = self.env()
        # own session: a Ctrl-C in the test runner does not reach them, stop() does
        self.procs[name] = subprocess.Popen(
            [str(c) for c in cmd],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            cwd=self.root,
        )
        out.close()

    def _check_alive(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is not None:
            raise SlurmError(f"{name} exited with {proc.returncode}\n{self.logs()}")

    def _check_all(self) -> None:
        for name in ("munged", "slurmctld", "slurmd"):
            if name in self.procs:
                self._check_alive(name)

    def _wait_ctld(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            self._check_all()
            r = self.run(find_tool("scontrol"), "ping", timeout=15)
            if "is UP" in r.stdout:
                return
            if time.monotonic() > deadline:
                raise SlurmError(f"slurmctld not up: {r.stdout}{r.stderr}\n{self.logs()}")
            time.sleep(0.1)

    def node_state(self) -> str:
        r = self.run(find_tool("sinfo"), "-h", "-N", "-n", self.hostname, "-o", "%T", timeout=15)
        return r.stdout.strip()

    def _wait_node_idle(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        state = ""
        while True:
            self._check_all()
            state = self.node_state()
            if state == "idle":
                return
            if time.monotonic() > deadline:
                reason = self.run(find_tool("scontrol"), "show", "node", self.hostname).stdout
                raise SlurmError(
                    f"node {self.hostname} is {state!r}, not idle\n{reason}\n{self.logs()}"
                )
            time.sleep(0.1)

    def _kill_leftover_stepds(self) -> None:
        proc_dir = Path("/proc")
        marker = str(self.conf).encode()
        for entry in proc_dir.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if b"slurmstepd" in cmdline.split(b"\0")[0] and marker in environ:
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except OSError:
                    pass

    # -- jobs ----------------------------------------------------------------------------

    def sbatch(self, *args: str) -> str:
        """Submit with `sbatch --parsable ARGS`; return the job id."""
        r = self.run(find_tool("sbatch"), "--parsable", *args, check=False)
        if r.returncode != 0:
            raise SlurmError(f"sbatch failed ({r.returncode}): {r.stderr}")
        return r.stdout.strip().split(";")[0]

    def wait_gone(self, job_id: str, timeout: float = 60) -> None:
        """Poll `squeue -h -j ID -o %T` until the job leaves the queue."""
        deadline = time.monotonic() + timeout
        while True:
            r = self.run(find_tool("squeue"), "-h", "-j", job_id, "-o", "%T")
            # a finished job may still show briefly as COMPLETING/COMPLETED, or be unknown
            state = r.stdout.strip()
            if r.returncode == 0 and state in (
                "",
                "COMPLETED",
                "FAILED",
                "CANCELLED",
                "TIMEOUT",
                "OUT_OF_MEMORY",
                "NODE_FAIL",
            ):
                return
            if r.returncode != 0 and "Invalid job id" in r.stderr:
                return
            if time.monotonic() > deadline:
                raise SlurmError(f"job {job_id} still {state!r} after {timeout}s\n{self.logs()}")
            time.sleep(0.2)

    def show_job(self, job_id: str) -> dict[str, str]:
        """`scontrol show job -o ID` as a dict of its Key=Value fields."""
        r = self.run(find_tool("scontrol"), "show", "job", "-o", job_id, check=True)
        return parse_scontrol(r.stdout)
