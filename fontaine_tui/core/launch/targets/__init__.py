"""Launch targets, one module each.

local.py (this host), ssh.py (another host's fontaine-tui over SSH), slurm.py (a Slurm
partition); base.py holds what they share, and pick.py picks the one `--on` names."""
