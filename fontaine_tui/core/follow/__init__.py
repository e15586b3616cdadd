"""The follow wing: byte transports for a run folder's files (local, SSH, replay).

They cut lines and know no log format or rule. `open.py`'s `open_source` picks one for a CLI
target, and its `run_source` follows a run folder on this host."""
