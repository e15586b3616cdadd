"""Open the follower of a run: a run folder here, or a CLI target here or over SSH."""

from __future__ import annotations

from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import RunSource
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.log.formats.locate import chosen_source, frozen_source
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.runfolder import LOG, PREREG, check_regular
from fontaine_tui.core.ssh.destination import SshTarget


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
    from fontaine_tui.core.follow.target import LocalFolder, parse_follow_target

    parsed = parse_follow_target(target)
    if isinstance(parsed, LocalFolder):
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


async def remote_source(
    target: SshTarget, given: SourceSpec | None, ssh_options: tuple[str, ...] = ()
) -> RunSource:
    """The follower of a run folder on another host, read as it would be here.

    That is `chosen_source`'s choice (locate.py), as a local attach makes it: a named preset's
    foreign [source], else the one the folder's prereg.json froze (a launched [command]'s,
    read over the connection), else our own log. An error reaching the host closes the
    connection and is raised (one line, as the SshRun words it)."""
    from fontaine_tui.core.follow.foreign import ForeignRun
    from fontaine_tui.core.follow.ssh import SshRun

    ssh = SshRun(target, ssh_options=ssh_options)
    try:
        raw = await ssh.read_bytes(PREREG)  # None: no prereg.json (resolve_preset says so)
    except BaseException:
        await ssh.close()
        raise
    where = f"{target.destination}:{target.path}/{PREREG}"
    spec = chosen_source(given, frozen_source(raw, where) if raw is not None else None)
    return ssh if spec is None else ForeignRun(target.path, spec, transport=ssh)
