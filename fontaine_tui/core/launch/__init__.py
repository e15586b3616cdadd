"""The launch wing: starting a run and watching it."""
