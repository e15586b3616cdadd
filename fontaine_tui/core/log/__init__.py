"""The log wing: a run's log read into records and columns.

`lines.py` cuts bytes into complete lines.
`records.py` turns one line into a record (log schema v1).
`read.py` reads lines and files into `store.py`'s columns, with rotated segments and "the
later record for a step wins"."""
