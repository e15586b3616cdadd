"""A train record's extra numbers (core/log/extras.py) against a plain dict of every value."""

from __future__ import annotations

import json
import random
import tracemalloc

import pytest

from fontaine_tui.core.log import extras as extras_module
from fontaine_tui.core.log.extras import KEYS_KEPT, ExtraSeries
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.log.store import RunStore


def test_extra_series_hold_what_was_logged_through_gaps_and_resumes():
    rng = random.Random(3)
    for _ in range(200):
        extras, model, step = ExtraSeries(), {}, 0
        for _ in range(60):
            if rng.random() < 0.1 and step:
                step = rng.randint(0, step)  # a resume back to `step`
                extras.cut(step)
                model = {k: {s: v for s, v in d.items() if s <= step} for k, d in model.items()}
            else:
                step += rng.randint(1, 3)
                logged = {k: float(rng.randint(0, 9)) for k in "abcde" if rng.random() < 0.6}
                extras.add(step, logged)
                for k, v in logged.items():
                    model.setdefault(k, {})[step] = v
            for key, points in model.items():
                held = extras.series(key)
                if points:
                    assert held is not None and list(held[0]) == sorted(points)
                    assert dict(zip(held[0], held[1], strict=True)) == points
            probe = rng.randint(0, step + 1)
            assert extras.at(probe) == {k: d[probe] for k, d in model.items() if probe in d}
            assert set(extras.names()) == {k for k, d in model.items() if d}


def test_keys_logged_every_step_share_one_copy_of_the_steps():
    """20 keys over 10,000 steps hold 8 bytes a value, and the steps once (not 16 a value)."""
    tracemalloc.start()
    extras = ExtraSeries()
    for step in range(1, 10_001):
        extras.add(step, {f"k{i}": float(i) for i in range(20)})
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert held < (20 + 1) * 10_000 * 8 * 1.25
    assert list(extras.series("k7")[0]) == list(range(1, 10_001))


def test_keys_not_kept_are_counted_once_each_though_logged_again():
    """6,000 distinct keys, each record a shifting window of them: each key past the bound once."""
    extras, seen = ExtraSeries(), set()
    for step in range(1, 161):
        keys = [f"k{(step * 37 + j) % 6000}" for j in range(600)]
        seen.update(keys)
        extras.add(step, dict.fromkeys(keys, 1.0))
    assert len(seen) == 6000 and len(extras.names()) == KEYS_KEPT
    assert extras.not_kept_line() == f"{6000 - KEYS_KEPT} more keys not kept"


def test_past_the_keys_counted_the_line_says_at_least(monkeypatch):
    monkeypatch.setattr(extras_module, "NOT_KEPT_COUNTED", 10)
    extras = ExtraSeries()
    extras.add(1, {f"k{i}": 1.0 for i in range(KEYS_KEPT + 25)})
    assert extras.not_kept_line() == "at least 10 more keys not kept"


@pytest.mark.parametrize("columns", [True, False])
def test_a_record_past_the_numbers_kept_counts_the_rest_as_not_kept(tmp_path, columns):
    """One record with 10,000 numbers, then records naming some of them again: 5,904 not kept."""
    log = tmp_path / "train_log.jsonl"
    wide = {f"m{i}": float(i) for i in range(10_000)}
    recs = [{"kind": "train", "step": 1, "time": 1.0, "loss": 1.0} | wide]
    recs += [{"kind": "train", "step": s, "time": 1.0, "loss": 1.0, "m9999": 2.0} for s in (2, 3)]
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    for store in (load_log(log, columns=columns), _line_by_line(log, columns)):
        if columns:
            assert len(store.extras.names()) == KEYS_KEPT
            assert store.extras.not_kept_line() == "5904 more keys not kept"
        assert store.malformed_count == 0 and list(store.steps) == [1, 2, 3]


def _line_by_line(log, columns):
    """The store a follower builds, one line at a time (records.parse_line's path)."""
    store = RunStore(has_columns=columns)
    for n, raw in enumerate(log.read_bytes().splitlines(), 1):
        store.add_line(raw, n)
    return store
