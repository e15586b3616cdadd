"""The config mode's read: the shown run's config as its format recorded it (config.py)."""

from __future__ import annotations

from pathlib import Path

from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.follow.replay import ForeignReplay
from fontaine_tui.core.log.formats.config import RunConfig
from fontaine_tui.core.log.formats.registry import find
from fontaine_tui.core.log.formats.spec import SourceSpec
from fontaine_tui.model.session import Session


def run_config(session: Session) -> RunConfig:
    """The config of the run `session` shows, or a RunConfig whose note says why there is none.

    A run on another host is read there: its config is not fetched over SSH."""
    source = session.source
    spec = session.preset.source or SourceSpec("fontaine")
    if isinstance(source, ForeignRun | ForeignReplay):
        spec = source.spec
    folder = session.folder
    if folder is None:
        return RunConfig("", (), f"{source.label}: a run on another host; read its config there")
    if isinstance(source, ForeignRun | ForeignReplay) and source.folder.is_dir():
        folder = source.folder
    fmt = find(spec.kind)
    if fmt is None or fmt.config is None:
        return RunConfig("", (), f"a {spec.kind} run records no config this console reads")
    return fmt.config(Path(folder), spec)
