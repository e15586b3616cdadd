"""Fontaine training engine: a small SigLIP + Qwen2 + flow-matching grasp policy trainer.

Never imports fontaine_tui or textual; the console talks to it through argv and the
files of the run folder (train_log.jsonl, checkpoints/).
"""

import os

# Before torch loads OpenMP: spinning OpenMP threads collapse (10-50x slower steps) as soon
# as anything else wants a core (DataLoader workers, the console, other jobs); passive
# waiting costs a few percent on an idle machine.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
