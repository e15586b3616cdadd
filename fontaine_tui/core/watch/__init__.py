"""Watching a run: the warning rules, the stall diagnosis, the trainer's alerts, babysitting."""
