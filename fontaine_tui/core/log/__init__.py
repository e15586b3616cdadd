"""The log wing: a run's log read into records and columns."""
