"""The bank wing: finished runs kept as comparators.

`store.py` keeps them by name and sha256, so a preset can compare a run with whole banked curves
rather than numbers typed in."""
