"""What `doctor` shows: everything before a start on this host, with nothing written."""

from __future__ import annotations

from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.launch import guards
from fontaine_tui.core.launch.makers import maker_for
from fontaine_tui.core.launch.targets.base import Request
from fontaine_tui.core.launch.targets.local import LocalTarget
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.record import Preset, launchable
from fontaine_tui.core.run.endpoint import resume_endpoint
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Registry


def prepare(
    preset_name: str,
    output_dir: str | None,
    resume: bool,
    yes_ram: bool,
    registry: Registry | None = None,
) -> tuple[Preset, RunFolder, list[guards.Finding], list[str], Registry, TelemetrySnapshot | None]:
    """Everything before a start on this host, with nothing written.

    Returns (preset, folder, findings, argv, registry, telemetry). `doctor` shows it.
    """
    preset = launchable(load_preset(preset_name))
    target = LocalTarget()
    req = Request(preset, registry or Registry(), output_dir, resume, yes_ram)
    folder = target.folder(req)
    findings = target.check(req, folder)
    endpoint = resume_endpoint(folder) if resume and folder.prereg.exists() else None
    argv = maker_for(preset).argv(preset, folder.root, resume, endpoint)
    return preset, folder, findings, argv, req.registry, target.telemetry
