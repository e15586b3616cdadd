"""The preset as a record: Preset and Amendment.

Preset holds every section checked, its canonical form and sha256. Amendment is a declared
change to how the run is read."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.log.formats.spec import read_at
from fontaine_tui.core.preset.checks import Scalar
from fontaine_tui.core.preset.command import CommandSpec
from fontaine_tui.core.preset.recovery import RecoverySpec
from fontaine_tui.core.preset.rule import Comparator, VerdictSpec
from fontaine_tui.core.preset.watching import NotifySpec


@dataclass(frozen=True, slots=True)
class Amendment:
    """A declared change to how the run is read. `declared_after_step` is the last step seen."""

    id: int
    kind: str
    from_step: int
    comparator: str
    factor: float
    declared_after_step: int
    declared_before_step: int
    text: str
    declared_at: str = ""
    source: str = "preset"
    to_step: int = 0  # kind "extend": the endpoint it moves the read to
    # kind "delta": a key that differs from the banked comparator, declared at launch
    # (key, ours, theirs as JSON text); it changes no read
    delta: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    path: str
    run: Mapping[str, Scalar]
    recipe: Mapping[str, Scalar]
    platform: Mapping[str, Scalar]
    verdict: VerdictSpec
    comparators: Mapping[str, Comparator]
    amendments: tuple[Amendment, ...]
    gates: Mapping[str, float | str | bool]
    interpretation: Mapping[str, str]  # by class (HEALTHY, ...), whatever the labels
    canonical: Mapping[str, object]
    sha256: str
    labels: Mapping[str, str] = field(default_factory=dict)  # class -> the preset's word
    source: SourceSpec | None = None  # [source]: a run trained elsewhere, and how to read it
    babysit: Mapping[str, Scalar] = field(default_factory=dict)  # [babysit] (watching.py)
    notify: tuple[NotifySpec, ...] = ()  # [[notify]]: never in the canonical form
    slurm: Mapping[str, Scalar] = field(default_factory=dict)  # [slurm] (watching.py)
    # the probe cadence the preset states and its key ([recipe] or [source] eval_every);
    # None: a [source] preset that states none (its recipe's eval_every is only a default)
    stated_every: tuple[int, str] | None = None
    command: CommandSpec | None = None  # [command]: the user's own trainer, launched
    recovery: RecoverySpec = RecoverySpec()  # [recovery]: the restarts it allows (recovery.py)

    @property
    def foreign(self) -> bool:
        """Whether the preset reads a run another trainer writes ([source] of a foreign kind).

        Such a preset has no engine recipe, and its run is read through [source] (launched by its
        [command], or trained elsewhere)."""
        return self.source is not None and self.source.kind != "fontaine"

    @property
    def launchable(self) -> bool:
        """`launch` can start its run: the engine's [recipe], or the user's [command]."""
        return self.command is not None or not self.foreign

    @property
    def stops_on_lock(self) -> bool:
        """Whether [gates] stop_on_lock asks for a stop once the decision locks (or at the gate)."""
        return self.gates.get("stop_on_lock") is True

    def label(self, cls: str) -> str:
        """The preset's word for a verdict class (the class itself by default)."""
        return self.labels.get(cls, cls)

    @property
    def run_name(self) -> str:
        return str(self.run["name"])

    def source_at(self, path: str) -> Preset:
        """This preset reading its [source] at `path`, "" keeping its own.

        That is the path a launch froze ({output_dir} filled in: spec.py's frozen_path); the
        canonical form and sha256 stay the preset's as written."""
        if self.source is None or not path:
            return self
        return replace(self, source=read_at(self.source, path))

    @property
    def reference(self) -> Comparator | None:
        """The comparator the drift bound is a fraction of, if the preset names one."""
        return self.comparators.get(self.verdict.reference) if self.verdict.reference else None


def gate_of(gates: Mapping[str, object], key: str) -> float | None:
    """A [gates] number, or None where it is not a finite one (an unset inf/nan default)."""
    value = gates.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def launchable(preset: Preset) -> Preset:
    """The preset, if `launch` can start its run; one line (InputError) saying why not."""
    if not preset.launchable and preset.source is not None:
        raise InputError(
            f"{preset.path}: source.kind: {preset.source.kind!r}: this preset reads "
            "a run another trainer writes; it cannot be launched (attach, replay, "
            "verdict or bank the run's folder with it)"
        )
    return preset
