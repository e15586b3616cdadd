"""The host wing: what this machine has.

`telemetry.py`: one snapshot of the GPUs, the RAM and the engine's processes.
`nvml.py`: NVIDIA GPUs through NVML.
`memory.py`: cgroup-aware RAM, and what one process holds (its PSS)."""
