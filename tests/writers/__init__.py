"""Small writers of foreign runs, each a real library writing a tiny run while a test follows
it: `python -m tests.writers.KIND OUT` (tests/commands/test_any_trainer_live.py)."""
