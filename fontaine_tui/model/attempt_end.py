"""What every watcher does at an attempt's end: its record, and the whole log re-read.

`launch --plain` (model/plain.py) and `babysit` (model/watchman.py) end an attempt the same
way: attempts.jsonl gets its end, an incident or a gate stop is posted, and the final verdict
reads the whole log again, ours or the [source] trainer's.
"""

from __future__ import annotations

from collections.abc import Callable

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run import attempts
from fontaine_tui.core.run.exits import GATE_STOPS, ExitInfo
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.model.babysitter import Babysitter


def final_store(
    folder: RunFolder, preset: Preset, say: Callable[[str], None]
) -> tuple[RunStore, str]:
    """The whole log at the end, re-read, and what it was read from.

    The log is ours with its rotated segments, or the [source] trainer's (a launched
    [command]). A log that cannot be read is said, and reads empty.
    """
    if preset.foreign and preset.source is not None:
        try:
            loaded = load_source(folder.root, preset.source)
        except InputError as exc:
            say(f"warn: {exc}")
            return RunStore(), str(folder.root)
        return loaded.store, loaded.label
    return (
        load_log(folder.log, history=True) if folder.log.exists() else RunStore(),
        str(folder.log),
    )


def end_attempt(
    folder: RunFolder,
    attempt: int | None,
    info: ExitInfo,
    babysitter: Babysitter | None,
    say: Callable[[str], None],
) -> None:
    """Record the attempt's end in attempts.jsonl.

    An attempt that did not finish (nor was stopped) is an incident, posted with its cause.
    A stop on the preset's stop_on_lock gate is posted too, with its cause.
    """
    if attempt is None:
        return
    try:
        attempts.end(folder, attempt, info)
    except OSError as exc:
        say(f"warn: {folder.attempts}: attempt end not recorded ({exc.strerror or exc})")
    if babysitter is None:
        return
    cause = info.cause
    said, detail = babysitter.exit_words(info)  # blinded as the posts are
    if cause in GATE_STOPS:
        babysitter.gate_stopped(attempt, cause, said, info.last_step)
    elif cause not in ("finished", "stopped"):
        babysitter.incident(attempt, cause, f"{said}\n{detail}".strip(), info.last_step)
