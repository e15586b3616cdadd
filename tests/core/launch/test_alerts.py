"""Every warning rule on both sides of its threshold, and first-seen times kept."""

from __future__ import annotations

import math
import time

import pytest

from fontaine_tui.core.host.memory import HostRam
from fontaine_tui.core.host.nvml import GpuSample
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.log.records import Event
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.run.exits import ExitInfo
from fontaine_tui.core.watch import alert_book
from fontaine_tui.core.watch import alerts as w
from fontaine_tui.model.readout import run_events

T0 = 1_800_000_000.0
GIB = 1 << 30
GATES = dict(load_preset("demosonly_1gpu").gates)  # gpu_hours 12, step_s estimate 25-32 s
CTX = w.RunContext(steps=1000, launched_at=T0, gpus_used=1)


def store_with(
    n: int,
    step_s: float = 30.0,
    data_s: float = 0.5,
    loss: float = 1.0,
    interval: float | None = None,
    losses: dict[int, float] | None = None,
) -> RunStore:
    st = RunStore()
    st.add_object(
        {
            "kind": "meta",
            "step": 0,
            "time": T0,
            "schema": 1,
            "run": "r",
            "world_size": 1,
            "device": "cuda:0",
        },
        1,
    )
    for s in range(1, n + 1):
        st.add_object(
            {
                "kind": "train",
                "step": s,
                "time": T0 + s * (interval or step_s),
                "loss": (losses or {}).get(s, loss),
                "ar_ce": 0.5,
                "flow_loss": 0.5,
                "lr": 1e-4,
                "grad_norm": 1.0,
                "step_s": step_s,
                "data_s": data_s,
                "samples": s * 96,
            },
            s + 1,
        )
    return st


def tel(
    util: float | None = 90.0, avail_frac: float = 0.5, total: int = 100 * GIB
) -> TelemetrySnapshot:
    gpu = GpuSample("GPU-x", 0, 0, "H100", util, GIB, 80 * GIB, 300.0, 50.0, ())
    return TelemetrySnapshot(T0, (gpu,), "", HostRam(total, int(total * avail_frac), "meminfo"), "")


def exit_info(last: int, status: str = "killed", ckpt: int | None = 500) -> ExitInfo:
    if status == "killed":
        return ExitInfo(None, "SIGKILL", False, last, ckpt, "", "")
    if status == "stopped":
        return ExitInfo(
            130, "SIGINT", False, last, ckpt, "end", f"stopped by SIGINT at step {last}"
        )
    if status == "oom":
        return ExitInfo(1, None, True, last, ckpt, "error", "RuntimeError: CUDA out of memory")
    return ExitInfo(0, None, False, last, ckpt, "end", f"finished at step {last}")


def now_after(st: RunStore, dt: float = 1.0) -> float:
    return st.columns["time"][-1] + dt


def run(rule, st, t=None, now=None, process=None, gates=GATES, ctx=CTX):
    return rule(st, t, gates, now if now is not None else now_after(st), process, ctx)


# -- first poll ------------------------------------------------------------------------------


def test_first_poll_waits_for_three_train_records() -> None:
    assert run(w.first_poll, store_with(2), tel()) is None
    got = run(w.first_poll, store_with(3), tel(util=75.0, avail_frac=0.4))
    assert got.severity == "info" and got.rule == "first-poll"
    assert got.numbers["step_s"] == 30.0 and got.numbers["gpu_util_pct"] == 75.0
    assert got.numbers["ram_available"] == 40 * GIB
    assert "GPU util 75 %" in got.message and "RAM free 40.0 GiB of 100.0" in got.message


def test_first_poll_without_gpu_says_why() -> None:
    t = TelemetrySnapshot(T0, None, "NVML: driver not loaded", None, "x")
    got = run(w.first_poll, store_with(3), t)
    assert "no GPU telemetry (NVML: driver not loaded)" in got.message
    assert "gpu_util_pct" not in got.numbers


# -- starvation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data_s", "fires"), [(0.24 * 30, False), (0.25 * 30, False), (0.26 * 30, True)]
)
def test_starvation_by_data_wait(data_s: float, fires: bool) -> None:
    got = run(w.starvation, store_with(12, data_s=data_s), tel(util=95.0))
    assert (got is not None) == fires
    if fires:
        assert got.numbers["data_frac"] == pytest.approx(0.26)
        assert "26%" in got.message


