"""What of a run's reads a chart may draw: the evidence gate's view of its probes and reads.

core/run/evidence.py's `seen_reads` builds it from the store and the verdict series, and is
the one place that does: while the read is hidden (core/verdict/blind.py) it holds no probe and
no read, so a chart drawn from it shows neither, whatever its caller checked or forgot. The
charts (core/charts/probes.py, overlay.py) take it in place of the store's probes; the reads
contract (pyproject.toml, scripts/contracts.py) keeps them from reading the store's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fontaine_tui.core.log.records import Probe
from fontaine_tui.core.verdict.record import Verdict


@dataclass(frozen=True, slots=True)
class SeenReads:
    """A run's probes and its read at each, as a surface may draw them.

    `by_step`: step -> probe, read-only (not named `probes`, which the reads contract keeps
    for the store's own). `hidden`: the blind hides the read, and `by_step` and `verdicts` are
    empty."""

    by_step: Mapping[int, Probe]
    verdicts: tuple[Verdict, ...]
    hidden: bool

    def steps(self) -> list[int]:
        """The probe steps, in order."""
        return sorted(self.by_step)
