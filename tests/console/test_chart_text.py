"""The chart widget reads plotext's ANSI output with its own small decoder (ansi_text): the
same characters in the same colours as rich's general decoder, on the charts the console
draws (faint truecolour curves, braille envelopes, bounds with labels, a log axis)."""

from __future__ import annotations

import math

from rich.console import Console
from rich.text import Text

from fontaine_tui.core.charts.chart import Band, ChartSpec, Curve, HLine, Mark
from fontaine_tui.core.charts.loss import loss_chart
from fontaine_tui.core.log.records import TrainPoint
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.widgets.chart import Chart, ansi_text
from tests.console.conftest import SIZE


def cells(text: Text) -> list[tuple]:
    """Each character with its colour, background and weight as a terminal draws them."""
    con = Console(width=300, color_system="truecolor")
    out = []
    for seg in text.render(con):
        st = seg.style

        def key(c):
            return None if c is None else (c.type, c.number, c.triplet)

        for ch in seg.text:
            out.append(
                (
                    ch,
                    key(st.color) if st else None,
                    key(st.bgcolor) if st else None,
                    bool(st and st.bold),
                )
            )
    return out


def probes_like() -> ChartSpec:
    xs = [float(s) for s in range(500, 1001, 10)]
    curves = tuple(
        Curve(f"run{k}", xs, [math.sin(x / 90 + k) for x in xs], ("red", "magenta", "orange")[k])
        for k in range(3)
    )
    curves += (
        Curve("faint", xs, [0.5 * math.cos(x / 70) for x in xs], "cyan", faint=True),
        Curve("this run", xs[:4], [0.1, 0.2, 0.15, 0.3], "cyan", points=True),
    )
    band = Band(
        "envelope",
        xs,
        [math.sin(x / 90) - 0.3 for x in xs],
        [math.sin(x / 90) + 0.3 for x in xs],
        "gray",
    )
    return ChartSpec(
        "delta(s)",
        "step",
        "delta",
        curves,
        (HLine(0.3, "healthy <= +0.3000", "green"), HLine(1.0, "same-drift >= +1.0000", "red")),
        (Mark(1000.0, 0.7, "typed +0.7000 @ endpoint", "yellow"),),
        (480.0, 1020.0),
        "note",
        (band,),
    )


async def drawn(*specs: ChartSpec) -> list[str]:
    """What one Chart widget draws of each spec in turn, at SIZE, as plain text."""
    from textual.app import App

    class One(App):
        def compose(self):
            yield Chart(id="c", min_interval=0.0)

    app = One()
    seen = []
    async with app.run_test(size=SIZE) as pilot:
        chart = app.query_one(Chart)
        for spec in specs:
            chart.show(spec, force=True)
            await pilot.pause()
            seen.append(ansi_text(chart.plt.build()).plain)
    return seen


async def test_ansi_text_draws_what_richs_decoder_draws():
    from textual.app import App

    store = RunStore()
    for s in range(1, 3001):
        v = 2.0 * math.exp(-s / 900) + 0.05 * math.sin(s)
        store.add(TrainPoint(s, float(s), v, v * 0.8, v * 0.2, 3e-4, 1.0, 0.5, 0.01, 96.0))

    class One(App):
        def compose(self):
            yield Chart(id="c", min_interval=0.0)

    for spec in (probes_like(), loss_chart(store, 0.9), loss_chart(store, 0.0, log=True)):
        app = One()
        async with app.run_test(size=SIZE) as pilot:
            chart = app.query_one(Chart)
            chart.show(spec, force=True)
            await pilot.pause()
            ansi = chart.plt.build()
            assert "\x1b[38;2;" in ansi or not any(c.faint for c in spec.curves)
            ours, rich = ansi_text(ansi), Text.from_ansi(ansi)
            assert ours.plain == rich.plain
            assert cells(ours) == cells(rich)


