"""Who makes a launched run's command: its argv, environment, folder and provenance.

A maker gives the argv, its environment, its working folder and what prereg.json records of
it (its provenance).

Two makers: the engine's, from [recipe] and [platform] (engine_argv.build_argv, and
`python -m engine identity` for the provenance), and a user's own [command]
(core/launch/command.py). A target (core/launch/targets/) starts whatever argv a maker gives
it, so a new kind of command is one maker here, not a new launch path.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from fontaine_tui.core.launch.command import (
    command_argv,
    command_cwd,
    command_env,
    command_provenance,
)
from fontaine_tui.core.launch.engine_argv import build_argv, engine_identity
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.endpoint import Endpoint


class ArgvMaker(Protocol):
    """What to start for a preset in a run folder."""

    def argv(
        self, preset: Preset, folder: Path, resume: bool, endpoint: Endpoint | None = None
    ) -> list[str]:
        """The command line; `endpoint`: a resume's endpoint in force (core/launch/endpoint)."""
        ...

    def env(self, preset: Preset, folder: Path) -> Mapping[str, str] | None:
        """The child's environment; None: this process's (less its secrets, childenv)."""
        ...

    def cwd(self, preset: Preset, folder: Path) -> Path | None:
        """The child's working folder; None: this process's."""
        ...

    def provenance(self, preset: Preset, folder: Path, argv: list[str]) -> dict[str, object]:
        """What prereg.json records of what runs (the target adds where it runs)."""
        ...


class EngineMaker:
    """The engine's command, built 1:1 from [recipe] and [platform].

    Its identity (code and data) is asked of the engine itself."""

    def argv(
        self, preset: Preset, folder: Path, resume: bool, endpoint: Endpoint | None = None
    ) -> list[str]:
        extend_to = endpoint.in_force if endpoint is not None else 0
        return build_argv(preset, folder, resume, extend_to=extend_to)

    def env(self, preset: Preset, folder: Path) -> Mapping[str, str] | None:
        return None

    def cwd(self, preset: Preset, folder: Path) -> Path | None:
        return None

    def provenance(self, preset: Preset, folder: Path, argv: list[str]) -> dict[str, object]:
        return engine_identity(argv)


class CommandMaker:
    """A user's own training command ([command]).

    Its argv has {output_dir} filled in and runs in its cwd with its frozen env. Its provenance
    is the command, the sha256 of the files it names and the git state of the code
    (core/launch/command.py)."""

    def __init__(self, launch_cwd: Path | None = None) -> None:
        self.launch_cwd = launch_cwd if launch_cwd is not None else Path.cwd()

    def argv(
        self, preset: Preset, folder: Path, resume: bool, endpoint: Endpoint | None = None
    ) -> list[str]:
        return command_argv(preset, folder, resume, self.cwd(preset, folder), endpoint)

    def env(self, preset: Preset, folder: Path) -> Mapping[str, str] | None:
        return command_env(preset, folder)

    def cwd(self, preset: Preset, folder: Path) -> Path:
        return command_cwd(preset, self.launch_cwd)

    def provenance(self, preset: Preset, folder: Path, argv: list[str]) -> dict[str, object]:
        return command_provenance(preset, argv, self.cwd(preset, folder), folder)


def maker_for(preset: Preset) -> ArgvMaker:
    """The preset's maker: the engine's, unless it names a [command] of its own."""
    return CommandMaker() if preset.command is not None else EngineMaker()
