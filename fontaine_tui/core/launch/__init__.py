"""The launch wing: starting the engine and watching it.

`launcher.py` (the engine subprocess), `exits.py` (its exit and cause), `makers.py` (who
makes the argv), `targets/` (where a run is launched: here, another host, Slurm),
`guards.py` (the checks before a launch), `registry.py` (the runs this machine launched),
`alerts.py` (the warning rules), `alert_book.py` (when each warning was first seen)."""

from __future__ import annotations

from fontaine_tui.core.launch.alert_book import WarningBook, evaluate
from fontaine_tui.core.launch.alerts import RunWarning
from fontaine_tui.core.launch.exits import ExitInfo
from fontaine_tui.core.launch.launcher import EngineProcess
from fontaine_tui.core.launch.registry import Entry, Registry, live_status

__all__ = [
    "EngineProcess",
    "Entry",
    "ExitInfo",
    "Registry",
    "RunWarning",
    "WarningBook",
    "evaluate",
    "live_status",
]