def test_the_codes_plotext_writes_and_one_it_does_not():
    text = ansi_text(
        "\x1b[48;5;15m\x1b[38;5;0mab\x1b[0m c\x1b[1;38;2;0;105;105md\x1b[22me\x1b[7mf\x1b[0m"
    )
    assert text.plain == "ab cdef"
    # reverse video (7) is not a code plotext writes: ignored, the rest as rich reads it
    assert cells(text) == cells(
        Text.from_ansi(
            "\x1b[48;5;15m\x1b[38;5;0mab\x1b[0m c\x1b[1;38;2;0;105;105md\x1b[22mef\x1b[0m"
        )
    )


async def test_log_then_linear_leaves_no_log_tick_and_steps_are_whole():
    """`g` twice: the linear axis has its own ticks, none of the log axis's; the step axis is
    labelled in whole steps; a loss (never below zero) is not drawn below zero."""
    import re

    store = RunStore()
    for s in range(1, 77):  # 76 steps: plotext's own ticks fell on 75.8-like steps
        v = 2.0 * math.exp(-s / 30) + 0.01
        store.add(TrainPoint(s, float(s), v, v * 0.8, v * 0.2, 3e-4, 1.0, 0.5, 0.01, 96.0))

    # one chart, the log spec then the linear one: what a log axis left must not stay
    logged, linear = await drawn(loss_chart(store, 0.0, log=True), loss_chart(store, 0.0))
    ylabels = lambda text: set(re.findall(r"^\s*(-?[\d.e+]+)\s*[┤│┼├]", text, re.M))  # noqa: E731
    assert {"0.1", "1"} <= ylabels(logged), logged  # 1, 2, 5 times the powers of ten
    values = sorted(float(v) for v in ylabels(linear))  # evenly spaced: a linear axis's
    gaps = {round(b - a, 9) for a, b in zip(values, values[1:], strict=False)}
    assert len(values) >= 3 and len(gaps) == 1, linear
    assert not any(lbl.startswith("-") for lbl in ylabels(linear)), linear
    xlabels = linear.splitlines()[-3:]
    steps = [w for line in xlabels for w in re.findall(r"\b\d+(?:\.\d+)?\b", line)]
    assert steps and all("." not in w for w in steps), xlabels


async def test_lines_are_told_apart_without_colour_and_a_small_loss_has_its_own_axis():
    """Each line has its own marker, shown beside its label in the legend (NO_COLOR, a
    monochrome terminal); the flow loss (near 0.05) beside the AR CE (near 2) is drawn on a
    right axis of its own with its own ticks, not flat along the floor of the AR CE's."""
    import re

    store = RunStore()
    for s in range(1, 201):
        ce = 2.0 * math.exp(-s / 80) + 0.5
        flow = 0.05 * math.exp(-s / 60) + 0.01
        store.add(TrainPoint(s, float(s), ce + flow, ce, flow, 3e-4, 1.0, 0.5, 0.01, 96.0))
    spec = loss_chart(store, 0.9)
    assert [(c.label, c.right) for c in spec.curves] == [
        ("AR CE raw", False),
        ("AR CE EMA 0.9", False),
        ("flow (right axis) raw", True),
        ("flow (right axis) EMA 0.9", True),
    ]

    [drawn_text] = await drawn(spec)
    found = re.findall(r"(\S\S) (AR CE EMA 0\.9|flow \(right axis\) EMA 0\.9)", drawn_text)
    legend = {label: marker for marker, label in found}
    assert legend == {"AR CE EMA 0.9": "••", "flow (right axis) EMA 0.9": "++"}, drawn_text
    right = {float(v) for v in re.findall(r"[┤│├]\s*(-?[\d.]+)\s*$", drawn_text, re.M)}
    left = {float(v) for v in re.findall(r"^\s*(-?[\d.]+)\s*[┤│┼├]", drawn_text, re.M)}
    assert right and max(right) < 0.1 < max(left), drawn_text  # each axis at its own scale
    # without the right axis, the flow EMA would span less than a tenth of the chart's rows
    rows_with_plus = [i for i, line in enumerate(drawn_text.splitlines()) if "+" in line[10:-10]]
    assert max(rows_with_plus) - min(rows_with_plus) > 10, drawn_text