@pytest.mark.parametrize(("util", "fires"), [(59.0, True), (60.0, False), (None, False)])
def test_starvation_by_gpu_util_while_training(util: float | None, fires: bool) -> None:
    got = run(w.starvation, store_with(12), tel(util=util))
    assert (got is not None) == fires
    # not while the process is gone (nothing is training)
    assert run(w.starvation, store_with(12), tel(util=10.0), process=exit_info(12)) is None


def test_starvation_waits_for_a_full_window_past_the_loaders_start() -> None:
    """The first step's wait is the loader's workers starting: never starvation on its own."""
    st = RunStore()
    st.add_object({"kind": "event", "step": 0, "time": T0, "event": "start", "detail": ""}, 1)
    for step in range(1, 12):
        data_s = 20.0 if step == 1 else 0.2  # the workers' start-up, then a healthy loader
        st.add_object(
            {"kind": "train", "step": step, "time": T0 + step, "loss": 1.0,
             "step_s": 30.0 if step == 1 else 10.0, "data_s": data_s}, step + 1
        )  # fmt: skip
        got = run(w.starvation, st, tel(util=95.0))
        assert got is None, (step, got)
    assert w.data_wait(st) == pytest.approx(0.02)
    st.add_object(
        {"kind": "train", "step": 12, "time": T0 + 12, "loss": 1.0, "step_s": 10.0, "data_s": 9},
        13,
    )
    assert w.data_wait(st) == pytest.approx(10.8 / 100)  # the window moves on, a full one


def test_starvation_gate_from_preset_overrides() -> None:
    gates = {**GATES, "starvation_data_frac": 0.5}
    assert run(w.starvation, store_with(12, data_s=0.3 * 30), tel(), gates=gates) is None


# -- RAM pressure ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frac", "severity"),
    [(0.11, None), (0.10, None), (0.09, "warn"), (0.05, "warn"), (0.049, "alert")],
)
def test_ram_pressure(frac: float, severity: str | None) -> None:
    got = run(w.ram_pressure, store_with(1), tel(avail_frac=frac))
    assert (got.severity if got else None) == severity
    if got:
        assert got.numbers["available_frac"] == pytest.approx(frac, abs=1e-9)


def test_ram_pressure_unknown_ram_is_silent() -> None:
    t = TelemetrySnapshot(T0, None, "x", None, "no /proc/meminfo")
    assert run(w.ram_pressure, store_with(1), t) is None


# -- s/step above the estimate ---------------------------------------------------------------


@pytest.mark.parametrize(("step_s", "fires"), [(31.9, False), (32.0, False), (32.5, True)])
def test_slow_steps_against_estimate(step_s: float, fires: bool) -> None:
    got = run(w.slow_steps, store_with(10, step_s=step_s), tel())
    assert (got is not None) == fires
    if fires:
        assert "1x A100 80GB, full eff-96 step" in got.message
        assert "25 s–32 s" in got.message and "not necessarily this host" in got.message


def test_slow_steps_without_an_estimate_is_silent() -> None:
    gates = {**GATES, "step_s_estimate_max": math.nan}
    assert run(w.slow_steps, store_with(10, step_s=500.0), tel(), gates=gates) is None


# -- GPU-hours -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hours", "severity"), [(9.5, None), (9.6, "warn"), (11.99, "warn"), (12.0, "alert")]
)
def test_gpu_hours_one_gpu(hours: float, severity: str | None) -> None:
    st = store_with(3)
    got = run(w.gpu_hours, st, tel(), now=T0 + hours * 3600)
    assert (got.severity if got else None) == severity
    if got:
        assert got.numbers["gpu_hours"] == pytest.approx(hours)


def test_gpu_hours_count_every_gpu_and_none_on_cpu() -> None:
    st = store_with(3)
    eight = w.RunContext(1000, T0, 8)
    got = run(w.gpu_hours, st, tel(), now=T0 + 1.5 * 3600, ctx=eight)  # 12 GPU-hours
    assert got.severity == "alert" and got.numbers["gpus"] == 8
    cpu = w.RunContext(1000, T0, 0)
    assert run(w.gpu_hours, st, tel(), now=T0 + 100 * 3600, ctx=cpu) is None


def test_gpu_hours_clock_stops_when_the_run_exits() -> None:
    st = store_with(3, step_s=30.0)  # last record at T0 + 90 s
    got = run(w.gpu_hours, st, tel(), now=T0 + 20 * 3600, process=exit_info(3))
    assert got is None


# -- stall -----------------------------------------------------------------------------------


def test_stall_uses_three_times_the_median_interval() -> None:
    st = store_with(20, interval=30.0)  # median gap 30 s -> limit 90 s
    last = st.columns["time"][-1]
    assert run(w.stall, st, tel(), now=last + 90.0) is None
    got = run(w.stall, st, tel(), now=last + 91.0)
    assert got is not None and got.numbers["limit_s"] == 90.0
    assert "last step 20" in got.message


