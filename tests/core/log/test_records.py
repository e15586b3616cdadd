"""Log schema v1 parsing: torn lines, malformed lines, resumes, NaN, unknown kinds."""

from __future__ import annotations

import math

from fontaine_tui.core.log.lines import LineCutter
from fontaine_tui.core.log.read import ingest_lines, load_lines, load_log
from fontaine_tui.core.log.records import Probe, TrainPoint, parse_line
from fontaine_tui.core.log.store import RunStore
from tests.logs import dumps, meta, probe, train, write_log


def _bytes(recs: list[dict]) -> bytes:
    return "".join(dumps(r) + "\n" for r in recs).encode()


def test_whole_fixture_log_parses_with_counts(tmp_path):
    store = load_log(write_log(tmp_path / "train_log.jsonl"))
    assert store.malformed_count == 0
    assert len(store.steps) == 1000
    assert store.probe_steps() == [250, 500, 750, 1000]
    assert store.probes[1000].eval_chunk_mae == 3.7929
    assert store.records == 1 + 1 + 1000 + 4 + 2 + 1


def test_torn_last_line_waits_for_its_newline():
    data = _bytes([meta(), train(1, 1.0)]) + b'{"kind": "train", "step": 2, "ti'
    store = load_lines([data])
    assert list(store.steps) == [1]
    assert store.malformed_count == 0  # a torn line is pending, not malformed
    cutter = LineCutter(track=False)
    lines, first, _ = cutter.feed(data)
    assert len(lines) == 2 and first == 1
    assert cutter.pending.startswith(b'{"kind": "train", "step": 2')
    rest, first, _ = cutter.feed(b'me": 2.0, "loss": 1.5}\n')
    assert first == 3
    rec = parse_line(rest[0])
    assert isinstance(rec, TrainPoint) and rec.step == 2 and rec.loss == 1.5


def test_torn_line_split_byte_by_byte_gives_the_same_records():
    data = _bytes([meta(), train(1, 1.0), probe(1, 1.1, 3.0, 3.1), train(2, 2.0)])
    whole = load_lines([data])
    pieces = load_lines([data[i : i + 1] for i in range(len(data))])
    assert list(pieces.steps) == list(whole.steps) == [1, 2]
    assert pieces.probes == whole.probes
    assert pieces.records == whole.records == 4


def test_malformed_middle_line_is_counted_with_its_line_number_and_skipped():
    data = (
        _bytes([meta(), train(1, 1.0)])
        + b"{not json at all\n"
        + b"[1, 2]\n"
        + b'{"kind": "train"}\n'
        + _bytes([train(2, 2.0)])
    )
    store = load_lines([data])
    assert list(store.steps) == [1, 2]
    assert [m.line for m in store.malformed] == [3, 4, 5]
    assert store.malformed_count == 3
    assert "not JSON" in store.malformed[0].reason
    assert "JSON object" in store.malformed[1].reason
    assert "step" in store.malformed[2].reason


def test_duplicated_step_after_resume_later_record_wins():
    recs = [
        meta(),
        train(1, 1.0),
        train(2, 2.0),
        probe(2, 2.1, 5.0, 5.0),
        train(3, 3.0),
        train(4, 4.0, loss=9.0),
        probe(4, 4.1, 4.0, 4.0),
        meta(step=2, t=10.0),
        {
            "kind": "event",
            "step": 2,
            "time": 10.0,
            "event": "resume",
            "detail": "from checkpoints/step-000002",
        },
        train(3, 11.0, loss=0.5),
        train(4, 12.0, loss=0.25),
        probe(4, 12.1, 3.0, 3.0),
    ]
    store = load_lines([_bytes(recs)])
    assert list(store.steps) == [1, 2, 3, 4]
    assert list(store.columns["loss"])[2:] == [0.5, 0.25]
    assert store.probes[4].eval_chunk_mae == 3.0
    assert store.probes[2].eval_chunk_mae == 5.0
    assert [p.step for p in store.superseded] == [4]
    assert store.replaced_steps == 2
    assert len(store.resumes) == 1 and len(store.metas) == 2
    assert store.counts()["resumes"] == 1


def test_step_repeated_without_resume_event_is_out_of_order_not_applied():
    store = load_lines([_bytes([train(1, 1.0), train(2, 2.0, loss=7.0), train(2, 3.0, loss=1.0)])])
    assert list(store.steps) == [1, 2]
    assert store.columns["loss"][1] == 7.0  # only a resume goes back: the first record stands
    assert store.counts()["out_of_order"] == 1 and store.replaced_steps == 0
    assert store.out_of_order[0].line == 3 and "without a resume" in store.out_of_order[0].why


def test_nan_and_infinity_are_floats():
    line = b'{"kind": "train", "step": 1, "time": 1.0, "loss": NaN, "grad_norm": Infinity}'
    rec = parse_line(line)
    assert math.isnan(rec.loss) and rec.grad_norm == math.inf
    store = load_lines([line + b"\n"])
    assert store.malformed_count == 0 and math.isnan(store.columns["loss"][0])


def test_unknown_kinds_and_fields_are_ignored_crlf_tolerated():
    data = (
        b'{"kind": "gossip", "step": 1, "time": 1}\r\n'
        b'{"kind": "eval", "step": 250, "time": 2, "eval_chunk_mae": 3.5, "new": [1]}\r\n'
    )
    store = load_lines([data])
    assert store.ignored == 1 and store.malformed_count == 0
    p = store.probes[250]
    assert isinstance(p, Probe) and p.eval_chunk_mae == 3.5 and math.isnan(p.train_chunk_mae)


def test_binary_junk_and_blank_lines():
    store = RunStore()
    ingest_lines(store, [b"\xff\xfe\x00junk", b"", dumps(train(1, 1.0)).encode()], 1)
    assert store.malformed_count == 1 and store.malformed[0].line == 1
    assert list(store.steps) == [1]
    assert store.lines == 3


def test_a_line_of_two_objects_is_malformed_not_two_records():
    pair = (dumps(train(1, 1.0)) + "," + dumps(train(2, 2.0))).encode()
    store = RunStore()
    ingest_lines(store, [pair, dumps(train(3, 3.0)).encode()], 1)
    assert list(store.steps) == [3]
    assert store.malformed_count == 1
