"""Who makes a launched run's command line: the argv, its environment, its working folder
and what prereg.json records of it (its provenance).

Two makers: the engine's, from [recipe] and [platform] (launcher.build_argv, and `python -m
engine identity` for the provenance), and a user's own [command] (core/launch/command.py).
A target (core/launch/targets/) starts whatever argv a maker gives it, so a new kind of
command is one maker here, not a new launch path.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from fontaine_tui.core.launch.launcher import build_argv, engine_identity
from fontaine_tui.core.verdict.presets import Preset


class ArgvMaker(Protocol):
    """What to start for a preset in a run folder."""

    def argv(self, preset: Preset, folder: Path, resume: bool) -> list[str]: ...

    def env(self, preset: Preset, folder: Path) -> Mapping[str, str] | None:
        """The child's environment; None: this process's (less its secrets, childenv)."""
        ...

    def cwd(self, preset: Preset, folder: Path) -> Path | None:
        """The child's working folder; None: this process's."""
        ...

    def provenance(self, preset: Preset, folder: Path, argv: list[str]
                   ) -> dict[str, object]:
        """What prereg.json records of what runs (the target adds where it runs)."""
        ...


class EngineMaker:
    """The engine's command, 1:1 from [recipe] and [platform]; its identity (code and data)
    asked of the engine itself."""

    def argv(self, preset: Preset, folder: Path, resume: bool) -> list[str]:
        return build_argv(preset, folder, resume)

    def env(self, preset: Preset, folder: Path) -> Mapping[str, str] | None:
        return None

    def cwd(self, preset: Preset, folder: Path) -> Path | None:
        return None

    def provenance(self, preset: Preset, folder: Path, argv: list[str]
                   ) -> dict[str, object]:
        return engine_identity(argv)


def maker_for(preset: Preset) -> ArgvMaker:
    """The preset's maker: the engine's, unless it names a [command] of its own."""
    return EngineMaker()