def test_stall_has_a_floor_of_sixty_seconds() -> None:
    st = store_with(20, interval=2.0)  # 3 x 2 s = 6 s, floor 60 s
    last = st.columns["time"][-1]
    assert run(w.stall, st, tel(), now=last + 59.0) is None
    assert run(w.stall, st, tel(), now=last + 61.0).numbers["limit_s"] == 60.0


def test_a_long_probe_or_checkpoint_is_a_sign_of_life() -> None:
    st = store_with(20, interval=30.0)
    last = st.columns["time"][-1]
    st.add_object({"kind": "eval", "step": 20, "time": last + 80.0, "eval_chunk_mae": 1.0}, 99)
    assert run(w.stall, st, tel(), now=last + 169.0) is None  # 89 s after the probe
    assert run(w.stall, st, tel(), now=last + 171.0) is not None
    st.add_object({"kind": "checkpoint", "step": 20, "time": last + 150.0, "path": "c"}, 100)
    assert run(w.stall, st, tel(), now=last + 171.0) is None


def test_stall_not_reported_after_the_logs_end_or_error() -> None:
    """A run whose log (or a foreign source: an MLflow run's status) says it ended, or
    failed, is quiet, not stalled, with no process to poll (attached)."""
    for event in ("end", "error"):
        st = store_with(20, interval=2.0)
        assert run(w.stall, st, tel(), now=now_after(st, 1000)) is not None
        st.add(Event(20, st.columns["time"][-1], event, "MLflow run status"))
        assert run(w.stall, st, tel(), now=now_after(st, 1000)) is None, event


def test_stall_not_reported_after_exit() -> None:
    st = store_with(20, interval=2.0)
    assert run(w.stall, st, tel(), now=now_after(st, 1000), process=exit_info(20)) is None


@pytest.mark.parametrize("event", ["end", "error"])
def test_a_log_that_ended_or_failed_is_over_not_stalled(event: str) -> None:
    """An attached run (no process of ours to poll) whose log's last event says it is over:
    a clean end, or a failure (the engine's error event, a foreign source's failed status)."""
    st = store_with(20, interval=2.0)
    st.add_object(
        {
            "kind": "event",
            "step": 20,
            "time": st.columns["time"][-1],
            "event": event,
            "detail": "MLflow run status FAILED",
        },
        99,
    )
    assert run(w.stall, st, tel(), now=now_after(st, 1000)) is None
    st.add_object(
        {
            "kind": "event",
            "step": 20,
            "time": st.columns["time"][-1] + 5,
            "event": "resume",
            "detail": "resumed",
        },
        100,
    )  # it goes on: watched again
    assert run(w.stall, st, tel(), now=now_after(st, 1000)) is not None


# -- NaN / Inf loss --------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nonfinite_loss_alerts(bad: float) -> None:
    got = run(w.nonfinite_loss, store_with(12, losses={11: bad}), tel())
    assert got.severity == "alert" and "at step 11" in got.message
    assert got.numbers["step"] == 11


def test_finite_loss_is_quiet() -> None:
    assert run(w.nonfinite_loss, store_with(12, loss=1e30), tel()) is None


# -- process exited early --------------------------------------------------------------------


def test_sigkill_mid_run_is_an_incident_with_the_last_step() -> None:
    got = run(w.exited_early, store_with(523), tel(), process=exit_info(523))
    assert got.severity == "alert"
    assert "killed by SIGKILL at step 523 (last checkpoint step 500)" in got.message
    assert got.numbers["last_step"] == 523 and got.numbers["checkpoint_step"] == 500


def test_finished_at_the_last_step_is_not_early() -> None:
    st = store_with(1000, step_s=1.0)
    assert run(w.exited_early, st, tel(), process=exit_info(1000, "finished")) is None
    assert run(w.exited_early, st, tel(), process=None) is None
    got = run(
        w.exited_early, store_with(999, step_s=1.0), tel(), process=exit_info(999, "finished")
    )
    assert got is not None  # exit 0 one step short is still early


def test_stopped_is_a_warning_and_oom_an_alert() -> None:
    assert (
        run(w.exited_early, store_with(40), tel(), process=exit_info(40, "stopped")).severity
        == "warn"
    )
    got = run(w.exited_early, store_with(40), tel(), process=exit_info(40, "oom"))
    assert got.severity == "alert" and "out of memory" in got.message


