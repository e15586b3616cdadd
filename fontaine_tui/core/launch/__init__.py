"""The launch wing: starting the engine and watching it.

`launcher.py` (the engine subprocess), `exits.py` (its exit and cause), `makers.py` (who
makes the argv), `targets/` (where a run is launched: here, another host, Slurm),
`guards.py` (the checks before a launch), `registry.py` (the runs this machine launched),
`alerts.py` (the warning rules), `alert_book.py` (when each warning was first seen)."""
