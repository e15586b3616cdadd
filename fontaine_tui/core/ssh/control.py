"""Where ssh's control sockets live: a short folder of this user's, private to it.

A unix socket's path holds at most SOCKET_PATH_MAX bytes, its closing NUL included (108 on
Linux, 104 on macOS and the BSDs). A shared connection's socket is `FOLDER/%C` (%C: 40 hex
digits), and ssh binds it first as that path with a dot and 16 characters more, then renames
it. And ssh reads the path given to `-o ControlPath=` as a line of its config: a space cuts it,
a quote or a backslash is read as quoting, `%` and `${` as its own tokens. So the folder is made
under the first of $TMPDIR (tempfile.gettempdir()), $XDG_RUNTIME_DIR and /tmp that is short
enough and holds none of those characters; when none is, one line says so (ssh would fail to
bind or to read its options, and each try of the first connection with it, until its bound ran
out).

Every shared connection takes its folder here: each SshConnection (connection.py) a new one
of its own (new_control_folder), the fleet one per user, kept between two polls
(shared_control_folder). It imports nothing of the connection's: connection.py says its
InputError as an SshError.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.text import literal

SOCKET_PATH_MAX = 108 if sys.platform.startswith("linux") else 104  # sun_path, NUL included
SOCKET_TAIL = len("/") + 40 + len(".") + 16  # "/%C" and the suffix ssh binds it with first
RANDOM_NAME = 8  # the characters mkdtemp adds to its prefix
# what ssh does not take as written in a ControlPath: white space ends it, quotes and
# backslashes quote, % starts a token (%C), $ an environment variable (${HOME})
READ_SPECIALLY = re.compile(r"[\s'\"\\%$]")


def candidates() -> list[str]:
    """The folders a control folder may be made under, in order: $TMPDIR, then the others."""
    found = [tempfile.gettempdir(), os.environ.get("XDG_RUNTIME_DIR", ""), "/tmp"]
    return [c for i, c in enumerate(found) if c and c not in found[:i]]


def fits(folder: Path | str) -> bool:
    """Whether a control socket's path in `folder` (as ssh binds it) fits a unix socket."""
    return len(os.fsencode(folder)) + SOCKET_TAIL < SOCKET_PATH_MAX


def control_parent(name_len: int, under: Sequence[str] | None = None) -> Path:
    """The first folder of `under` (default: candidates()) to make a control folder in.

    That is an absolute folder this user can write, short enough to hold a folder of
    `name_len` characters with a control socket in it, whose path ssh takes as written
    (READ_SPECIALLY). Raises InputError, one line naming the folders tried, when none is."""
    tried = []
    for place in candidates() if under is None else under:
        path = Path(place)
        odd = READ_SPECIALLY.search(place)
        if not fits(path / ("x" * name_len)):
            tried.append(f"{literal(place)} ({len(os.fsencode(place))} bytes)")
        elif odd is not None:
            tried.append(f"{literal(place)} (holds {odd.group()!r})")
        elif not (path.is_absolute() and path.is_dir() and os.access(path, os.W_OK | os.X_OK)):
            tried.append(f"{literal(place)} (not a folder this user can write)")
        else:
            return path
    raise InputError(
        "no folder for ssh's control socket (a unix socket's path holds "
        f"{SOCKET_PATH_MAX - 1} bytes, and ssh reads white space, quotes, backslashes, % and $ "
        f"in it as its own): tried {', '.join(tried) or 'none'}; set TMPDIR to a short folder "
        "of yours, such as /tmp"
    )


def new_control_folder(prefix: str = "fontaine-ssh-", under: Sequence[str] | None = None) -> Path:
    """A new private folder (mode 0700, this user's) for a control socket, with a short path.

    Raises InputError when none can be made (control_parent)."""
    parent = control_parent(len(prefix) + RANDOM_NAME, under)
    try:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    except OSError as exc:
        raise InputError(
            f"{parent}: cannot make a folder for ssh's control socket ({exc})"
        ) from None


def shared_control_folder(name: str, under: Sequence[str] | None = None) -> Path:
    """The folder `name` for control sockets kept from one command to the next, with a short path.

    It is this user's and private (a directory, not a link, owned by this user, mode 0700),
    made if it is missing; a `name` there that is not is left alone and a new folder is made
    beside it. Raises InputError when none can be made (control_parent)."""
    parent = control_parent(max(len(name), len(name) + 1 + RANDOM_NAME), under)
    path = parent / name
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = path.lstat()
        if (
            stat.S_ISDIR(st.st_mode)
            and st.st_uid == os.getuid()
            and stat.S_IMODE(st.st_mode) == 0o700
        ):
            return path
    except OSError:
        pass
    return new_control_folder(name + "-", [str(parent)])