# -- the book --------------------------------------------------------------------------------


def test_book_keeps_first_seen_and_forgets_cleared() -> None:
    preset = load_preset("demosonly_1gpu")
    book = alert_book.WarningBook()
    st = store_with(12)
    first = alert_book.evaluate(book, st, preset, tel(avail_frac=0.07), T0 + 1000)
    ram = next(x for x in first if x.rule == "ram")
    assert ram.since == T0 + 1000 and [x.rule for x in book.last_new].count("ram") == 1
    again = alert_book.evaluate(book, st, preset, tel(avail_frac=0.03), T0 + 2000)
    ram2 = next(x for x in again if x.rule == "ram")
    assert ram2.severity == "alert" and ram2.since == T0 + 1000  # first seen kept
    assert [x.rule for x in again][0] == "ram"  # most severe first
    cleared = alert_book.evaluate(book, st, preset, tel(avail_frac=0.5), T0 + 3000)
    assert "ram" not in [x.rule for x in cleared]
    back = alert_book.evaluate(book, st, preset, tel(avail_frac=0.07), T0 + 4000)
    assert next(x for x in back if x.rule == "ram").since == T0 + 4000
    # the first-poll report is made once and kept as first made
    polls = [x for x in back if x.rule == "first-poll"]
    assert len(polls) == 1 and polls[0].since == T0 + 1000


def test_context_counts_gpus_from_the_meta_record() -> None:
    preset = load_preset("smoke")
    assert alert_book.context_for(store_with(1), preset).gpus_used == 1  # meta says cuda:0
    st = RunStore()
    st.add_object({"kind": "meta", "step": 0, "time": T0, "device": "cpu", "world_size": 1}, 1)
    assert alert_book.context_for(st, preset, tel()).gpus_used == 0


def test_before_the_meta_record_every_nodes_gpus_count(tmp_path) -> None:
    """A 2-node preset with 4 GPUs per node holds 8 GPUs towards the GPU-hours gate."""
    from tests.core.launch.conftest import preset_variant

    path = preset_variant(
        tmp_path,
        "demosonly_1gpu",
        nproc='4\nnnodes = 2\nrdzv_endpoint = "head:29500"',
        batch_size="96",
        backward_chunks="1",
        init='""',
    )
    preset = load_preset(str(path))
    assert alert_book.context_for(RunStore(), preset, tel()).gpus_used == 8
    # device cpu
    assert alert_book.context_for(RunStore(), load_preset("smoke"), tel()).gpus_used == 0


def _looks(st: RunStore, looks: int = 200) -> float:
    start = time.perf_counter()
    for _ in range(looks):
        w.data_wait(st)
    return time.perf_counter() - start


def test_a_look_costs_the_same_however_many_events_the_run_logged() -> None:
    """A watcher looks at every record: a look that walked all of a run's events made a log
    of N events cost N x N (a replay of 20,000 start events took 315 s instead of 19 s)."""
    few, many = store_with(20_000), store_with(20_000)
    for s in range(1, 20_000):
        event = {"kind": "event", "step": s, "time": T0 + s, "event": "start", "detail": ""}
        many.add_object(event, 30_000 + s)
    assert w.data_wait(few) == pytest.approx(0.5 / 30)
    assert w.data_wait(many) is None  # every step a warm one: no window to judge
    for s in range(20_001, 20_000 + 2 * w.WINDOW):  # the loader runs on, warm no more
        many.add_object(
            {"kind": "train", "step": s, "time": T0 + s, "loss": 1.0, "step_s": 30.0,
             "data_s": 0.5}, 60_000 + s
        )  # fmt: skip
    assert w.data_wait(many) == pytest.approx(0.5 / 30)
    _looks(few, 20)  # warm both
    assert _looks(many) < 3 * _looks(few) + 0.05


def _panel(st: RunStore, looks: int = 20) -> float:
    start = time.perf_counter()
    for _ in range(looks):
        run_events(st, limit=6)
    return time.perf_counter() - start


def test_the_events_panel_reads_only_the_last_events() -> None:
    few, many = store_with(10), store_with(10)
    for s in range(1, 50_001):
        event = {"kind": "event", "step": 10, "time": T0, "event": f"e{s}"}
        many.add_object(event, 100 + s)
        if s > 49_990:
            few.add_object(event, 100 + s)
    assert [e.text for e in run_events(many, limit=6)] == [f"e{s}" for s in range(49_995, 50_001)]
    _panel(few, 5)  # warm
    assert _panel(many) < 3 * _panel(few) + 0.05  # as a run of a few events, not 50,000
