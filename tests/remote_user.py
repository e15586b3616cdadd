"""A non-root login on the test sshd, able to run this checkout's fontaine-tui and engine.

It is the far side of `launch --on HOST` in the tests.

Made only where the tests run as root (to add the user) and a system python of the same
minor version exists (its standard library readable by anyone). The user's interpreter is a
venv of that python whose site-packages are hard links to this environment's (no copy of the
2 GB, nothing of ours changed: a link is a new name for the same read-only file), so a login
that cannot enter /root still imports torch. This checkout's own packages are copied into the
login's home and the venv imports them from there: the checkout may sit where only its owner
can enter (`mktemp -d` makes such a folder), and an editable install points into it. Torn
down with the user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from tests.sshd_helper import HOST_ALIAS, Sshd

CHECKOUT = Path(__file__).resolve().parents[1]
# what the far side imports from this checkout: its folder here, the package's name there
PACKAGES = {"fontaine_tui": "fontaine_tui", "engine": "fontaine_engine"}

# one login per pytest-xdist worker (gw0, gw1, ...): two workers never share an account
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
USER = f"fontaine-remote-{_WORKER}" if _WORKER else "fontaine-remote"
ALIAS = f"{HOST_ALIAS}-remote"


@dataclass
class RemoteUser:
    name: str
    home: Path
    python: Path
    config: Path  # ssh client config with the ALIAS host: this user on the test sshd
    created: bool

    def run_as(self, *argv: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["su", "-s", "/bin/sh", self.name, "-c", " ".join(map(_q, argv))], **kw
        )


def _q(text: str) -> str:
    import shlex

    return shlex.quote(text)


def why_not() -> str | None:
    """Why this machine cannot have the remote user (None: it can)."""
    if os.geteuid() != 0:
        return "the tests do not run as root: no user can be added for the non-root login"
    if shutil.which("useradd") is None or shutil.which("su") is None:
        return "useradd or su not found"
    if _system_python() is None:
        v = f"{sys.version_info.major}.{sys.version_info.minor}"
        return f"no system python{v} readable by another user (/usr/bin/python{v})"
    return None


def _system_python() -> Path | None:
    v = f"{sys.version_info.major}.{sys.version_info.minor}"
    for cand in (Path(f"/usr/bin/python{v}"), Path(f"/usr/local/bin/python{v}")):
        if cand.is_file() and os.access(cand, os.X_OK):
            return cand
    return None


def make(root: Path, sshd: Sshd) -> RemoteUser:
    try:
        pwd.getpwnam(USER)
    except KeyError:
        pass
    else:  # someone's account, or one a killed test left: not this test's to write into
        raise OSError(f"user {USER} already exists; remove it (userdel -r {USER}) to run this")
    # "*": no password, and not locked ("!"), which sshd would refuse even for a key
    subprocess.run(["useradd", "-m", "-s", "/bin/sh", "-p", "*", USER], check=True)
    created = True
    pw = pwd.getpwnam(USER)
    home = Path(pw.pw_dir)
    venv = home / "venv"
    try:
        _venv(venv)
        _checkout_copy(home, venv)
    except BaseException:
        if created:
            subprocess.run(["userdel", "-r", "-f", USER], capture_output=True)
        raise
    config = root / "remote_ssh_config"
    text = sshd.config.read_text().replace(f"Host {HOST_ALIAS}\n", f"Host {ALIAS}\n")
    config.write_text(text.replace(f"  User {sshd.user}\n", f"  User {USER}\n"))
    return RemoteUser(USER, home, venv / "bin" / "python", config, created)


def _venv(venv: Path) -> None:
    if not venv.exists():
        subprocess.run(
            [str(_system_python()), "-m", "venv", "--without-pip", str(venv)], check=True
        )
        ours = Path(sysconfig.get_paths()["purelib"])
        theirs = Path(next((venv / "lib").glob("python*"))) / "site-packages"
        shutil.rmtree(theirs)
        # links, never chown'ed or written: they are this environment's own files
        subprocess.run(
            ["cp", "-al", str(ours), str(theirs)], check=True, capture_output=True
        )  # fails across filesystems: the test is skipped


def _checkout_copy(home: Path, venv: Path) -> None:
    """Copy this checkout's packages into the login's home and have the venv import them.

    The copy is owned by the login. The editable install's import hooks in the venv's
    site-packages (links to this environment's files that name the checkout's path) are
    removed from the venv. They are unlinked, so this environment's own files stay as they
    are, and a .pth names the copy.
    """
    dest = home / "checkout"
    for folder, name in PACKAGES.items():
        shutil.copytree(
            CHECKOUT / folder, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    subprocess.run(["chown", "-R", f"{USER}:", str(dest)], check=True, capture_output=True)
    site = Path(next((venv / "lib").glob("python*"))) / "site-packages"
    for path in site.iterdir():
        if path.name.startswith("__editable__") and path.is_file():
            path.unlink()
    (site / "fontaine-checkout.pth").write_text(f"{dest}\n")


def seeded_cache(user: RemoteUser, corpus: Path) -> Path:
    """The login's $XDG_CACHE_HOME, holding a copy of the test run's engine corpus.

    An engine started there finds its corpus built (the manifest's checks pass on the
    copy: the same bytes), instead of building it again as the login. The copy is the
    login's own, so its engine may write beside it (the decoded-frame cache). Made once per
    login; a test that needs the cold build uses another folder.
    """
    cache = user.home / "cache"
    dest = cache / "fontaine-engine" / corpus.name
    if not dest.is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.parent / f".{corpus.name}.copy"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(corpus, tmp)
        os.replace(tmp, dest)
        subprocess.run(["chown", "-R", f"{user.name}:", str(cache)], check=True)
    return cache


def remove(user: RemoteUser) -> None:
    for proc in _processes_of(user.name):
        try:
            proc.kill()
        except Exception:
            pass
    if user.created:
        subprocess.run(["userdel", "-r", "-f", user.name], capture_output=True)


def _processes_of(name: str):
    import psutil

    out = []
    for p in psutil.process_iter(["username"]):
        if p.info.get("username") == name:
            out.append(p)
    return out
