"""The console's modes: each one's screen and the key that switches to it.

A new mode is one entry in MODES and one binding in MODE_BINDINGS; the app takes both.
"""

from __future__ import annotations

from textual.binding import Binding, BindingType
from textual.screen import Screen

from fontaine_tui.screens.config import ConfigScreen
from fontaine_tui.screens.metrics import MetricsScreen
from fontaine_tui.screens.monitor import MonitorScreen
from fontaine_tui.screens.overlay import OverlayScreen
from fontaine_tui.screens.probes import ProbesScreen
from fontaine_tui.screens.processes import ProcessesScreen
from fontaine_tui.screens.runs import RunsScreen
from fontaine_tui.screens.verdict import VerdictScreen

MODES: dict[str, type[Screen[object]]] = {
    "monitor": MonitorScreen,
    "probes": ProbesScreen,
    "verdict": VerdictScreen,
    "runs": RunsScreen,
    "metrics": MetricsScreen,
    "processes": ProcessesScreen,
    "overlay": OverlayScreen,
    "config": ConfigScreen,
}

MODE_BINDINGS: list[BindingType] = [
    Binding(
        "m",
        "switch_mode('monitor')",
        "Monitor",
        id="mode.monitor",
        tooltip="Progress, losses, telemetry, warnings, engine output",
    ),
    Binding(
        "p",
        "switch_mode('probes')",
        "Probes",
        id="mode.probes",
        tooltip="Delta chart against comparators and bounds; probes table",
    ),
    Binding(
        "v",
        "switch_mode('verdict')",
        "Verdict",
        id="mode.verdict",
        tooltip="Raw and scale-adjusted rules, combined verdict, ledger, review",
    ),
    Binding(
        "r",
        "switch_mode('runs')",
        "Runs",
        id="mode.runs",
        tooltip="Runs in the babysit registry; attach to one",
    ),
    Binding(
        "b",
        "switch_mode('metrics')",
        "Metrics",
        id="mode.metrics",
        tooltip="Every numeric field the run logs, a chart each, filtered by a regex",
    ),
    Binding(
        "t",
        "switch_mode('processes')",
        "Processes",
        id="mode.processes",
        tooltip="The run's process tree: roles, CPU, memory, GPU memory; signal, stack dump",
    ),
    Binding(
        "o",
        "switch_mode('overlay')",
        "Overlay",
        id="mode.overlay",
        show=False,  # in the footer of the runs mode, where runs are pinned
        tooltip="The runs pinned in the runs mode (space), overlaid: train losses and reads",
    ),
    Binding(
        "h",
        "switch_mode('config')",
        "Config",
        id="mode.config",
        show=False,  # the footer's keys are full; ? and the palette list it
        tooltip="The run's params, hyperparameters and environment, as its format recorded them",
    ),
]
