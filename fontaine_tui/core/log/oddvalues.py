"""The eval values another trainer's log held that are not numbers, and how they are said.

A JSONL boolean or string at an eval key (formats/grouper.py) is kept with what it is, as the
probe's own `not_numbers`, and a rule reading one is UNDECIDABLE at its step. Which key held one,
at which step and what it was is therefore a probe's value: a blinded run's hidden read names its
class by it. The decoders count them here rather than in their notices' words, the store keeps
the count (`RunStore.odd_values`), and a surface gets the words from the evidence gate
(core/run/evidence.py's `seen_odd_values`), counted without key, step or value while the read
is hidden, as the conflicting probes are.
"""

from __future__ import annotations

from dataclasses import dataclass

KEPT = 20  # the first values kept to name (the words name five)
SHOWN = 5


@dataclass(frozen=True, slots=True)
class OddValues:
    """How many eval values were not numbers, and the first KEPT: (key, step, what it is)."""

    count: int = 0
    first: tuple[tuple[str, int, str], ...] = ()

    def __add__(self, other: OddValues) -> OddValues:
        return OddValues(self.count + other.count, (self.first + other.first)[:KEPT])

    def words(self, hidden: bool) -> str:
        """Them in one line ("" when none); while `hidden`, counted and nothing named."""
        if not self.count:
            return ""
        if hidden:
            return (
                f"{self.count} eval value(s) not a number: keys, steps and values "
                "hidden (blinded) until the endpoint"
            )
        named = "; ".join(f"{key} at step {step}: {what}" for key, step, what in self.first[:SHOWN])
        return (
            f"{self.count} eval value(s) not a number, kept as what they are (a rule reading "
            f"one is UNDECIDABLE there): {named}{'; ...' if self.count > SHOWN else ''}"
        )


NONE = OddValues()
