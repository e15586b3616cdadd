"""LineCutter's anchor: the last bytes before its offset, however the stream is split."""

from __future__ import annotations

import random

from fontaine_tui.core.log.lines import ANCHOR, LineCutter


def stream(rng: random.Random, n: int, cap: int) -> bytes:
    out = []
    for i in range(n):
        size = rng.choice([5, 40, 300, min(cap, 9000) + rng.randint(1, 3 * ANCHOR)])
        out.append(
            rng.randbytes(size).replace(b"\n", b"n").replace(b"\r", b"r") + f"{i}\n".encode()
        )
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


def test_the_cold_reader_drops_an_over_long_line_as_the_followers_do():
    from fontaine_tui.core.log.lines import LINE_CAP
    from fontaine_tui.core.log.read import load_lines

    head = b'{"kind": "train", "step": 1, "time": 1.0, "loss": 2.0}\n'
    big = b'{"kind": "note", "x": "' + b"a" * (LINE_CAP + 10) + b'"}\n'
    tail = b'{"kind": "train", "step": 3, "time": 3.0, "loss": 1.0}\n'
    data = head + big + tail
    store = load_lines([data[i : i + (1 << 20)] for i in range(0, len(data), 1 << 20)])
    assert list(store.steps) == [1, 3]
    assert store.malformed_count == 0
    assert any("skipped over-long line(s) 2" in n for n in store.notices), store.notices
    assert store.lines == 3
