"""One run's record: its attempts, how each ended, its process, recovery, and the evidence gate."""
