"""Chart specs as plain data: the loss, probes and overlay charts, and comparator envelopes."""
