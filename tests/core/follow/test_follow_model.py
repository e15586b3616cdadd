"""Property test: random write / torn write / rotate / copy-truncate / delete / read sequences
against a model of everything written. After every read the consumer holds every line written
so far, in order, across every file the log has been (a line cut by a rotation or a deletion
is delivered cut, as one line), numbered from 1 within each file: nothing lost, nothing
doubled."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from fontaine_tui.core.follow.local import LocalRun
from tests.core.follow.followkit import Collector, train_line
from tests.profiles import examples

LOG = "train_log.jsonl"


class FollowerModel(RuleBasedStateMachine):
    inotify = True

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="follow-model-"))
        self.log = self.dir / LOG
        self.loop = asyncio.new_event_loop()
        self.src = LocalRun(self.dir, poll_s=0.01, inotify=self.inotify)
        self.col = Collector(self.src)
        self.loop.run_until_complete(self._start())
        self.fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.expected: list[bytes] = []
        self.torn: bytes | None = None  # the rest of a line whose start is in the file
        self.cut: bytes | None = None  # a torn line's start, left behind in a file now gone
        self.n = 0
        self.reads = 0

    async def _start(self) -> None:
        self.col.start()

    def _line(self) -> bytes:
        self.n += 1
        return train_line(self.n, detail="x" * (self.n % 7) * 300)

    def _fresh_file(self) -> None:
        """The writer starts another file; its torn line, if any, stays cut in the old one
        (the follower delivers it when it moves on to the new file)."""
        self.fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if self.torn is not None:
            self.cut = self.pending_line[: len(self.pending_line) + 1 - len(self.torn)]
            self.torn = None

    @rule(count=st.integers(1, 5))
    def write(self, count: int) -> None:
        data = b""
        if self.torn is not None:
            data, self.torn = self.torn, None
        if self.cut is not None:  # the first bytes of a new file: the follower moves on
            self.expected.append(self.cut)
            self.cut = None
        lines = [self._line() for _ in range(count)]
        os.write(self.fd, data + b"".join(lines))
        if data:
            self.expected.append(self.pending_line)
        self.expected += [ln[:-1] for ln in lines]

    @precondition(lambda self: self.torn is None)
    @rule(cut=st.integers(1, 200))
    def write_torn(self, cut: int) -> None:
        if self.cut is not None:  # the first bytes of a new file: the follower moves on
            self.expected.append(self.cut)
            self.cut = None
        line = self._line()
        cut = min(cut, len(line) - 1)
        os.write(self.fd, line[:cut])
        self.torn, self.pending_line = line[cut:], line[:-1]

    def _catch_up(self) -> None:
        """Rotations come hours apart, reads every fraction of a second: let the follower read
        what is there before the next one (what a rotation leaves unread has its own tests)."""
        deadline = time.monotonic() + 3

        async def settle() -> None:
            while self.col.texts != self.expected and time.monotonic() < deadline:
                await asyncio.sleep(0.003)
            await asyncio.sleep(0.03)  # and the follower has looked at the torn tail too

        self.loop.run_until_complete(settle())

    @rule()
    def rotate(self) -> None:
        self._catch_up()
        os.close(self.fd)
        os.replace(self.log, self.dir / (LOG + ".1"))
        self._fresh_file()

    @rule()
    def copy_truncate(self) -> None:
        """logrotate's copytruncate: copy the log to .1, truncate it; the writer goes on (a
        torn line is finished in the truncated file)."""
        self._catch_up()
        shutil.copyfile(self.log, self.dir / (LOG + ".1"))
        os.ftruncate(self.fd, 0)

    @rule()
    def delete_and_recreate(self) -> None:
        self._catch_up()
        os.close(self.fd)
        self.log.unlink()
        self._fresh_file()

    @rule(ms=st.integers(0, 5))
    def tick(self, ms: int) -> None:
        """Let the follower run for a moment in the middle of things."""
        self.loop.run_until_complete(asyncio.sleep(ms / 1000))

    @rule()
    def read(self) -> None:
        self.reads += 1
        deadline = time.monotonic() + 3

        async def settle() -> None:
            while self.col.texts != self.expected and time.monotonic() < deadline:
                await asyncio.sleep(0.003)
            await asyncio.sleep(0.02)  # and nothing more arrives

        self.loop.run_until_complete(settle())
        assert self.col.texts == self.expected
        assert self.col.numbering_ok()

    @invariant()
    def follower_alive(self) -> None:
        task = self.col.task
        assert task is not None
        if task.done():
            task.result()

    def teardown(self) -> None:
        try:
            self.read()
        finally:
            os.close(self.fd)
            self.loop.run_until_complete(self.col.stop())
            self.loop.close()
            shutil.rmtree(self.dir, ignore_errors=True)


class PollingFollowerModel(FollowerModel):
    inotify = False


_settings = settings(
    max_examples=examples(25),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestFollowerModelInotify = FollowerModel.TestCase
TestFollowerModelInotify.settings = _settings
TestFollowerModelPolling = PollingFollowerModel.TestCase
TestFollowerModelPolling.settings = _settings
