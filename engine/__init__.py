"""Fontaine training engine: a small SigLIP + Qwen2 + flow-matching grasp policy trainer.

Never imports fontaine_tui or textual; the console talks to it through argv and the
files of the run folder (train_log.jsonl, checkpoints/). It imports its own modules
relatively and installs as the package `fontaine_engine` (setup.py maps this folder onto the
name, so no other project's `engine` is shadowed); a checkout reaches it under that name
through fontaine_engine/__init__.py. Its reference is engine/README.md.
"""

import os

# Before torch loads OpenMP: spinning OpenMP threads collapse (10-50x slower steps) as soon
# as anything else wants a core (DataLoader workers, the console, other jobs); passive
# waiting costs a few percent on an idle machine.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
