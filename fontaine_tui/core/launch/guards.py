"""A launch's guards run as one: the checks a launch on this host runs, in order.

They are pure checks over a preset, a telemetry snapshot and the run folder: this host's
capacity (core/launch/capacity.py), the run folder (folder_guard.py), what the launch starts
(start_guard.py) and the single-delta guard (delta_guard.py). Any "refuse" finding
(findings.py) stops the launch. A launch target runs them as this module names them."""

from __future__ import annotations

from pathlib import Path

from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.launch.capacity import check_gpus, check_ram
from fontaine_tui.core.launch.delta_guard import check_delta
from fontaine_tui.core.launch.findings import Finding, declared, delta_lines, refusal
from fontaine_tui.core.launch.folder_guard import check_folder
from fontaine_tui.core.launch.start_guard import check_command, check_engine, check_init
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.runfolder import RunFolder

__all__ = [
    "Finding",
    "check_all",
    "check_command",
    "check_delta",
    "check_engine",
    "check_folder",
    "check_gpus",
    "check_init",
    "check_ram",
    "declared",
    "delta_lines",
    "refusal",
]


def check_all(
    preset: Preset,
    folder: RunFolder,
    telemetry: TelemetrySnapshot,
    *,
    resume: bool = False,
    yes_ram: bool = False,
    running_pid: int | None = None,
    cwd: Path | None = None,
    declared: tuple[str, ...] = (),
) -> list[Finding]:
    """Run every guard.

    A [command] preset's trainer is the user's: the folder and the command are checked, not the
    engine's modules, GPU and RAM needs."""
    if preset.command is not None:
        return [
            *check_folder(preset, folder, resume, running_pid),
            *check_command(preset, folder, resume, cwd),
            *check_delta(preset, declared, resume),
        ]
    return [
        *check_folder(preset, folder, resume, running_pid),
        *check_engine(),
        *check_delta(preset, declared, resume),
        *check_init(preset),
        *check_gpus(preset, telemetry),
        check_ram(preset, telemetry, yes_ram),
    ]
