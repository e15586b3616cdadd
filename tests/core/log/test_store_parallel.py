"""The parallel cold read gives exactly the store the sequential read gives."""

from __future__ import annotations

import pytest

from fontaine_tui.core.log.read import load_log
from tests.logs import dumps, meta, probe, records, train


def _messy_log(path):
    recs = [r for r in records(steps=600) if r.get("event") != "end"]  # killed, then resumed
    lines = [dumps(r) for r in recs]
    lines.insert(100, "{torn junk")
    lines.insert(300, "")
    lines.insert(400, '{"kind": "train", "step": 7.5, "time": 1}')
    lines.insert(450, '{"kind": "checkpoint", "step": 9, "time": NaN, "path": "x"}')
    resume = [
        meta(step=250, t=2.0),
        dumps(
            {
                "kind": "event",
                "step": 250,
                "time": 2.0,
                "event": "resume",
                "detail": "from step 250",
            }
        ),
        *[dumps(train(s, 3.0 + s, loss=0.1)) for s in range(251, 501)],
        dumps(probe(500, 600.0, 2.5, 2.6)),
        *[dumps(train(s, 3.0 + s, loss=0.1)) for s in range(501, 520)],
    ]
    lines += [r if isinstance(r, str) else dumps(r) for r in resume]
    path.write_bytes(
        (
            "\r\n".join(lines[:50]) + "\n" + "\n".join(lines[50:]) + "\n" + '{"kind": "train", "st'
        ).encode()
    )
    return path


def _view(store):
    return (
        list(store.steps),
        {k: v.tobytes() for k, v in store.columns.items()},
        store.probes,
        [p.step for p in store.superseded],
        store.counts(),
        [(m.line, m.reason) for m in store.malformed],
    )


@pytest.mark.parametrize("workers", [2, 3])
def test_parallel_equals_sequential(tmp_path, workers):
    path = _messy_log(tmp_path / "train_log.jsonl")
    seq = load_log(path)
    par = load_log(path, workers=workers, parallel_min_bytes=0)
    assert _view(par) == _view(seq)
    steps, _, probes, superseded, counts, malformed = _view(seq)
    assert steps[-1] == 519 and len(steps) == len(set(steps)) == 519
    assert superseded == [500] and probes[500].eval_chunk_mae == 2.5
    assert counts["malformed"] == 2 and counts["resumes"] == 1
    assert [line for line, _ in malformed] == [101, 401]


def test_verdict_mode_keeps_steps_not_columns(tmp_path):
    path = _messy_log(tmp_path / "train_log.jsonl")
    full, lean = load_log(path), load_log(path, columns=False, workers=2, parallel_min_bytes=0)
    assert list(lean.steps) == list(full.steps)
    assert lean.probes == full.probes and lean.counts() == full.counts()
    assert not lean.columns["loss"]


def test_verdict_mode_on_the_engines_compact_form_counts_torn_records(tmp_path):
    import json

    recs = records(steps=300)
    lines = [json.dumps(r, separators=(",", ":")) for r in recs]
    torn = lines[50][:40] + lines[51]  # a record cut short, the next one written on its line
    lines[50:52] = [torn]
    lines.insert(120, '{"kind":"train","step":120,"time":1,"loss":2 junk')
    path = tmp_path / "train_log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    full, lean = load_log(path), load_log(path, columns=False)
    assert list(lean.steps) == list(full.steps)
    assert lean.counts() == full.counts()
    assert [m.line for m in lean.malformed] == [m.line for m in full.malformed] == [51, 121]
