"""A run followed from its folder (attach, replay).

This module finds the preset the run is read with (its frozen prereg.json, or --preset), and
gives its plain report to the end.
"""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import RunSource
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.runfolder import PREREG
from fontaine_tui.core.verdict.prereg import frozen_over, parse_prereg
from fontaine_tui.model.plain import PlainReport
from fontaine_tui.model.sampler import default_telemetry
from fontaine_tui.model.session import Session

T = TypeVar("T")

__all__ = ["file_of", "follow_plain", "guard", "resolve_preset"]


async def resolve_preset(source: RunSource, preset_arg: str | None, strict: bool = True) -> Preset:
    """The frozen preset in the run's prereg.json, else --preset, else InputError.

    With `strict` (the plain report), a --preset that differs from the frozen one beyond
    [platform] is refused. The console takes it and shows the difference as a warning.
    """
    raw = await source.read_bytes(PREREG)  # also proves the run folder is reachable
    given = load_preset(preset_arg) if preset_arg else None
    origin = file_of(source, PREREG)
    if raw is None:
        if given is None:
            raise InputError(
                f"{origin}: no such file: no {PREREG} (the run's frozen "
                "pre-registration) to read it by; name a preset with --preset P"
            )
        return given
    prereg = parse_prereg(raw, origin)
    if not strict:
        return given if given is not None else prereg.frozen_preset(origin)
    return frozen_over(prereg, given, str(preset_arg), origin)


def file_of(source: RunSource, name: str) -> str:
    """Where the source's `name` (prereg.json) is read from, for the messages that name it.

    It is a local path (beside a replayed log), or host:path over SSH.
    """
    if (log := getattr(source, "log", None)) is not None:  # a replayed log file
        return str(Path(log).parent / name)
    transport = getattr(source, "transport", source)
    target = getattr(transport, "target", None)
    if target is not None and hasattr(target, "destination"):  # over SSH
        port = f" (port {target.port})" if target.port else ""
        return f"{target.destination}:{posixpath.join(target.path, name)}{port}"
    folder = getattr(transport, "folder", None) or getattr(source, "folder", None)
    return str(Path(folder) / name) if folder is not None else f"{source.label}: {name}"


async def guard(source: RunSource, coro: Awaitable[T]) -> T:
    """Run a setup step; on bad input close the source first (no master left behind)."""
    try:
        return await coro
    except BaseException:
        await source.close()
        raise


def follow_plain(
    source: RunSource,
    preset: Preset,
    mode: str,
    until_end: bool = False,
    quiet_end: float | None = None,
    blind: bool = False,
) -> int:
    """Follow with --plain, the source's records, warnings and verdicts as lines.

    The lines go on until the source ends. With `until_end` they go on until the run's end,
    and with `quiet_end` until that many seconds pass without new data.
    """
    # the telemetry the rules read, as the console samples it: none for a replay
    sampler = None if mode == "replay" else default_telemetry(source)
    session = Session(source, preset, mode)
    session.blind_asked = blind  # the viewer's --blind (core/verdict/blind.py)
    report = PlainReport(session, sampler=sampler)
    foreign = isinstance(source, ForeignRun)
    return asyncio.run(
        report.follow(
            until_end=until_end,
            quiet_end=quiet_end,
            foreign=foreign,
            final_ends=not (isinstance(source, ForeignRun) and source.records_end),
        )
    )
