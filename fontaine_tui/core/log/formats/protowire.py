"""The protobuf wire format, read by hand (no protobuf runtime).

It reads a varint and skips a field by its wire type. The formats that carry protobuf records
(TensorBoard's events, W&B's run files) decode the few fields they need with these."""

from __future__ import annotations


def varint(buf: bytes, i: int) -> tuple[int, int]:
    """The varint at `buf[i]` and the index after it.

    Raises ValueError past ten bytes, IndexError when `buf` ends inside it."""
    b = buf[i]
    if b < 0x80:
        return b, i + 1
    value, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift >= 70:  # a varint is at most ten bytes
            raise ValueError("a varint longer than ten bytes")


def skip(buf: bytes, i: int, wire: int) -> int:
    """The index after a field of wire type `wire` whose key ended at `i`."""
    if wire == 0:
        return varint(buf, i)[1]
    if wire == 1:
        return i + 8
    if wire == 2:
        n, i = varint(buf, i)
        return i + n
    if wire == 5:
        return i + 4
    raise ValueError(f"wire type {wire}")


def signed64(value: int) -> int:
    """A varint read as int64/int32 (two's complement over 64 bits)."""
    return value - (1 << 64) if value >= 1 << 63 else value
