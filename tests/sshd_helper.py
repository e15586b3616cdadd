"""A real OpenSSH server on 127.0.0.1 for tests and benches: throwaway keys, a free port.

Used by tests/conftest.py (the `sshd` fixture) and bench/follow_latency.py.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

HOST_ALIAS = "fontaine-test"


def find_sshd() -> str | None:
    for cand in (shutil.which("sshd"), "/usr/sbin/sshd", "/usr/local/sbin/sshd"):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def _die_with_parent() -> None:
    """In the child before exec: the kernel sends it SIGTERM when its parent dies (Linux)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


class Sshd:
    """Start with `Sshd(tmp).start()`; `ssh_options` points a client at it (`-F config`)."""

    def __init__(self, root: Path, extra_config: str = "") -> None:
        self.root = Path(root)
        self.extra_config = extra_config
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.user = getpass.getuser()
        self.proc: subprocess.Popen | None = None
        self.keys_dir: Path | None = None
        self.config = self.root / "ssh_config"
        self.key = self.root / "client_key"

    @property
    def ssh_options(self) -> tuple[str, ...]:
        return ("-F", str(self.config))

    def start(self, listen_after: float = 0.0) -> Sshd:
        """Write the keys and configs, then start sshd, now or after `listen_after` seconds.

        With `listen_after`, a timer thread starts it and its port refuses connections until
        then (a host still booting).
        """
        sshd = find_sshd()
        if sshd is None:
            raise FileNotFoundError("sshd")
        host_key = self.root / "host_key"
        _keygen(host_key)
        _keygen(self.key)
        # sshd reads authorized_keys as the logging-in user: keep it where any user can read
        self.keys_dir = Path(tempfile.mkdtemp(prefix="fontaine-sshd-keys-"))
        self.keys_dir.chmod(0o755)
        keys = self.keys_dir / "authorized_keys"
        keys.write_text((self.root / "client_key.pub").read_text())
        keys.chmod(0o644)
        (self.root / "sshd_config").write_text(f"""\
Port {self.port}
ListenAddress 127.0.0.1
HostKey {host_key}
PidFile {self.root}/sshd.pid
AuthorizedKeysFile {keys}
PermitRootLogin yes
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
MaxSessions 64
MaxStartups 64
LogLevel ERROR
{self.extra_config}
""")
        self.write_client_config(self.config, self.key)
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        if listen_after > 0:
            timer = threading.Timer(listen_after, self._launch, (sshd,))
            timer.daemon = True
            timer.start()
            return self
        return self._launch(sshd)

    def _launch(self, sshd: str) -> Sshd:
        # started from the test's own thread, it ends with the test process, even one ended
        # by its time bound (tests/timeouts.py) before this fixture's teardown; a timer
        # thread's start (listen_after) would end it with the thread, so not then
        here = threading.current_thread() is threading.main_thread()
        with open(self.root / "sshd.log", "wb") as log:
            self.proc = subprocess.Popen(
                [sshd, "-D", "-e", "-f", str(self.root / "sshd_config")],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                preexec_fn=_die_with_parent if here else None,
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("sshd exited: " + (self.root / "sshd.log").read_text())
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    if s.recv(4).startswith(b"SSH"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not start")

    def write_client_config(self, path: Path, key: Path) -> None:
        path.write_text(f"""\
Host {HOST_ALIAS}
  HostName 127.0.0.1
  Port {self.port}
  User {self.user}
  IdentityFile {key}
  IdentitiesOnly yes
  IdentityAgent none
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  GlobalKnownHostsFile /dev/null
  PasswordAuthentication no
  KbdInteractiveAuthentication no
  LogLevel ERROR
""")

    def connection_processes(self) -> list[psutil.Process]:
        """The per-connection sshd processes (not the listener, not the user's commands)."""
        if self.proc is None:
            return []
        out = []
        for child in psutil.Process(self.proc.pid).children(recursive=True):
            try:
                if "sshd" in child.name():
                    out.append(child)
            except psutil.NoSuchProcess:
                pass
        return out

    def cut(self) -> int:
        """Kill every server-side connection process, as a dropped link would; how many."""
        procs = self.connection_processes()
        for p in procs:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        return len(procs)

    def stop(self) -> None:
        if self.proc is not None:
            self.cut()
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self.keys_dir is not None:
            shutil.rmtree(self.keys_dir, ignore_errors=True)


def processes_mentioning(text: str, exe: str = "tail") -> list[psutil.Process]:
    """Live processes named `exe` whose command line mentions `text` (orphan checks)."""
    out = []
    for p in psutil.process_iter(["name", "cmdline"]):
        try:
            if p.info["name"] == exe and any(text in a for a in p.info["cmdline"] or ()):
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def ssh_children() -> list[psutil.Process]:
    """This process's own ssh clients, running or not yet waited for (not a shared master,
    which ssh -f detached)."""
    out = []
    for p in psutil.Process().children():
        try:
            if p.name() == "ssh":
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def attach_plain(
    config: Path, run: Path, state: Path, timeout: float = 120, **env: str | None
) -> subprocess.CompletedProcess[str]:
    """`fontaine-tui attach HOST_ALIAS:run --plain --until-end --preset smoke` through the ssh
    `config`, as a user runs it: a real subprocess of this checkout, its registry under
    `state`. `env` sets (a str) or removes (None) the child's variables."""
    root = Path(__file__).parents[1]
    child = {
        **os.environ,
        "PYTHONPATH": str(root),
        "FONTAINE_REGISTRY": str(state / "babysit.toml"),
    }
    for key, value in env.items():
        if value is None:
            child.pop(key, None)
        else:
            child[key] = value
    argv = ["attach", f"{HOST_ALIAS}:{run}", "--ssh-config", str(config), "--plain"]
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv, "--until-end", "--preset", "smoke"],
        capture_output=True,
        text=True,
        env=child,
        cwd=root,
        timeout=timeout,
    )
