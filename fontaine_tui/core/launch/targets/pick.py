"""The table of launch target kinds, from which `--on` picks a target and the registry a handle.

A kind is one module keeping base.py's `TargetKind`: its `target_for` gives the target an
`--on` names, and its `reopen_entry` a registered run's handle again. A launch records its
target's kind in the registry entry, and reopening picks the module by it. A new target is its
module and its line in `KINDS`."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from fontaine_tui.core.errors import InputError

if TYPE_CHECKING:
    from fontaine_tui.core.launch.targets.base import Handle, Target, TargetKind
    from fontaine_tui.core.run.attempts import Attempt
    from fontaine_tui.core.runs.registry import Entry

# kind -> its module, imported once picked. `--on` asks them in this order: ssh last, as it
# takes any other --on for a host
KINDS: dict[str, str] = {
    "local": "fontaine_tui.core.launch.targets.local",  # no --on: this host
    "slurm": "fontaine_tui.core.launch.targets.slurm",  # slurm:PARTITION
    "ssh": "fontaine_tui.core.launch.targets.ssh",  # HOST, slurm:PARTITION@LOGIN
}
THERE = "ssh"  # the kind that holds a run through its own host's fontaine-tui


def kind_module(kind: str) -> TargetKind:
    """The module of a target kind; InputError for a kind this fontaine-tui does not know."""
    if kind not in KINDS:
        raise InputError(
            f"target kind {kind!r}: not one this fontaine-tui knows ({', '.join(KINDS)})"
        )
    return cast("TargetKind", importlib.import_module(KINDS[kind]))


def pick_target(on: str | None, ssh_options: Sequence[str] = ()) -> Target:
    """--on: none (this host), HOST, slurm:PARTITION or slurm:PARTITION@LOGIN."""
    for kind in KINDS:
        target = kind_module(kind).target_for(on or None, ssh_options)
        if target is not None:
            return target
    raise InputError(f"--on {on!r}: no launch target takes it")


def kind_of(entry: Entry, this_host: str) -> str:
    """The kind that holds a registered run again from `this_host`.

    A run registered under another host is held through that host's fontaine-tui: its
    processes are never looked for here. On this host it is the kind its launch recorded, but
    never a hop over SSH to this very host (a run `launch --on` sent here is this host's own).
    An entry written before kinds were recorded, or attached, is read by its fields as then."""
    if entry.host != this_host:
        return THERE
    if entry.target and entry.target != THERE:
        return entry.target
    return "slurm" if entry.job else "local"


def reopen(
    entry: Entry,
    this_host: str,
    ssh_options: Sequence[str] = (),
    poll_s: float | None = None,
) -> tuple[Handle, Attempt | None]:
    """A registered run's handle, and the open attempt it was found by (None: none vouched).

    The module of the entry's kind (`kind_of`) finds it: on this host by its open attempt (its
    offsets and OOM-kill counters) where the registry agrees on its process, else by the
    registry's pid or Slurm job; on another host over SSH (InputError for a run only attached
    there)."""
    return kind_module(kind_of(entry, this_host)).reopen_entry(entry, ssh_options, poll_s)


def reopen_there(
    entry: Entry, ssh_options: Sequence[str] = (), poll_s: float | None = None
) -> Handle:
    """A run this host launched on another (the entry's `host`), held again over SSH."""
    return kind_module(THERE).reopen_entry(entry, ssh_options, poll_s)[0]
