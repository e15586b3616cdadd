"""A train record's extra numbers (core/log/extras.py) against a plain dict of every value."""

from __future__ import annotations

import random
import tracemalloc

from fontaine_tui.core.log.extras import ExtraSeries


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
