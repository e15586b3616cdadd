"""The follow wing: byte transports for a run folder's files (local, SSH, replay). They cut
lines and know no log format or rule; `open_source` picks one for a CLI target."""

from __future__ import annotations

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import Batch, RunSource
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.runfolder import LOG, check_regular

__all__ = ["Batch", "LocalRun", "RunSource", "open_source"]


def open_source(target: str, ssh_options: tuple[str, ...] = ()) -> RunSource:
    """A source from a CLI target string; raises InputError with one clear line."""
    from fontaine_tui.core.follow.target import LocalTarget, parse_target

    parsed = parse_target(target)
    if isinstance(parsed, LocalTarget):
        folder = parsed.folder
        if folder.is_file() and folder.name == LOG:
            folder = folder.parent
        if not folder.is_dir():
            raise InputError(f"{parsed.folder}: no such run folder")
        for name in (LOG, "engine.out.log"):  # a pipe or /dev/zero would be read for ever
            if (folder / name).exists():
                check_regular(folder / name)
        return LocalRun(folder)
    from fontaine_tui.core.follow.ssh import SshRun

    return SshRun(parsed, ssh_options=ssh_options)
