"""The telemetry history reader takes only finite numbers of the right kind and range.

A line with a field the recorder never writes there (NaN, infinity, a 400-digit integer, a
string, a negative amount) is one line not read, and the history of the other lines is whole.
"""

from __future__ import annotations

import json

import pytest

from fontaine_tui.core.host.history import parse, read_history
from fontaine_tui.widgets.sparkline_text import history_lines

T0 = 1_787_000_000.0


def good(i: int) -> dict:
    """A sample as the recorder writes it."""
    return {
        "v": 1,
        "t": T0 + 10 * i,
        "node": "box",
        "step": 10 * i,
        "gpus": [{"index": 0, "uuid": "GPU-1", "util": 50, "mem": 1 << 30, "mem_total": 1 << 34}],
        "ram": {"used": (20 + i) << 30, "total": 64 << 30},
        "engine": {"pid": 1, "mem": 4 << 30, "mem_kind": "PSS", "cpu": 99.5, "procs": 3},
        "disk": {"free": 500 << 30, "read": i << 20, "write": i << 21},
        "net": {"in": i << 20, "out": i << 19},
    }


GARBAGE = {  # kind -> (path of the field, its raw JSON text)
    "nan": (("ram", "used"), "NaN"),
    "inf": (("engine", "mem"), "Infinity"),
    "minus inf": (("disk", "free"), "-Infinity"),
    "400 digits": (("ram", "used"), "1" + "0" * 400),
    "400-digit counter": (("net", "in"), "1" + "0" * 400),
    "400-digit step": (("step",), "1" + "0" * 400),
    "string": (("ram", "used"), '"12"'),
    "bool": (("engine", "cpu"), "true"),
    "list for a part": (("ram",), "[1, 2]"),
    "float counter": (("disk", "read"), "1.5"),
    "negative": (("ram", "used"), "-5"),
    "negative counter": (("disk", "write"), "-1"),
    "negative step": (("step",), "-3"),
    "util past 100": (("gpus",), '[{"util": 250, "mem": 1}]'),
    "gpu not a dict": (("gpus",), "[7]"),
    "nan time": (("t",), "NaN"),
    "huge float time": (("t",), "1e300"),
}


def line_with(kind: str) -> bytes:
    """A good sample with one field replaced by `kind`'s raw JSON text."""
    path, raw = GARBAGE[kind]
    doc = good(5)
    marker = "@@FIELD@@"
    inner = doc
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = marker
    return json.dumps(doc).replace(f'"{marker}"', raw).encode()


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_a_garbage_field_makes_its_line_one_not_read(kind: str) -> None:
    assert parse(line_with(kind)) is None
    lines = [json.dumps(good(i)).encode() for i in range(5)]
    data = b"\n".join([*lines, line_with(kind), json.dumps(good(6)).encode()]) + b"\n"
    history = read_history([data])
    assert history.garbage == 1
    assert [s.t for s in history.nodes["box"]] == [T0 + 10 * i for i in (0, 1, 2, 3, 4, 6)]
    assert history.notice("telemetry history") == "telemetry history: 1 line not a sample: not read"
    drawn = "\n".join(text for text, _ in history_lines(history, 20))
    assert "host RAM" in drawn and "nan" not in drawn.lower()


def test_nulls_are_numbers_the_host_had_not() -> None:
    doc = good(1) | {"gpus": None, "ram": None, "engine": None, "net": None, "step": None}
    doc["disk"] = {"free": 1 << 30, "read": None, "write": None}
    got = parse(json.dumps(doc).encode())
    assert got is not None and got.values["ram"] is None and got.step is None
    assert got.values["disk_free"] == float(1 << 30)


def test_a_rate_past_any_float_is_no_number() -> None:
    """Two samples a hair apart whose counter jumps by 2**62: no infinity is drawn."""
    a, b = good(1) | {"t": 1e-300}, good(2) | {"t": 2e-300}
    a["net"], b["net"] = {"in": 0, "out": 0}, {"in": 1 << 62, "out": 1}
    data = (json.dumps(a) + "\n" + json.dumps(b) + "\n").encode()
    history = read_history([data])
    assert history.nodes["box"][1].values["net_in"] is None
    history_lines(history, 20)


def test_the_engine_memory_is_the_pss_and_an_older_lines_rss_still_reads() -> None:
    """The recorder writes the tree's PSS as `mem`; a sidecar written before it has `rss`."""
    assert parse(json.dumps(good(1)).encode()).values["mem"] == float(4 << 30)
    older = good(1) | {"engine": {"pid": 1, "rss": 3 << 30, "cpu": 9.0, "procs": 3}}
    assert parse(json.dumps(older).encode()).values["mem"] == float(3 << 30)
