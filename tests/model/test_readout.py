"""Pure helpers behind the screens: downsampling, probe rows, progress, literal text."""

from __future__ import annotations

import math
from array import array

from hypothesis import given
from hypothesis import strategies as st

from fontaine_tui.core.charts.chart import downsample
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.run.evidence import seen_probes
from fontaine_tui.core.verdict.rules import verdict_series
from fontaine_tui.model.readout import literal, probe_rows, progress, run_status, status_tone
from tests.console.conftest import make_run


def test_downsample_keeps_spikes_and_bounds_the_points():
    ys = array("d", (math.sin(i / 300) for i in range(10_000)))
    ys[4321] = 50.0
    ys[777] = -50.0
    ys[10] = math.nan
    xs, out = downsample(range(10_000), ys, 100)
    assert len(xs) <= 200 and 50.0 in out and -50.0 in out
    assert 4321 in xs and 777 in xs and xs == sorted(xs)
    assert all(math.isfinite(y) for y in out)


@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=False, width=32), max_size=600),
    st.integers(1, 80),
)
def test_downsample_extremes_survive(values, width):
    xs, ys = downsample(list(range(len(values))), values, width)
    finite = [v for v in values if math.isfinite(v)]
    assert len(xs) <= max(2 * width, len(finite))
    if finite:
        assert min(ys) == min(finite) and max(ys) == max(finite)
    assert all(values[x] == y for x, y in zip(xs, ys, strict=True))


@given(
    st.lists(
        st.tuples(
            st.lists(
                st.one_of(
                    st.floats(allow_nan=True, allow_infinity=True, width=32),
                    st.sampled_from([0.0, -0.0, 1.0, -1.0]),
                ),
                max_size=900,
            ),
            st.integers(0, 3000),  # where the column is cut after this growth (a resume)
        ),
        min_size=1,
        max_size=8,
    ),
    st.integers(1, 60),
)
def test_downsample_of_a_growing_column_kept_per_block_is_the_same(growths, width):
    # a live column grows by appends and is cut when the store's replaced_steps moves: the
    # extremes kept per block from call to call give the very points a fresh pass gives
    ys = array("d")
    stamp = 0
    for added, cut in growths:
        ys.extend(added)
        if cut < len(ys) and cut % 3 == 0:
            del ys[cut:]
            stamp += 1
        xs = range(len(ys))
        want = downsample(xs, ys, width)
        got = downsample(xs, ys, width, stamp)
        assert got[0] == want[0]
        assert [math.copysign(1, y) for y in got[1]] == [math.copysign(1, y) for y in want[1]]
        assert [y for y in got[1]] == [y for y in want[1]]


def test_probe_rows_take_deltas_from_the_verdict(tmp_path, preset):
    store = load_log(make_run(tmp_path / "run"))
    rows = probe_rows(seen_probes(store, hidden=False), verdict_series(store, preset))
    assert [r.step for r in rows] == [250, 500, 750, 1000]
    assert rows[0].delta is None and rows[1].delta == 0.0
    assert round(rows[3].delta, 4) == 0.6929 and round(rows[3].train_delta, 4) == 0.16
    assert set(rows[3].breakdown) == {"demos", "rig"}


def test_progress_pace_eta_gpu_hours(tmp_path, preset):
    store = load_log(make_run(tmp_path / "run", upto=600))
    p = progress(store, preset)
    assert (p.step, p.total, p.last_step_s, p.median_step_s) == (600, 1000, 0.5, 0.5)
    assert p.eta_s == 200.0 and p.gpu_hours_gate == 12.0
    assert p.gpu_hours is None  # counted by the gate rule (core.watch.alerts), see test_gpu_hours
    assert round(p.data_frac, 3) == 0.02


def test_status_words():
    assert run_status("launch", None, False, False) == "launching"
    assert run_status("launch", None, True, False) == "running"
    assert run_status("launch", 137, True, False) == "failed (exit 137)"
    assert run_status("launch", 0, True, True) == "finished"
    assert run_status("launch", "SIGINT", True, False) == "stopped (SIGINT)"
    assert [status_tone("launch", code, True) for code in (None, 0, "SIGTERM", 1)] == [
        "live",
        "finished",
        "stopped",
        "failed",
    ]
    assert status_tone("attach", None, True, failed=True) == "failed"
    assert run_status("attach", None, True, False) == "attached"
    assert run_status("replay", None, True, True) == "replay (ended)"
    assert run_status("attach", None, True, True, failed=True) == "attached (failed)"


def test_literal_escapes_every_control_character():
    assert literal("a\x1b[1mb\x9bc\x7f\r") == "a\\x1b[1mb\\x9bc\\x7f\\r"
    assert literal("x\nVERDICT: SAME-DRIFT") == "x\\nVERDICT: SAME-DRIFT"  # one line
    assert literal("[red]x[/]\tz") == "[red]x[/]   z"


async def test_gpu_hours_in_the_header_are_the_gate_rules(tmp_path):
    """A CUDA run's hours come from core.watch.alerts' gate rule; a CPU run holds no GPU."""
    import json

    from fontaine_tui.core.watch import alert_book
    from fontaine_tui.widgets.run_header import RunHeader
    from tests.console.conftest import SIZE, console, loaded, text
    from tests.logs import records_upto

    recs = records_upto(600)
    recs[0] = {**recs[0], "device": "cuda:0", "world_size": 2}
    folder = tmp_path / "run"
    folder.mkdir()
    log = folder / "train_log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 600)
        store, preset = app.session.store, app.session.preset
        ctx = alert_book.context_for(store, preset)
        expected = (store.columns["time"][-1] - store.metas[0].time) / 3600 * ctx.gpus_used
        assert ctx.gpus_used == 2 and abs(app.view.progress.gpu_hours - expected) < 1e-9
        assert f"GPU-h {expected:.2f}/12" in text(
            app.screen.query_one(RunHeader).query_one("#pace")
        )

    cpu = console(make_run(tmp_path / "cpu", upto=600))
    async with cpu.run_test(size=SIZE) as pilot:
        await loaded(pilot, 600)
        assert cpu.view.progress.gpu_hours is None
        assert "GPU-h —/12 (no GPU)" in text(cpu.screen.query_one(RunHeader).query_one("#pace"))


def test_data_wait_is_flagged_by_the_presets_starvation_gate(tmp_path, preset):
    """The telemetry panel's red is the starvation rule's own data-wait test (alerts.py)."""
    from dataclasses import replace

    store = load_log(make_run(tmp_path / "run", upto=600))  # data_s/step_s = 0.02
    gate = preset.gates["starvation_data_frac"]
    assert progress(store, preset).data_starved is (0.02 > gate)
    tight = replace(preset, gates={**preset.gates, "starvation_data_frac": 0.01})
    loose = replace(preset, gates={**preset.gates, "starvation_data_frac": 0.5})
    assert progress(store, tight).data_starved is True
    assert progress(store, loose).data_starved is False
