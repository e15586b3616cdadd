"""A run's telemetry history, read from its run folder through the run's source.

The same for a folder here (replay, attach) and one on another host (attach over SSH: the
source reads the file there). The sidecars are telemetry.jsonl (a run launched on one host)
and telemetry.node0.jsonl, node1 ... (one per Slurm node), each after its thinned `.1`. Each
file is parsed only where it grew since the last read, in a thread, off the event loop.
"""

from __future__ import annotations

import asyncio

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import RunSource
from fontaine_tui.core.follow.ssh import SshRun
from fontaine_tui.core.host.history import FileRead, History, merged
from fontaine_tui.core.runfolder import TELEMETRY, node_telemetry

MAX_NODES = 256  # node files looked for, node0 up, until one is missing
LOCAL_S = 10.0  # a folder here is read again as often as the recorder writes
REMOTE_S = 60.0  # a folder over SSH: each read moves the whole files over the link


def every_s(source: RunSource) -> float:
    """How often the history of `source`'s run is read again."""
    return REMOTE_S if isinstance(getattr(source, "transport", source), SshRun) else LOCAL_S


class HistoryReader:
    """A run's sidecars, read whole through its source, parsed where they grew."""

    def __init__(self, source: RunSource) -> None:
        self.source = source
        self._reads: dict[str, FileRead] = {}

    async def _files(self) -> list[tuple[str, bytes]]:
        got: list[tuple[str, bytes]] = []
        for node in (None, *range(MAX_NODES)):
            name = TELEMETRY if node is None else node_telemetry(node)
            pair = [(n, await self.source.read_bytes(n)) for n in (name + ".1", name)]
            found = [(n, data) for n, data in pair if data is not None]
            if node is not None and not found:
                break
            got += found
        return got

    async def read(self) -> tuple[History, str]:
        """The run's history and one line on what could not be read ("" when all was)."""
        try:
            files = await self._files()
        except InputError as exc:  # a sidecar too big or unreadable: said, nothing drawn
            return History(), f"telemetry history: {exc}"
        return await asyncio.to_thread(self._parse, files)

    def _parse(self, files: list[tuple[str, bytes]]) -> tuple[History, str]:
        reads = []
        for name, data in files:
            read = self._reads.setdefault(name, FileRead())
            reads.append((read, read.feed(data)))
        history = merged(reads)
        return history, history.notice("telemetry history")
