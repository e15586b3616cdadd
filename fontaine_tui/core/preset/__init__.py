"""The preset wing: a pre-registration as strictly validated TOML.

A preset is held to its rules, given a canonical form, and hashed. `sections.py` (the engine
sections' keys and choices), `rule.py` ([verdict]: the rule and its comparators' classes),
`comparators.py` (typed in or banked), `amendments.py`, `command.py`, `watching.py`
([babysit], [[notify]], [slurm]), `checks.py` (the checking primitives, the verdict classes
and the canonical form), `validate.py` (a document held to them), `record.py` (Preset,
Amendment), `find.py` (names looked up on disk, loading) and `draft.py` (a starting preset
from an inspection)."""
