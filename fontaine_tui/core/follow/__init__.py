"""The follow wing: byte transports for a run folder's files (local, SSH, replay).

They cut lines and know no rule; a log format is met only where another trainer's bytes go
through its decoder (foreign.py).
"""
