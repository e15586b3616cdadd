"""Logs from other trainers, each format a module behind one decoder interface (base.py).

Bytes (or a store's rows) go in and the log wing's records come out, so the followers stay
transports that know no format and the rules read a foreign run as they read ours. Each format
is one record in registry.py's `FORMATS`, and every reader of a log asks that table.
"""
