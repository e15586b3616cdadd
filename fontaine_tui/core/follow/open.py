"""Open the follower of a run: a run folder here, or a CLI target here or over SSH."""

from __future__ import annotations

from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import RunSource
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.runfolder import LOG, check_regular


def run_source(
    folder: str | Path, spec: SourceSpec | None = None, poll_s: float | None = None
) -> RunSource:
    """The follower of a run folder on this host.

    It follows our own log, or, with a foreign `spec` (a launched [command] whose [source] is
    another trainer's), that trainer's files."""
    if spec is not None and spec.kind != "fontaine":
        from fontaine_tui.core.follow.foreign import ForeignRun

        return ForeignRun(folder, spec, poll_s=poll_s)
    return LocalRun(folder) if poll_s is None else LocalRun(folder, poll_s=poll_s)


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
