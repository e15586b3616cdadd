"""A run's telemetry history, read from its run folder through the run's source.

The same for a folder here (replay, attach) and one on another host (attach over SSH: the
source reads the file there). The sidecars are telemetry.jsonl (a run launched on one host)
and telemetry.node0.jsonl, node1 ... (one per Slurm node), each after its thinned `.1`.
"""

from __future__ import annotations

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import RunSource
from fontaine_tui.core.host.history import History, read_history
from fontaine_tui.core.runfolder import TELEMETRY, node_telemetry

MAX_NODES = 256  # node files looked for, node0 up, until one is missing


async def _pair(source: RunSource, name: str) -> tuple[bytes | None, bytes | None]:
    return await source.read_bytes(name + ".1"), await source.read_bytes(name)


async def load_history(source: RunSource) -> tuple[History, str]:
    """The run's history and one line on what could not be read ("" when all was)."""
    files: list[bytes | None] = []
    try:
        files += await _pair(source, TELEMETRY)
        for node in range(MAX_NODES):
            older, newest = await _pair(source, node_telemetry(node))
            if older is None and newest is None:
                break
            files += (older, newest)
    except InputError as exc:  # a sidecar too big or unreadable: said, the rest still drawn
        history = read_history(files)
        return history, f"telemetry history: {exc}"
    history = read_history(files)
    return history, history.notice("telemetry history")
