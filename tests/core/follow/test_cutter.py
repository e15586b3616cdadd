"""LineCutter's anchor: the last bytes before its offset, however the stream is split."""

from __future__ import annotations

import random

from fontaine_tui.core.follow.base import ANCHOR, LineCutter


def stream(rng: random.Random, n: int, cap: int) -> bytes:
    out = []
    for i in range(n):
        size = rng.choice([5, 40, 300, min(cap, 9000) + rng.randint(1, 3 * ANCHOR)])
        out.append(rng.randbytes(size).replace(b"\n", b"n").replace(b"\r", b"r")
                   + f"{i}\n".encode())
    return b"".join(out)


def feed_split(cutter: LineCutter, data: bytes, rng: random.Random) -> None:
    i = 0
    while i < len(data):
        j = min(len(data), i + rng.choice([1, 7, 100, 5000, 20000]))
        cutter.feed(data[i:j])
        i = j


def test_anchor_is_the_last_bytes_before_the_offset_under_any_split():
    for seed in range(40):
        rng = random.Random(seed)
        cap = rng.choice([64, 2000, 1 << 20])  # over-long lines skipped, or none
        data = stream(rng, 60, cap) + b"torn tail"
        cutter = LineCutter(cap)
        feed_split(cutter, data, rng)
        assert cutter.offset == data.rfind(b"\n") + 1
        assert cutter.anchor() == data[: cutter.offset][-ANCHOR:], seed
        assert cutter.resume().anchor() == cutter.anchor()


def test_anchor_after_a_rebase_holds_only_the_new_file():
    rng = random.Random(7)
    old = stream(rng, 20, 1 << 20) + b"half a li"
    cutter = LineCutter()
    feed_split(cutter, old, rng)
    cutter.rebase()  # a copy-truncate: the new file goes on with "ne\n..."
    assert cutter.anchor() == b""
    new = b"ne\n" + stream(rng, 3, 1 << 20)
    feed_split(cutter, new, rng)
    assert cutter.offset == len(new)
    assert cutter.anchor() == new[-ANCHOR:]
    short = LineCutter()
    short.feed(b"a\nb")
    short.rebase()
    short.feed(b"c\n")
    assert short.offset == 2 and short.anchor() == b"c\n"
