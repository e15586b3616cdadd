"""Fault injection on a local log: each case asserts exactly what the consumer ends up with.

Every test runs twice (conftest `make_local`): with inotify wake-ups and polling only.
File operations between two awaits are atomic as far as the follower can see.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import time

from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.log.lines import LINE_CAP
from tests.core.follow.followkit import Collector, append, event_line, train_line

LOG = "train_log.jsonl"


def lines_of(steps) -> bytes:
    return b"".join(train_line(s) for s in steps)


async def test_truncate_to_zero_then_shorter_content_keeps_what_was_read(tmp_path, make_local):
    log = tmp_path / LOG
    append(log, lines_of(range(1, 6)))
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1, 2, 3, 4, 5])
    os.truncate(log, 0)
    await c.until(lambda: any("truncated" in n for n in c.notes))
    append(log, lines_of([6, 7]))
    await c.until(lambda: c.steps == [1, 2, 3, 4, 5, 6, 7])
    await c.quiet()
    assert c.history == [1, 2, 3, 4, 5, 6, 7] and c.segments == 0
    assert [n for n, _ in c.lines] == list(range(1, 8))  # one stream, numbered on
    await c.stop()


async def test_truncate_and_refill_past_old_size(tmp_path, make_local):
    """coreutils tail misses this one (size never drops below the offset); the head hash sees it."""
    log = tmp_path / LOG
    append(log, lines_of([1, 2, 3]))
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1, 2, 3])
    old_size = log.stat().st_size
    with open(log, "r+b") as f:
        f.truncate(0)
        f.write(lines_of(range(100, 120)))
    assert log.stat().st_size > old_size
    await c.until(lambda: c.steps == [1, 2, 3, *range(100, 120)])
    await c.quiet()
    assert c.numbering_ok() and len(c.lines) == 23
    await c.stop()


async def test_rename_and_recreate_finishes_the_old_file_first(tmp_path, make_local):
    log = tmp_path / LOG
    old = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(old, lines_of(range(1, 6)))
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1, 2, 3, 4, 5])
    os.rename(log, tmp_path / (LOG + ".1"))
    os.write(old, lines_of([6, 7]))  # the writer still finishes its old file
    os.close(old)
    append(log, lines_of([8, 9, 10]))
    await c.until(lambda: c.steps == list(range(1, 11)))
    await c.quiet()
    assert c.history == [1, 2, 3, 4, 5, 6, 7, ("SEGMENT", LOG), 8, 9, 10]
    assert [n for n, _ in c.lines] == [1, 2, 3, 4, 5, 6, 7, 1, 2, 3]
    assert any("rotated or replaced" in n for n in c.notes)
    assert [g.name for g in c.store.segments] == [LOG]
    await c.stop()


async def test_renamed_log_keeps_being_read_until_its_successor_has_data(tmp_path, make_local):
    """A writer that does not reopen its log goes on writing to the renamed file."""
    log = tmp_path / LOG
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, lines_of([1, 2]))
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1, 2])
    os.rename(log, tmp_path / (LOG + ".1"))
    log.touch()  # logrotate's `create`: an empty file under the old name
    os.write(fd, lines_of([3, 4]))
    await c.until(lambda: c.steps == [1, 2, 3, 4])
    assert c.segments == 0
    os.write(fd, lines_of([5]))
    os.close(fd)
    append(log, lines_of([6]))
    await c.until(lambda: c.steps == [1, 2, 3, 4, 5, 6])
    assert c.history[-2:] == [("SEGMENT", LOG), 6]
    await c.stop()


async def test_torn_write_across_a_rename_is_one_malformed_line(tmp_path, make_local):
    log = tmp_path / LOG
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, lines_of([1, 2]) + train_line(3)[:25])  # killed mid-line
    os.close(fd)
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1, 2])
    os.rename(log, tmp_path / (LOG + ".1"))
    append(log, train_line(3)[25:] + lines_of([4]))  # a new writer; the first bytes are torn too
    await c.until(lambda: c.steps == [1, 2, 4])
    await c.quiet()
    assert c.store.malformed_count == 2  # the cut line in the old file, its end in the new
    assert [c.store.where(m.line) for m in c.store.malformed] == [
        "line 3",
        "train_log.jsonl line 1",
    ]
    assert c.numbering_ok()
    await c.stop()


async def test_copy_truncate_rotation_loses_and_doubles_nothing(tmp_path, make_local):
    import shutil

    log = tmp_path / LOG
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, lines_of(range(1, 4)))
    c = Collector(LocalRun(tmp_path, poll_s=30, inotify=False)).start()  # reads only when
    await c.until(lambda: c.steps == [1, 2, 3], timeout=40)  # woken
    os.write(fd, lines_of([4, 5]) + train_line(6)[:30])  # not read yet: the copy holds it
    shutil.copyfile(log, tmp_path / (LOG + ".1"))  # logrotate copytruncate
    os.ftruncate(fd, 0)
    os.write(fd, train_line(6)[30:] + lines_of([7]))  # the writer goes on mid-line
    for w in list(c.source._wakers):
        w._event.set()
    await c.until(lambda: c.steps == list(range(1, 8)))
    await c.quiet()
    assert c.store.malformed_count == 0 and c.segments == 0
    assert any("copy-truncate" in n and ".1" in n for n in c.notes)
    assert [n for n, _ in c.lines] == list(range(1, 8))
    os.close(fd)
    await c.stop()


async def test_copy_truncate_before_the_first_read_is_found_in_the_copy(tmp_path):
    import shutil

    log = tmp_path / LOG
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    c = Collector(LocalRun(tmp_path, poll_s=30, inotify=False)).start()
    await c.until(lambda: c.source._wakers, timeout=5)
    await asyncio.sleep(0.05)  # the follower has the empty log open
    os.write(fd, lines_of([1, 2]))
    shutil.copyfile(log, tmp_path / (LOG + ".1"))
    os.ftruncate(fd, 0)  # the log is empty again, as when the follower opened it
    for w in list(c.source._wakers):
        w._event.set()
    await c.until(lambda: c.steps == [1, 2])
    os.write(fd, lines_of([3]))
    for w in list(c.source._wakers):
        w._event.set()
    await c.until(lambda: c.steps == [1, 2, 3])
    os.close(fd)
    await c.stop()


async def test_a_rewrite_with_the_same_content_reads_the_same(tmp_path, make_local):
    log = tmp_path / LOG
    append(log, lines_of(range(1, 6)))
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1, 2, 3, 4, 5])
    copy = tmp_path / "copy.tmp"
    copy.write_bytes(log.read_bytes() + lines_of([6]))
    os.replace(copy, log)  # an editor's or a sync tool's save: a new inode, same first bytes
    await c.until(lambda: c.steps == [1, 2, 3, 4, 5, 6])
    await c.quiet()
    assert c.segments == 0 and c.store.repeats == 0
    assert any("same content" in n for n in c.notes)
    await c.stop()


async def test_rotated_segments_are_read_first(tmp_path, make_local):
    import gzip

    (tmp_path / (LOG + ".2.gz")).write_bytes(gzip.compress(lines_of([1, 2])))
    (tmp_path / (LOG + ".1")).write_bytes(lines_of([3]) + train_line(4)[:20])  # torn tail
    append(tmp_path / LOG, lines_of([5, 6]))
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1, 2, 3, 5, 6])
    await c.quiet()
    assert [h for h in c.history if isinstance(h, tuple)] == [
        ("SEGMENT", LOG + ".2.gz"),
        ("SEGMENT", LOG + ".1"),
        ("SEGMENT", LOG),
    ]
    assert c.store.malformed_count == 1
    assert c.store.where(c.store.malformed[0].line) == "train_log.jsonl.1 line 2"
    assert c.numbering_ok()
    await c.stop()


async def test_delete_then_recreate(tmp_path, make_local):
    log = tmp_path / LOG
    append(log, lines_of(range(1, 6)))
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1, 2, 3, 4, 5])
    log.unlink()
    await c.until(lambda: any("removed" in n for n in c.notes))
    append(log, lines_of([1, 2]))
    await c.until(lambda: c.segments == 1 and len(c.lines) == 7)
    await c.quiet()
    assert c.history == [1, 2, 3, 4, 5, ("SEGMENT", LOG), 1, 2]
    assert [n for n, _ in c.lines] == [1, 2, 3, 4, 5, 1, 2]
    await c.stop()


async def test_late_appearance_of_file_and_folder(tmp_path, make_local):
    folder = tmp_path / "run"  # not there yet either
    c = Collector(make_local(folder)).start()
    await c.until(lambda: any("waiting for train_log.jsonl" in n for n in c.notes))
    await asyncio.sleep(0.05)
    folder.mkdir()
    await asyncio.sleep(0.05)
    append(folder / LOG, lines_of([1, 2, 3]))
    await c.until(lambda: c.steps == [1, 2, 3], timeout=5)
    await c.quiet()
    assert c.history == [1, 2, 3]
    assert c.segments == 0
    await c.stop()


async def test_torn_line_written_byte_by_byte(tmp_path, make_local):
    log = tmp_path / LOG
    append(log, train_line(1))
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1])
    second = train_line(2)
    for i in range(len(second) - 1):
        append(log, second[i : i + 1])
        await asyncio.sleep(0.002)
        assert len(c.lines) == 1, "a torn line was delivered"
    append(log, b"\n")
    await c.until(lambda: c.steps == [1, 2])
    await c.quiet()
    assert c.lines == [(1, train_line(1)[:-1]), (2, second[:-1])]
    assert c.store.malformed_count == 0
    await c.stop()


async def test_17_mib_line_is_skipped_counted_and_numbered(tmp_path, make_local):
    log = tmp_path / LOG
    src = make_local(tmp_path)
    c = Collector(src).start()
    append(log, train_line(1))
    await c.until(lambda: c.steps == [1])
    big = json.dumps(
        {"kind": "event", "step": 2, "time": 0.0, "event": "start", "detail": "x" * (17 << 20)}
    ).encode()
    assert len(big) > LINE_CAP
    for i in range(0, len(big), 1 << 20):  # arrives in pieces, as a writer would flush it
        append(log, big[i : i + (1 << 20)])
        await asyncio.sleep(0.001)
    append(log, b"\n" + event_line(3, "end", "done"))
    await c.until(lambda: c.steps == [1, 3])
    await c.quiet()
    assert [n for n, _ in c.lines] == [1, 2, 3]
    assert c.lines[1] == (2, b"")
    assert c.records[1].line == 3 and c.records[1].event == "end"
    assert src.skipped_lines[LOG] == [2]
    assert any("skipped over-long line(s) 2 " in n for n in c.notes)
    assert c.batches[-1].end_offset == log.stat().st_size
    await c.stop()


async def test_binary_junk_is_counted_with_line_numbers(tmp_path, make_local):
    log = tmp_path / LOG
    junk1 = b"\x00\xff\xfe\x1b[31mred\x1b[0m \x80\x81"
    junk2 = bytes(range(11, 256))  # every byte but the newline, no valid UTF-8 JSON
    append(log, train_line(1) + junk1 + b"\n" + junk2 + b"\n" + train_line(4))
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1, 4])
    await c.quiet()
    assert c.store.malformed_count == 2
    assert [m.line for m in c.store.malformed] == [2, 3]
    assert c.texts == [train_line(1)[:-1], junk1, junk2, train_line(4)[:-1]]
    await c.stop()


async def test_crlf_lines(tmp_path, make_local):
    log = tmp_path / LOG
    append(log, b"".join(train_line(s)[:-1] + b"\r\n" for s in (1, 2, 3)))
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1, 2, 3])
    await c.quiet()
    assert c.store.malformed_count == 0
    assert all(raw.endswith(b"\r") for _, raw in c.lines)
    assert c.records[2].loss == 1.0 / 4
    await c.stop()


async def test_nan_and_infinity(tmp_path, make_local):
    log = tmp_path / LOG
    append(log, train_line(1, loss=math.nan, grad_norm=math.inf) + train_line(2, lr=-math.inf))
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1, 2])
    await c.quiet()
    assert b"NaN" in c.lines[0][1] and b"Infinity" in c.lines[0][1]
    assert math.isnan(c.records[0].loss) and c.records[0].grad_norm == math.inf
    assert c.records[1].lr == -math.inf
    assert c.store.malformed_count == 0
    await c.stop()


async def test_resume_that_repeats_steps(tmp_path, make_local):
    log = tmp_path / LOG
    append(log, lines_of(range(1, 11)))
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == list(range(1, 11)))
    append(log, event_line(5, "resume", "from checkpoint step 5") + lines_of(range(6, 13)))
    await c.until(lambda: len(c.records) == 18)
    await c.quiet()
    assert c.history == [*range(1, 11), 5, *range(6, 13)]
    assert list(c.store.steps) == list(range(1, 13))
    assert c.store.replaced_steps == 5
    assert [e.step for e in c.store.resumes] == [5]
    assert c.records[10].line == 11
    await c.stop()


async def test_two_files_of_one_run_at_once(tmp_path, make_local):
    src = make_local(tmp_path)
    log, out = Collector(src).start(), Collector(src, "engine.out.log").start()
    append(tmp_path / LOG, lines_of([1, 2]))
    append(tmp_path / "engine.out.log", b"loading corpus\nstep 1 ok\n")
    await log.until(lambda: log.steps == [1, 2])
    await out.until(lambda: len(out.lines) == 2)
    assert out.lines == [(1, b"loading corpus"), (2, b"step 1 ok")]
    await log.stop()
    await out.stop()


async def test_large_catch_up_streams_in_batches_without_stalling_the_loop(tmp_path, make_local):
    log = tmp_path / LOG
    block = lines_of(range(1, 20001))
    with open(log, "wb") as f:
        for _ in range(12):  # ~44 MB
            f.write(block)
    size = log.stat().st_size
    src = make_local(tmp_path)
    gaps: list[float] = []

    async def ticker():
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    started = time.perf_counter()
    n, batches, expect_line = 0, 0, 1
    async for batch in src.follow():
        assert batch.first_line == expect_line or not batch.lines
        expect_line += len(batch.lines)
        n += len(batch.lines)
        batches += 1
        if batch.end_offset == size:
            break
    took = time.perf_counter() - started
    tick.cancel()
    await src.close()
    assert n == 12 * 20000
    assert batches >= size // (4 << 20)
    # the loop kept turning during the catch-up (big reads go to a thread), not only after
    # it: a tick every 0.1 s at the least, however fast or slow this machine reads
    assert len(gaps) >= int(took / 0.1), f"{len(gaps)} ticks in {took:.2f} s"
    assert max(gaps) < 1.0, f"event loop stalled {max(gaps):.3f} s"


async def test_inotify_wakes_the_reader_without_polling(tmp_path):
    from fontaine_tui.core.follow.local import LocalRun
    from fontaine_tui.core.follow.waker import _LIBC

    if _LIBC is None:
        import pytest

        pytest.skip("no libc inotify here")
    append(tmp_path / LOG, train_line(1))
    fast = Collector(LocalRun(tmp_path, poll_s=30, inotify=True)).start()
    slow = Collector(LocalRun(tmp_path, poll_s=30, inotify=False)).start()
    await fast.until(lambda: fast.steps == [1])
    await slow.until(lambda: slow.steps == [1])
    t0 = time.perf_counter()
    append(tmp_path / LOG, train_line(2))
    await fast.until(lambda: fast.steps == [1, 2], timeout=2)
    assert time.perf_counter() - t0 < 1.0
    await asyncio.sleep(0.3)
    assert slow.steps == [1]  # polling only, every 30 s: not yet
    await fast.stop()
    await slow.stop()


async def test_a_folder_in_place_of_the_log_is_a_note_not_a_crash(tmp_path, make_local):
    (tmp_path / LOG).mkdir()
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: any("cannot read (not a regular file)" in n for n in c.notes))
    (tmp_path / LOG).rmdir()
    append(tmp_path / LOG, train_line(1))
    await c.until(lambda: c.steps == [1])
    await c.stop()


async def test_a_log_with_bare_cr_line_ends_is_followed(tmp_path, make_local):
    log = tmp_path / LOG
    append(log, train_line(1)[:-1] + b"\r" + train_line(2)[:-1] + b"\r")
    c = Collector(make_local(tmp_path)).start()
    await c.until(lambda: c.steps == [1, 2])
    append(log, train_line(3)[:-1] + b"\r")
    await c.until(lambda: c.steps == [1, 2, 3])
    assert c.store.malformed_count == 0
    await c.stop()
