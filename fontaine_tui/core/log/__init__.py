"""The log wing: a run's log read into records and columns.

`lines.py` cuts bytes into complete lines.
`records.py` turns one line into a record (log schema v1).
`read.py` reads lines and files into `store.py`'s columns, with rotated segments and "the
later record for a step wins"."""

from __future__ import annotations

from fontaine_tui.core.log.lines import LINE_CAP, LineCutter
from fontaine_tui.core.log.read import ingest_lines, load_lines, load_log
from fontaine_tui.core.log.records import (
    Checkpoint,
    Event,
    Malformed,
    Meta,
    Probe,
    Record,
    TrainPoint,
    parse_line,
)
from fontaine_tui.core.log.store import RunStore

__all__ = [
    "LINE_CAP",
    "Checkpoint",
    "Event",
    "LineCutter",
    "Malformed",
    "Meta",
    "Probe",
    "Record",
    "RunStore",
    "TrainPoint",
    "ingest_lines",
    "load_lines",
    "load_log",
    "parse_line",
]
