"""Attach targets: a local run folder, `[user@]host:/path`, or `ssh://[user@]host[:port]/path`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.ssh.destination import SshTarget

_SCP = re.compile(
    r"^(?:(?P<user>[^@/:\s]+)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^@/:\s\[\]]+):(?P<path>.*)$"
)


@dataclass(frozen=True, slots=True)
class LocalFolder:
    """A run folder on this host."""

    folder: Path

    @property
    def label(self) -> str:
        return f"local {self.folder}"


FollowTarget = LocalFolder | SshTarget


def _ssh_url(text: str) -> SshTarget:
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        raise InputError(f"{text}: expected ssh://[user@]host[:port]/path (bad port)") from None
    host = parts.hostname
    path = unquote(parts.path)
    if not host or not path or path == "/":
        raise InputError(f"{text}: expected ssh://[user@]host[:port]/path/to/run")
    if path.startswith("/~"):
        path = path[3:] or "."  # ssh://host/~/run: relative to the remote home
    return SshTarget(host, path, unquote(parts.username) if parts.username else None, port)


def parse_follow_target(text: str) -> FollowTarget:
    """Parse a CLI target. An existing local path always wins over the host:path reading."""
    if not text or not text.strip():
        raise InputError("target: expected a run folder, host:/path or ssh://host/path")
    if text.startswith("ssh://"):
        return _ssh_url(text)
    local = Path(text).expanduser()
    if local.exists():
        return LocalFolder(local)
    if text.startswith("-") and ":" in text.split("/", 1)[0]:
        raise InputError(f"{text}: a host may not begin with '-' (ssh would read it as an option)")
    scp = _scp_target(text)
    return scp if scp is not None else LocalFolder(local)


def _scp_target(text: str) -> SshTarget | None:
    """`[user@]host:path` by scp's rule, a colon before any slash; None when it is not one."""
    m = _SCP.match(text)
    if not m or "/" in text.split(":", 1)[0]:
        return None
    host = m.group("host").strip("[]")
    if not host:
        return None
    path = m.group("path") or "."
    if path == "~" or path.startswith("~/"):
        path = path[2:] or "."  # remote commands start in the home folder
    return SshTarget(host, path, m.group("user"))
