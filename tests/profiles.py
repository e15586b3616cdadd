"""How many examples each property test draws: a share in the suite, every one in `full`.

The suite (`bash scripts/test`, CI) runs the `suite` profile: each property test draws a
quarter of the examples it names (at least `FLOOR`), and a test that names none draws
`examples(100)`. `bash scripts/test --profile full` (or `FONTAINE_TEST_PROFILE=full`) draws
every example named, Hypothesis's own 100 where none is. The assertions are the same in both;
each suite run draws its examples afresh (a test with `derandomize=True` draws the same
ones each time), so the runs together go where one full run goes.

    @settings(max_examples=examples(1500))
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILES = ("suite", "full")
PROFILE = os.environ.get("FONTAINE_TEST_PROFILE") or "suite"
if PROFILE not in PROFILES:
    raise ValueError(f"FONTAINE_TEST_PROFILE={PROFILE!r}: one of {', '.join(PROFILES)}")
# the suite draws one example in SHARE of those a test names, and never fewer than FLOOR
SHARE = 4
FLOOR = 5


def examples(named: int) -> int:
    """The examples a property test that names `named` draws under this run's profile."""
    if PROFILE == "full":
        return named
    return min(named, max(FLOOR, named // SHARE))


settings.register_profile("suite", max_examples=examples(100))
settings.register_profile("full", max_examples=100)
settings.load_profile(PROFILE)
