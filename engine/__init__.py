"""Fontaine training engine: a small SigLIP + Qwen2 + flow-matching grasp policy trainer.

Never imports fontaine_tui or textual; the console talks to it through argv and the
files of the run folder (train_log.jsonl, checkpoints/).
"""

__version__ = "0.1.0"
