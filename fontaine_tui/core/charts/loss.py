"""The loss chart: the train losses, raw or smoothed by a debiased EMA kept per column."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from fontaine_tui.core.charts.chart import ChartSpec, Curve
from fontaine_tui.core.log.store import RunStore

EMA_FACTORS = (0.0, 0.6, 0.8, 0.9, 0.95, 0.98, 0.99)  # the loss chart's smoothing steps
EMA_DEFAULT = 0.9


def stepped(factor: float, direction: int) -> float:
    """The smoothing step `direction` steps from `factor` (more: +1, less: -1), within range."""
    i = EMA_FACTORS.index(factor) if factor in EMA_FACTORS else 0
    return EMA_FACTORS[max(0, min(len(EMA_FACTORS) - 1, i + direction))]


LOSSES = (("ar_ce", "AR CE", "cyan"), ("flow_loss", "flow", "magenta"))


class Ema:
    """The debiased exponential moving average of a growing column, extended in place.

    A redraw adds only the points logged since the last one.

    s_t = f * s_(t-1) + (1 - f) * x_t, read as s_t / (1 - f^n) over the n finite points so
    far, so the curve starts at the first value instead of rising from zero; a non-finite
    point leaves the average where it was (and is not drawn)."""

    __slots__ = ("factor", "column", "_acc", "_n", "_seen", "_stamp", "out")

    def __init__(self, factor: float, column: Sequence[float]) -> None:
        self.factor = factor
        self.column = column  # held, so its id names it for as long as this is cached
        self._reset(0)

    def _reset(self, stamp: int) -> None:
        self._acc = 0.0
        self._n = 0  # finite points averaged
        self._seen = 0  # points of the column consumed
        self._stamp = stamp
        self.out: list[float] = []

    def extend(self, stamp: int = 0) -> list[float]:
        """Average the points added since the last call.

        `stamp` moves when earlier points were replaced (a resume rewound the log), which starts the
        average over."""
        column = self.column
        if stamp != self._stamp or len(column) < self._seen:
            self._reset(stamp)
        f, acc, n, out = self.factor, self._acc, self._n, self.out
        for x in column[self._seen :]:
            if math.isfinite(x):
                acc = f * acc + (1.0 - f) * x
                n += 1
                out.append(acc / (1.0 - f**n))
            else:
                out.append(math.nan)
        self._acc, self._n, self._seen = acc, n, len(column)
        return out


_EMAS: dict[tuple[int, float], Ema] = {}


def ema(store: RunStore, name: str, factor: float) -> list[float]:
    """The store's column `name` smoothed by `factor`, kept per column and factor."""
    return ema_of(store.columns[name], factor, store.replaced_steps)


def ema_of(column: Sequence[float], factor: float, stamp: int = 0) -> list[float]:
    """Any growing column smoothed by `factor`, kept per column and factor.

    `stamp` moves when earlier points were replaced (as `Ema.extend`)."""
    key = (id(column), factor)
    cached = _EMAS.get(key)
    if cached is None or cached.column is not column:
        if len(_EMAS) > 512:  # stores come and go with runs: keep the cache small
            _EMAS.clear()
        cached = _EMAS[key] = Ema(factor, column)
    return cached.extend(stamp)


def losses(store: RunStore) -> tuple[tuple[str, str, str], ...]:
    """The loss columns to draw.

    They are the engine's AR CE and flow loss, or, for another trainer's run (which logs one
    train loss), its `loss`."""
    cols = store.columns
    if (
        store.steps
        and all(math.isnan(cols[n][-1]) for n, _, _ in LOSSES)
        and math.isfinite(cols["loss"][-1])
    ):
        return (("loss", "loss", "cyan"),)
    return LOSSES


SCALE_APART = 10.0  # two losses whose typical sizes differ more than this get an axis each
RECENT = 200  # the points a loss's typical size is taken over: its latest


def _apart(store: RunStore, names: list[str]) -> str | None:
    """The smaller of two losses whose scales are SCALE_APART apart, or None.

    It is drawn on its own axis (the flow loss near 0.05 beside the AR CE near 2), not flat
    along the other's floor."""
    if len(names) != 2:
        return None
    sizes = []
    for name in names:
        size = _typical_size(store, name)
        if size is None:
            return None
        sizes.append(size)
    small, large = sorted(zip(sizes, names, strict=True))
    if small[0] > 0 and large[0] / small[0] > SCALE_APART:
        return small[1]
    return None


def _typical_size(store: RunStore, name: str) -> float | None:
    """The median size of a loss's latest RECENT finite values (None: none is finite)."""
    recent = [abs(v) for v in store.columns[name][-RECENT:] if math.isfinite(v)]
    return sorted(recent)[len(recent) // 2] if recent else None


def loss_chart(store: RunStore, smoothing: float = 0.0, log: bool = False) -> ChartSpec:
    """The train losses chart.

    With `smoothing` (an EMA factor in [0, 1)), the smoothed curves are drawn on top of the raw
    ones, drawn faint. `log` gives a log y axis."""
    curves: list[Curve] = []
    drawn = losses(store)
    apart = _apart(store, [name for name, _, _ in drawn])
    stamp = store.replaced_steps  # the columns are the store's own, live
    for name, label, color in drawn:
        right = name == apart
        if right:
            label = f"{label} (right axis)"
        raw = Curve(label, store.steps, store.columns[name], color, right=right, stamp=stamp)
        if smoothing > 0:
            curves += _smoothed(store, name, raw, smoothing)
        else:
            curves.append(raw)
    smooth = f"EMA {smoothing:g}, debiased" if smoothing > 0 else "no smoothing"
    title = f"training losses  [{smooth}; {'log' if log else 'linear'} scale]"
    return ChartSpec(title, "step", "loss (log scale)" if log else "loss", tuple(curves), ylog=log)


def _smoothed(store: RunStore, name: str, raw: Curve, smoothing: float) -> list[Curve]:
    """A loss's raw curve drawn faint, and its EMA (`smoothing`) on top of it."""
    return [
        replace(raw, label=f"{raw.label} raw", faint=True),
        replace(raw, label=f"{raw.label} EMA {smoothing:g}", ys=ema(store, name, smoothing)),
    ]
