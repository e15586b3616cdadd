"""Attach targets: a local run folder, `[user@]host:/path`, or `ssh://[user@]host[:port]/path`."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.text import literal

_SCP = re.compile(
    r"^(?:(?P<user>[^@/:\s]+)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^@/:\s\[\]]+):(?P<path>.*)$"
)


def check_destination(text: str, what: str = "host") -> str:
    """`text` as an ssh destination: `[user@]host`, or the URI form `ssh://[user@]host[:port]`
    a registry keeps. Its user part and host part may not be empty, begin with '-' (ssh would
    read it as an option: -oProxyCommand=...) or hold white space or a control character.
    Every ssh destination (launch --on, attach, stop, runs) passes here; InputError naming
    `what` otherwise."""
    rest = text[len("ssh://") :] if text.startswith("ssh://") else text
    user, at, host = rest.rpartition("@")
    for value in (user, host) if at else (host,):
        if (
            not value
            or value.startswith("-")
            or any(c.isspace() or not c.isprintable() for c in value)
        ):
            raise InputError(
                f"{what} {literal(text)}: expected a host name or ssh alias "
                "([user@]host: the user and the host may not be empty, may not "
                "begin with '-', and hold no white space or control character)"
            )
    return text


@dataclass(frozen=True, slots=True)
class LocalTarget:
    folder: Path

    @property
    def label(self) -> str:
        return f"local {self.folder}"


@dataclass(frozen=True, slots=True)
class SshTarget:
    host: str
    path: str
    user: str | None = None
    port: int | None = None

    def __post_init__(self) -> None:
        check_destination(self.destination)  # a host or user ssh would read as an option

    @property
    def destination(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host

    @property
    def registry_host(self) -> str:
        """How the registry names this host: the destination as ssh takes it (`user@host`,
        an alias); with a port, the URI form OpenSSH also takes (`ssh://user@host:2222`), so
        the fleet and a later attach reach it on the same port."""
        if not self.port:
            return self.destination
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = f"{self.user}@" if self.user else ""
        return f"ssh://{user}{host}:{self.port}"

    @property
    def label(self) -> str:
        port = f" port {self.port}" if self.port else ""
        return f"ssh {self.destination}:{self.path}{port}"

    def hand_command(self, ssh_options: tuple[str, ...] = ()) -> str:
        """The ssh command a user can paste to check the connection and the folder by hand."""
        argv = ["ssh", *ssh_options]
        if self.port:
            argv += ["-p", str(self.port)]
        argv += ["--", self.destination, "ls -la " + shlex.quote(self.path)]
        return shlex.join(argv)


Target = LocalTarget | SshTarget


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


def parse_target(text: str) -> Target:
    """Parse a CLI target. An existing local path always wins over the host:path reading."""
    if not text or not text.strip():
        raise InputError("target: expected a run folder, host:/path or ssh://host/path")
    if text.startswith("ssh://"):
        return _ssh_url(text)
    local = Path(text).expanduser()
    if local.exists():
        return LocalTarget(local)
    if text.startswith("-") and ":" in text.split("/", 1)[0]:
        raise InputError(f"{text}: a host may not begin with '-' (ssh would read it as an option)")
    m = _SCP.match(text)
    # scp's rule: a colon before any slash means host:path
    if m and "/" not in text.split(":", 1)[0]:
        host = m.group("host").strip("[]")
        path = m.group("path") or "."
        if path == "~" or path.startswith("~/"):
            path = path[2:] or "."  # remote commands start in the home folder
        if host:
            return SshTarget(host, path, m.group("user"))
    return LocalTarget(local)
