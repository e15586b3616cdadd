"""The console model, no Textual: a run's state and what the screens and commands show of it."""
