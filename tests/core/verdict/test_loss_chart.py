"""The loss chart's smoothing (a debiased EMA, extended as the log grows) and log axis."""

from __future__ import annotations

import math

import pytest

from fontaine_tui.core.charts.chart import log_ticks
from fontaine_tui.core.charts.loss import EMA_FACTORS, Ema, loss_chart
from fontaine_tui.core.log.records import Event, TrainPoint
from fontaine_tui.core.log.store import RunStore


def point(step: int, loss: float) -> TrainPoint:
    return TrainPoint(step, float(step), loss, loss, loss / 4, 3e-4, 1.0, 0.5, 0.01, 96.0)


def store_of(losses) -> RunStore:
    store = RunStore()
    for i, v in enumerate(losses, 1):
        store.add(point(i, v))
    return store


def reference(xs, f):
    """The EMA written out: every finite point so far, weighted f^(age), normalised by the
    weights' sum (what the debiasing divides by)."""
    out = []
    finite = []
    for x in xs:
        if math.isfinite(x):
            finite.append(x)
            w = [f ** (len(finite) - 1 - i) for i in range(len(finite))]
            out.append(sum(a * b for a, b in zip(w, finite, strict=True)) / sum(w))
        else:
            out.append(math.nan)
    return out


def test_the_debiased_ema_starts_at_the_first_value_and_matches_the_weighted_mean():
    xs = [4.0, 2.0, math.nan, 3.0, 1.0, 1.5]
    e = Ema(0.9, xs)
    got = e.extend()
    assert got[0] == pytest.approx(4.0)  # not 0.4, as an undebiased EMA from zero would be
    assert math.isnan(got[2])
    want = reference(xs, 0.9)
    assert [g for g in got if math.isfinite(g)] == pytest.approx(
        [w for w in want if math.isfinite(w)]
    )
    assert Ema(0.9, [2.5] * 50).extend() == pytest.approx([2.5] * 50)  # a flat curve stays


def test_the_ema_extends_with_the_column_and_starts_over_when_steps_are_replaced():
    store = store_of([3.0, 2.0, 1.0])
    spec = loss_chart(store, 0.8)
    first = list(spec.curves[1].ys)
    for i, v in enumerate([0.5, 0.25], 4):
        store.add(point(i, v))
    grown = loss_chart(store, 0.8).curves[1].ys
    assert list(grown) == pytest.approx(reference([3.0, 2.0, 1.0, 0.5, 0.25], 0.8))
    assert list(grown[:3]) == pytest.approx(first)
    # a resume back to step 2 replaces steps 3..5: the average is of what the log now says
    store.add(Event(2, 10.0, "resume", "from step 2"))
    for i, v in enumerate([9.0, 9.0], 3):
        store.add(point(i, v))
    assert store.replaced_steps > 0 and list(store.columns["ar_ce"]) == [3.0, 2.0, 9.0, 9.0]
    assert list(loss_chart(store, 0.8).curves[1].ys) == pytest.approx(
        reference([3.0, 2.0, 9.0, 9.0], 0.8)
    )


def test_smoothing_keeps_the_raw_curves_faint_beneath_and_says_the_factor():
    store = store_of([3.0, 2.0, 1.0])
    plain = loss_chart(store)
    assert [c.label for c in plain.curves] == ["AR CE", "flow"]
    assert not any(c.faint for c in plain.curves)
    smooth = loss_chart(store, 0.95, log=True)
    assert [(c.label, c.faint) for c in smooth.curves] == [
        ("AR CE raw", True),
        ("AR CE EMA 0.95", False),
        ("flow raw", True),
        ("flow EMA 0.95", False),
    ]
    assert smooth.curves[0].ys is store.columns["ar_ce"]  # the raw curve is the column
    assert smooth.title == "training losses  [EMA 0.95, debiased; log scale]"
    assert smooth.ylog and smooth.ylabel == "loss (log scale)"
    assert EMA_FACTORS[0] == 0.0 and list(EMA_FACTORS) == sorted(EMA_FACTORS)


def test_log_ticks_sit_on_1_2_5_and_say_the_values():
    ticks, labels = log_ticks(math.log10(0.08), math.log10(3.0))
    assert labels == ["0.1", "0.2", "0.5", "1", "2"]
    assert ticks == pytest.approx([math.log10(float(v)) for v in labels])
    ticks, labels = log_ticks(-3.0, 3.0)  # too many 1-2-5 ticks: the powers of ten
    assert labels == ["0.001", "0.1", "10", "1e+03"]  # 7 powers of ten: every other one
    assert log_ticks(-1.0, 2.0)[1] == ["0.1", "1", "10", "100"]
    ticks, labels = log_ticks(0.30, 0.32)  # inside one 1-2-5 gap: the two ends
    assert len(ticks) == 2 and labels == ["2", "2.09"]


def test_thin_keeps_one_point_per_cell_crossed_and_both_ends():
    from fontaine_tui.core.charts.chart import thin

    xs = [i / 100 for i in range(101)]  # 0.00 .. 1.00 on a 10 x 10 grid: 10 columns
    ys = [0.5] * 101
    tx, ty = thin(xs, ys, (0.0, 1.0), (0.0, 1.0), 10, 10)
    assert tx[0] == 0.0 and tx[-1] == 1.0 and len(tx) == 11  # a point per column, the end
    spike = list(ys)
    spike[37] = 0.95  # one point in another row: kept, and the one after it
    sx, sy = thin(xs, spike, (0.0, 1.0), (0.0, 1.0), 10, 10)
    assert 0.95 in sy and len(sx) == 13
    assert thin([1.0, 2.0], [3.0, 4.0], (0.0, 1.0), (0.0, 1.0), 10, 10) == ([1.0, 2.0], [3.0, 4.0])


def test_another_trainers_run_draws_its_one_train_loss():
    store = RunStore()
    nan = float("nan")
    for i, v in enumerate([3.0, 2.0, 1.0], 1):
        store.add(TrainPoint(i, float(i), v, nan, nan, nan, nan, nan, nan, nan))
    assert [c.label for c in loss_chart(store).curves] == ["loss"]
    assert [c.label for c in loss_chart(store, 0.9).curves] == ["loss raw", "loss EMA 0.9"]
    assert list(loss_chart(store).curves[0].ys) == [3.0, 2.0, 1.0]
    ours = store_of([3.0, 2.0])  # the engine's: AR CE and flow
    assert [c.label for c in loss_chart(ours).curves] == ["AR CE", "flow"]
