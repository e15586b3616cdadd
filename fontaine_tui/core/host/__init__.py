"""The host wing: what this machine has and what runs on it, sampled and recorded."""
