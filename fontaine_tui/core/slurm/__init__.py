"""Slurm: the batch job script, the client commands, and a run's job as a handle."""
