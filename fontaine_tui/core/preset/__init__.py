"""The preset wing: a pre-registration as strictly validated TOML.

A preset is held to its rules, given a canonical form, and hashed. `sections.py` (the engine
sections' keys and choices), `rule.py` ([verdict]: the rule and its comparators' classes),
`comparators.py` (typed in or banked), `amendments.py`, `command.py`, `watching.py`
([babysit], [[notify]], [slurm]), `checks.py` (the checking primitives, the verdict classes
and the canonical form), `validate.py` (a document held to them), `record.py` (Preset,
Amendment), `find.py` (names looked up on disk, loading) and `draft.py` (a starting preset
from an inspection)."""

from __future__ import annotations

from fontaine_tui.core.preset.checks import LABELS, PresetError
from fontaine_tui.core.preset.find import list_presets, load_preset, preset_dirs, resolve
from fontaine_tui.core.preset.record import Amendment, Preset, gate_of
from fontaine_tui.core.preset.rule import Comparator, RuleShape, VerdictSpec
from fontaine_tui.core.preset.validate import preset_from_canonical

__all__ = [
    "LABELS",
    "Amendment",
    "Comparator",
    "Preset",
    "PresetError",
    "RuleShape",
    "VerdictSpec",
    "gate_of",
    "list_presets",
    "load_preset",
    "preset_dirs",
    "preset_from_canonical",
    "resolve",
]
