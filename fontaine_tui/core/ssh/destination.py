"""An SSH destination and a folder there: what every SSH command of the tool is addressed to.

`check_destination` holds every destination a user gives (launch --on, attach, stop, runs) to
what ssh reads as a host, never as an option; `SshTarget` is a folder on such a host.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.text import literal


def check_destination(text: str, what: str = "host") -> str:
    """`text` checked as an ssh destination.

    The forms are `[user@]host`, or the URI form `ssh://[user@]host[:port]` a registry keeps.
    Its user part and host part may not be empty, begin with '-' (ssh would read it as an
    option: -oProxyCommand=...) or hold white space or a control character. Every ssh
    destination (launch --on, attach, stop, runs) passes here. Otherwise an InputError names
    `what`."""
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
class SshTarget:
    """A folder on another host: `[user@]host`, its port if not the default, the path."""

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
        """How the registry names this host.

        It is the destination as ssh takes it (`user@host`, an alias). With a port it is the
        URI form OpenSSH also takes (`ssh://user@host:2222`), so the fleet and a later
        attach reach it on the same port."""
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
