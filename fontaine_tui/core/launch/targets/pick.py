"""Pick the launch target that `--on` names."""

from __future__ import annotations

from collections.abc import Sequence

from fontaine_tui.core.launch.targets.base import Target


def pick_target(on: str | None, ssh_options: Sequence[str] = ()) -> Target:
    """--on: none (this host), HOST, slurm:PARTITION or slurm:PARTITION@LOGIN."""
    if not on:
        from fontaine_tui.core.launch.targets.local import LocalTarget

        return LocalTarget()
    from fontaine_tui.core.launch.slurm import parse_target

    parsed = parse_target(on)
    if parsed is not None and parsed.host is None:
        from fontaine_tui.core.launch.targets.slurm import SlurmTarget

        return SlurmTarget(parsed.partition)
    from fontaine_tui.core.launch.targets.ssh import SshHostTarget

    if parsed is None:
        return SshHostTarget(on, on, None, ssh_options)
    assert parsed.host is not None
    return SshHostTarget(parsed.host, on, parsed.partition, ssh_options)
