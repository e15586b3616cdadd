"""The stall diagnosis: every case of its precedence gives its line and numbers, the RAM trend
from a synthetic history, the WarningBook's histories, and real process states.

Real processes give the stopped (SIGSTOP), zombie (a child its parent does not reap) and gone
states through `sample_process`. D state (uninterruptible I/O) cannot be produced on purpose
reliably without root or a hung filesystem, so it is covered by the pure-function tests only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys
import time

import pytest

from fontaine_tui.core.host.memory import HostRam
from fontaine_tui.core.host.nvml import GpuSample
from fontaine_tui.core.host.telemetry import (
    ProcessSample,
    TelemetrySnapshot,
    gone_reason,
    sample,
    sample_process,
    sample_remote,
)
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.watch import alert_book, alerts
from fontaine_tui.core.watch import stall as s

T0 = 1_800_000_000.0
GIB = 1 << 30
PID, WORKER = 4242, 4300
PRESET = load_preset("demosonly_1gpu")  # eval_every 250, save_every 500, stall floor 60 s
QUIET = s.Silence(
    quiet_s=400.0,
    limit_s=90.0,
    median_s=30.0,
    factor=3.0,
    floor_s=60.0,
    last_step=20,
    eval_every=250,
    save_every=500,
)
NOW = T0 + 1000.0
FALLING = tuple(
    (NOW - 60.0 + 5.0 * i, int(5 * GIB - i * GIB / 12), 64 * GIB) for i in range(13)
)  # 1 GiB/min over a minute, 4 GiB free at the end


def proc(
    state: str = "sleeping", cpu: float | None = 1.0, workers: tuple[str, ...] = ("sleeping",)
) -> ProcessSample:
    states = ((PID, state), *((WORKER + i, w) for i, w in enumerate(workers)))
    return ProcessSample(PID, 3 * GIB, cpu, len(states), state, states)


def snap(
    p: ProcessSample | None = None,
    util: float | None = 0.0,
    gpus: int = 1,
    free: float = 40.0,
    reason: str = "no engine process",
    at: float = NOW,
) -> TelemetrySnapshot:
    rows = (
        None
        if util is None
        else tuple(
            GpuSample(f"GPU-{i}", i, i, "H100", util, GIB, 80 * GIB, 300.0, 50.0, ())
            for i in range(gpus)
        )
    )
    return TelemetrySnapshot(
        at,
        rows,
        "no NVIDIA GPU" if rows is None else "",
        HostRam(64 * GIB, int(free * GIB), "meminfo"),
        "",
        p,
        reason,
        "",
        PID if p is not None else None,
    )


def gone() -> TelemetrySnapshot:
    return TelemetrySnapshot(
        NOW,
        None,
        "no NVIDIA GPU",
        HostRam(64 * GIB, 40 * GIB, "meminfo"),
        "",
        None,
        gone_reason(PID),
        "",
        PID,
    )


def steady(n: int = 13) -> tuple[tuple[float, int, int], ...]:
    return tuple((NOW - 5.0 * (n - 1 - i), 40 * GIB, 64 * GIB) for i in range(n))


# -- the matrix: each case of the precedence, its headline and severity -------------------------

CASES = {
    "gone": (
        gone(),
        1,
        (),
        "gone",
        "alert",
        "engine pid 4242 is gone and no exit was seen: it died outside the console (the "
        "OOM killer, a scheduler, `kill -9`) — look at the end of engine.out.log and "
        "`dmesg`",
    ),
    "zombie": (
        snap(proc("zombie", 0.0, ())),
        1,
        (),
        "zombie",
        "alert",
        "engine pid 4242 is a zombie (exited, not reaped): the trainer is dead — look at "
        "the end of engine.out.log for its last error",
    ),
    "stopped": (
        snap(proc("stopped", 0.0, ("stopped",))),
        1,
        (),
        "stopped",
        "warn",
        "engine pid 4242 stopped (SIGSTOP / Ctrl-Z) at the last poll: nothing runs "
        "until it is continued — `kill -CONT 4242 4300`",
    ),
    "traced worker": (
        snap(proc("sleeping", 0.0, ("tracing-stop",))),
        1,
        (),
        "stopped",
        "warn",
        "pid 4300 of the engine tree held by a tracer (tracing-stop: gdb, strace, "
        "py-spy) at the last poll: nothing runs until it lets go — detach the "
        "tracer",
    ),
    "D state": (
        snap(proc("disk-sleep")),
        1,
        ((NOW - 5, "disk-sleep"),),
        "disk-sleep",
        "warn",
        "engine pid 4242 in D state (uninterruptible I/O) for the last 2 polls: likely "
        "blocked on the filesystem — look at the data_dir / output_dir mount (NFS, a "
        "full or slow disk)",
    ),
    "D state worker": (
        snap(proc("sleeping", 0.0, ("disk-sleep",))),
        1,
        (),
        "disk-sleep",
        "warn",
        "pid 4300 of the engine tree in D state (uninterruptible I/O) at the last "
        "poll: likely blocked on the filesystem",
    ),
    "dead worker": (
        snap(proc("sleeping", 0.0, ("zombie", "sleeping"))),
        1,
        (),
        "dead-child",
        "warn",
        "pid 4300 of the engine tree is a zombie at the last poll (a "
        "DataLoader worker or a rank exited) and the engine waits on it — look at "
        "engine.out.log for its error; it will not come back: stop the run and "
        "resume",
    ),
    "GPU busy": (
        snap(proc("running", 100.0), util=97.0),
        1,
        (),
        "gpu-busy",
        "warn",
        "GPU busy (97 %) with no record: a long step or eval probe, not a hang — wait, "
        "or compare with eval_every (250)",
    ),
    "GPU busy, 8 GPUs": (
        snap(proc(), util=97.0, gpus=8),
        8,
        (),
        "gpu-busy",
        "warn",
        "a long step or eval probe, not a hang — wait, or compare with "
        "eval_every (250); on 8 GPUs a hung NCCL collective reads busy too: if "
        "it lasts, `py-spy dump --pid 4242`",
    ),
    "hang, 8 GPUs": (
        snap(proc(), gpus=8),
        8,
        (),
        "hang",
        "warn",
        "GPU idle (0 %) and the engine sleeping (CPU 1 %): likely a hung collective "
        "(NCCL) or a DataLoader deadlock — `py-spy dump --pid 4242`",
    ),
    "hang, 1 GPU": (
        snap(proc()),
        1,
        (),
        "hang",
        "warn",
        "GPU idle (0 %) and the engine sleeping (CPU 1 %): likely a DataLoader "
        "deadlock or a wait on a lock or queue — `py-spy dump --pid 4242`",
    ),
    "CPU busy": (
        snap(proc("running", 180.0)),
        1,
        (),
        "cpu-busy",
        "warn",
        "engine busy on the CPU (180 % of a core) with the GPU idle (0 %): CPU-bound "
        "work (data decoding, a CPU fallback, a Python loop) or a busy-wait — "
        "`py-spy dump --pid 4242`",
    ),
    "CPU run, busy": (
        snap(proc("running", 100.0), util=None),
        0,
        (),
        "cpu-busy",
        "warn",
        "engine busy on the CPU (100 % of a core) on a CPU run: a long step, not "
        "a hang — wait, or compare with the median interval 30.0 s",
    ),
    "CPU run, GPU idle but unused": (
        snap(proc("running", 100.0), util=0.0),
        0,
        (),
        "cpu-busy",
        "warn",
        "on a CPU run: a long step, not a hang",
    ),
    "CPU run, sleeping": (
        snap(proc(), util=None),
        0,
        (),
        "hang",
        "warn",
        "engine sleeping (CPU 1 %) on a CPU run, so not computing: likely a "
        "DataLoader deadlock or a wait on a peer rank (gloo) — "
        "`py-spy dump --pid 4242`",
    ),
    "no GPU telemetry": (
        snap(proc(), util=None),
        1,
        (),
        "blind",
        "warn",
        "engine sleeping (CPU 1 %) and no GPU telemetry (no NVIDIA GPU): a hang "
        "cannot be told from a long GPU step here — `py-spy dump --pid 4242` "
        "shows which",
    ),
    "first look": (
        snap(proc("running", None), util=None),
        1,
        (),
        "cpu-busy",
        "warn",
        "engine busy on the CPU (state running, CPU not measured yet), no GPU "
        "telemetry (no NVIDIA GPU): CPU-bound work, a busy-wait, or a CUDA sync "
        "spinning on a long GPU step — `py-spy dump --pid 4242`",
    ),
    "remote, GPU idle": (
        snap(None, reason="remote run: engine process not sampled"),
        1,
        (),
        "unsampled",
        "warn",
        "GPU idle (0 %) and the engine process not sampled (remote run: engine "
        "process not sampled): likely a hang (NCCL, a DataLoader deadlock) or "
        "blocked I/O — `py-spy dump` the engine on its host",
    ),
    "remote, no GPU": (
        snap(None, util=None, reason="remote run: engine process not sampled"),
        1,
        (),
        "unsampled",
        "warn",
        "the engine process is not sampled (remote run: engine process not "
        "sampled) and no GPU telemetry (no NVIDIA GPU): a hang cannot be told "
        "from a long step — look at the end of engine.out.log, or `py-spy dump` "
        "the engine on its host",
    ),
    "remote state unknown": (
        snap(ProcessSample(PID, GIB, None, 1)),
        1,
        (),
        "hang",
        "warn",
        "GPU idle (0 %) and the engine in an unknown state (CPU not measured yet)",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_case_gives_its_line(case: str) -> None:
    t, gpus_used, states, cause, severity, headline = CASES[case]
    d = s.diagnose(QUIET, t, steady(), states, gpus_used)
    assert (d.cause, d.severity) == (cause, severity)
    assert headline in d.message
    assert d.message.startswith(
        "stall: no record for 400 s (limit 90 s = max(3 x median "
        "interval 30.0 s, 60 s)); last step 20. "
    )
    assert "; host RAM steady, 40.0 GiB free of 64.0" in d.message
    assert d.numbers["quiet_s"] == 400.0 and d.numbers["limit_s"] == 90.0
    assert d.numbers["ram_rate_bytes_per_min"] == pytest.approx(0.0, abs=1.0)
    assert "minutes_to_oom" not in d.numbers


def test_the_seen_part_lists_gpu_ram_and_process() -> None:
    d = s.diagnose(
        QUIET,
        snap(proc("disk-sleep", 2.0)),
        steady(),
        ((NOW - 10, "disk-sleep"), (NOW - 5, "disk-sleep")),
        1,
    )
    assert d.message.endswith(
        "Seen: GPU 0 %; host RAM steady, 40.0 GiB free of 64.0; engine "
        "pid 4242 disk-sleep for the last 3 polls, 2 processes, CPU 2 %, "
        "PSS 3.0 GiB."
    )
    assert d.numbers["state_polls"] == 3 and d.numbers["pid"] == PID
    assert d.numbers["cpu_pct"] == 2.0 and d.numbers["gpu_util_pct"] == 0.0
    assert d.numbers["mem"] == 3 * GIB and d.numbers["processes"] == 2


def test_a_poll_in_another_state_breaks_the_run_of_polls() -> None:
    history = (
        (NOW - 15, "disk-sleep"),
        (NOW - 10, "sleeping"),
        (NOW - 5, "disk-sleep"),
        (NOW, "disk-sleep"),
    )  # the current snapshot in the history counts once
    d = s.diagnose(QUIET, snap(proc("disk-sleep")), (), history, 1)
    assert "for the last 2 polls" in d.message and d.numbers["state_polls"] == 2


def test_precedence_peels_off_in_the_documented_order() -> None:
    """Everything wrong at once; removing the headline's condition gives the next case."""
    everything = dict(
        state="zombie",
        workers=("stopped", "disk-sleep", "zombie"),
        cpu=180.0,
        ram=FALLING,
        util=97.0,
    )
    steps = [
        ({}, "zombie"),
        ({"state": "sleeping"}, "stopped"),
        ({"workers": ("disk-sleep", "zombie")}, "disk-sleep"),
        ({"workers": ("zombie",)}, "dead-child"),
        ({"workers": ()}, "ram-out"),
        ({"ram": steady()}, "gpu-busy"),
        ({"util": 0.0}, "cpu-busy"),
        ({"cpu": 1.0}, "hang"),
        ({"util": None}, "blind"),
    ]
    got = []
    for change, _ in steps:
        everything.update(change)
        p = proc(str(everything["state"]), everything["cpu"], everything["workers"])
        t = snap(p, util=everything["util"], free=4.0)
        got.append(s.diagnose(QUIET, t, everything["ram"], (), 1).cause)
    assert got == [cause for _, cause in steps]


def test_gone_beats_everything_else() -> None:
    d = s.diagnose(QUIET, gone(), FALLING, (), 1)
    assert d.cause == "gone" and d.severity == "alert" and d.numbers["pid"] == PID
    assert "engine pid 4242 gone" in d.message


# -- the RAM trend -------------------------------------------------------------------------------


def test_falling_one_gib_a_minute_with_four_free_is_four_minutes_and_an_alert() -> None:
    d = s.diagnose(QUIET, snap(proc(), free=4.0), FALLING, (), 1)
    assert d.cause == "ram-out" and d.severity == "alert"
    assert d.numbers["ram_rate_bytes_per_min"] == pytest.approx(-GIB, rel=1e-6)
    assert d.numbers["minutes_to_oom"] == pytest.approx(4.0, rel=1e-6)
    assert d.numbers["ram_readings"] == 13
    assert (
        "host RAM falling 1.0 GiB/min, 4.0 GiB free: out of memory in ~4 min at this rate "
        "— loader workers' memory or a leak; look at the engine tree's PSS (3.0 GiB, 2 "
        "processes) and the host's other processes (`top -o RES`)"
    ) in d.message


def test_ram_running_out_raises_the_severity_under_another_headline() -> None:
    d = s.diagnose(QUIET, snap(proc("disk-sleep"), free=4.0), FALLING, (), 1)
    assert d.cause == "disk-sleep" and d.severity == "alert"
    assert "host RAM falling 1.0 GiB/min, 4.0 GiB free of 64.0" in d.message


def test_ram_falling_slowly_is_said_but_is_not_the_headline() -> None:
    slow = tuple(
        (t, int(20 * GIB + (12 - i) * GIB / 12), total)  # 1 GiB/min, 20 GiB left
        for i, (t, _, total) in enumerate(FALLING)
    )
    d = s.diagnose(QUIET, snap(proc(), free=20.0), slow, (), 1)
    assert d.cause == "hang" and d.severity == "warn"
    assert d.numbers["minutes_to_oom"] == pytest.approx(20.0, rel=1e-6)
    assert "host RAM falling 1.0 GiB/min, 20.0 GiB free of 64.0" in d.message


def test_the_trend_is_a_least_squares_slope() -> None:
    noisy = tuple(
        (t, a + (GIB // 4 if i % 2 else -GIB // 4), total)
        for i, (t, a, total) in enumerate(FALLING)
    )
    trend = s.ram_trend(noisy)
    assert trend is not None and trend.rate == pytest.approx(-GIB, rel=0.05)
    rising = tuple(
        reversed(
            [
                (t, a, total)
                for (_, a, total), (t, _, _) in zip(FALLING, reversed(FALLING), strict=True)
            ]
        )
    )
    up = s.ram_trend(rising)
    assert up is not None and up.rate == pytest.approx(GIB) and up.minutes_to_oom is None
    assert up.text() == "rising 1.0 GiB/min"
    mib = s.ram_trend(tuple((NOW + 10 * i, 10 * GIB - i * (100 << 20) // 6, 0) for i in range(4)))
    assert mib is not None and mib.text() == "falling 100 MiB/min"


@pytest.mark.parametrize(
    "history", [FALLING[:2], FALLING[:4], ()], ids=["two readings", "fifteen seconds", "none"]
)
def test_too_little_history_says_nothing_about_the_trend(history) -> None:
    d = s.diagnose(QUIET, snap(proc(), free=4.0), history, (), 1)
    assert s.ram_trend(history) is None
    assert d.cause == "hang" and d.severity == "warn"
    assert "ram_rate_bytes_per_min" not in d.numbers and "minutes_to_oom" not in d.numbers
    assert "host RAM 4.0 GiB free of 64.0 (no trend yet)" in d.message


def test_twenty_seconds_of_three_readings_is_enough() -> None:
    three = (
        (NOW - 20, 6 * GIB, 64 * GIB),
        (NOW - 10, 5 * GIB, 64 * GIB),
        (NOW, 4 * GIB, 64 * GIB),
    )  # 6 GiB/min
    d = s.diagnose(QUIET, snap(proc(), free=4.0), three, (), 1)
    assert d.cause == "ram-out" and d.numbers["minutes_to_oom"] == pytest.approx(40 / 60)
    assert "out of memory in under a minute" in d.message


# -- silence: the limit, and what the engine writes next -----------------------------------------


def stalled_store(n: int = 20, interval: float = 30.0) -> RunStore:
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
    for i in range(1, n + 1):
        st.add_object(
            {
                "kind": "train",
                "step": i,
                "time": T0 + i * interval,
                "loss": 1.0,
                "ar_ce": 0.5,
                "flow_loss": 0.5,
                "grad_norm": 1.0,
                "step_s": interval,
                "data_s": 0.1,
            },
            i + 1,
        )
    return st


def test_silence_below_the_limit_is_no_stall_whatever_the_process_says() -> None:
    st = stalled_store()
    last = st.columns["time"][-1]
    ctx = alert_book.context_for(st, PRESET)
    worst = snap(proc("zombie", 0.0, ()), at=last + 90.0)
    assert alerts.stall(st, worst, PRESET.gates, last + 90.0, None, ctx) is None
    st.add_object({"kind": "eval", "step": 20, "time": last + 80.0, "eval_chunk_mae": 1.0}, 99)
    assert alerts.stall(st, worst, PRESET.gates, last + 169.0, None, ctx) is None
    got = alerts.stall(st, worst, PRESET.gates, last + 171.0, None, ctx)
    assert got is not None and got.rule == "stall" and got.severity == "alert"
    assert got.numbers["quiet_s"] == pytest.approx(91.0)


def test_a_probe_step_with_the_gpu_busy_is_the_eval_probe() -> None:
    st = stalled_store(250, interval=1.0)  # median 1 s: the 60 s floor is the limit
    last = st.columns["time"][-1]
    ctx = alert_book.context_for(st, PRESET)
    got = alerts.stall(
        st, snap(proc("running", 100.0), util=97.0), PRESET.gates, last + 300.0, None, ctx
    )
    assert got.numbers["limit_s"] == 60.0
    assert (
        "GPU busy (97 %) with no record: likely the eval probe at step 250 (eval_every "
        "250), not a hang — wait"
    ) in got.message
    st.add_object({"kind": "eval", "step": 250, "time": last + 1.0, "eval_chunk_mae": 1.0}, 999)
    assert (
        "likely the eval probe"
        not in alerts.stall(st, snap(proc()), PRESET.gates, last + 300.0, None, ctx).message
    )


def test_a_save_step_in_d_state_names_the_checkpoint() -> None:
    st = stalled_store(500, interval=1.0)
    last = st.columns["time"][-1]
    st.add_object({"kind": "eval", "step": 500, "time": last + 1.0, "eval_chunk_mae": 1.0}, 999)
    ctx = alert_book.context_for(st, PRESET)
    got = alerts.stall(st, snap(proc("disk-sleep")), PRESET.gates, last + 300.0, None, ctx)
    assert got.message.count("; the checkpoint at step 500 (save_every 500) is next") == 1


# -- the book's histories ------------------------------------------------------------------------


def test_the_book_keeps_a_bounded_history_one_reading_per_snapshot() -> None:
    book = alert_book.WarningBook()
    for i in range(30):
        t = snap(proc(), free=40.0 - i, at=T0 + 5.0 * i)
        book.observe(t)
        book.observe(t)  # evaluated twice on one snapshot: one reading
    assert len(book.ram_history) == s.HISTORY == len(book.state_history)
    assert book.ram_history[-1] == (T0 + 145.0, 11 * GIB, 64 * GIB)
    assert [t for t, _ in book.state_history] == [T0 + 5.0 * i for i in range(18, 30)]
    book.observe(snap(proc("zombie"), at=T0))  # older than the last: not a poll
    assert book.state_history[-1] == (T0 + 145.0, "sleeping")
    book.observe(snap(None, reason="no engine process", at=T0 + 150.0))
    assert book.state_history[-1] == (T0 + 150.0, "unsampled")


def test_evaluate_feeds_the_trend_and_the_polls_to_the_stall() -> None:
    st = stalled_store()
    last = st.columns["time"][-1]
    book = alert_book.WarningBook()
    severities = []
    for i in range(13):  # 1 GiB/min for a minute, ending at 4 GiB free, D state throughout
        t = snap(proc("disk-sleep"), free=5.0 - i / 12, at=last + 400.0 + 5.0 * i)
        got = alert_book.evaluate(book, st, PRESET, t, t.time)
        stall = next(w for w in got if w.rule == "stall")
        severities.append(stall.severity)
    # no trend until 5 readings span 20 s; then ~4.7 min left: an alert
    assert severities == ["warn"] * 4 + ["alert"] * 9
    assert stall.since == last + 400.0  # first seen kept
    assert stall.numbers["minutes_to_oom"] == pytest.approx(4.0, rel=1e-6)
    assert "in D state (uninterruptible I/O) for the last 12 polls" in stall.message


# -- real processes ------------------------------------------------------------------------------


def wait_for_state(pid: int, want: str, deadline_s: float = 10.0) -> ProcessSample:
    end = time.monotonic() + deadline_s
    while True:
        got, reason = sample_process(pid)
        assert reason == "" and got is not None
        if got.state == want or time.monotonic() > end:
            return got
        time.sleep(0.05)


def test_a_real_stopped_process_is_stopped_and_says_kill_cont() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert wait_for_state(child.pid, "sleeping").state == "sleeping"
        os.kill(child.pid, signal.SIGSTOP)
        got = wait_for_state(child.pid, "stopped")
        assert got.state == "stopped" and got.states == ((child.pid, "stopped"),)
        t = sample(None, pid=child.pid)
        d = s.diagnose(QUIET, t, (), (), 1)
        assert d.cause == "stopped" and d.severity == "warn"
        assert f"engine pid {child.pid} stopped (SIGSTOP / Ctrl-Z)" in d.message
        assert f"`kill -CONT {child.pid}`" in d.message
        os.kill(child.pid, signal.SIGCONT)
        assert wait_for_state(child.pid, "sleeping").state == "sleeping"
    finally:
        child.kill()
        child.wait()


ZOMBIE_MAKER = (
    "import os, sys, time\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os._exit(0)\n"
    "print(pid, flush=True)\n"
    "time.sleep(60)\n"
)  # never waits: the child stays a zombie


def test_a_real_zombie_child_and_a_real_zombie_root() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", ZOMBIE_MAKER], stdout=subprocess.PIPE, text=True
    )
    try:
        zombie = int(parent.stdout.readline())
        end = time.monotonic() + 10
        while True:  # the child needs a moment to exit, the parent to reach its sleep
            tree, _ = sample_process(parent.pid)
            if (tree.pids_in("zombie") and tree.state == "sleeping") or time.monotonic() > end:
                break
            time.sleep(0.05)
        assert tree.pids_in("zombie") == (zombie,) and tree.state == "sleeping"
        d = s.diagnose(QUIET, snap(tree), (), (), 1)
        assert d.cause == "dead-child"
        assert f"pid {zombie} of the engine tree is a zombie" in d.message
        root, reason = sample_process(zombie)
        assert reason == "" and root.state == "zombie" and root.mem == 0
        d = s.diagnose(QUIET, snap(root), (), (), 1)
        assert d.cause == "zombie" and d.severity == "alert"
        assert f"engine pid {zombie} is a zombie (exited, not reaped)" in d.message
    finally:
        parent.kill()
        parent.wait()


def test_a_real_gone_process_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    t = sample(None, pid=child.pid)
    assert t.process is None and t.process_gone and t.engine_pid == child.pid
    assert t.process_reason == f"process {child.pid} is gone"
    d = s.diagnose(QUIET, t, (), (), 1)
    assert d.cause == "gone" and d.severity == "alert" and d.numbers["pid"] == child.pid
    assert not sample(None, pid=None).process_gone  # no pid asked: nothing is gone


def test_a_remote_snapshot_has_no_process_and_reads_unsampled() -> None:
    def run_here(argv: list[str]) -> bytes:  # the remote's commands, run on this host
        return subprocess.run(argv, capture_output=True, check=True).stdout

    t = asyncio.run(sample_remote(run_here, "here"))
    assert t.process is None and not t.process_gone and t.ram is not None
    d = s.diagnose(QUIET, t, (), (), 1)
    assert d.cause in ("unsampled", "gpu-busy")  # gpu-busy only where a GPU here works
    assert "remote run: engine process not sampled" in d.message


# -- the headline word for word: each way a case reads ------------------------------------------

SHORT = tuple(
    (NOW - 60.0 + 5.0 * i, int(1.5 * GIB - i * GIB / 12), 64 * GIB) for i in range(13)
)  # 1 GiB/min, half a GiB free at the end
EVAL_DUE = dataclasses.replace(QUIET, due="eval", last_step=250)
SAVE_DUE = dataclasses.replace(QUIET, due="checkpoint", last_step=500)
NO_EVERY = dataclasses.replace(QUIET, eval_every=0)
REMOTE = "remote run: engine process not sampled"


def unreported(p: ProcessSample | None, reason: str = "no engine process") -> TelemetrySnapshot:
    """A snapshot whose GPU reports no utilisation."""
    t = snap(p, reason=reason)
    assert t.gpus is not None
    return dataclasses.replace(t, gpus=(dataclasses.replace(t.gpus[0], util_pct=None),))


# (case, silence, snapshot, GPUs used, state history, RAM history, engine, (cause, headline))
HEADLINES = [
    (
        "gone",
        QUIET,
        gone(),
        1,
        (),
        (),
        True,
        (
            "gone",
            "engine pid 4242 is gone and no exit was seen: it died outside the console (the OOM killer, a scheduler, `kill -9`) — look at the end of engine.out.log and `dmesg`",
        ),
    ),
    (
        "zombie",
        QUIET,
        snap(proc("zombie", 0.0, ())),
        1,
        (),
        (),
        True,
        (
            "zombie",
            "engine pid 4242 is a zombie (exited, not reaped): the trainer is dead — look at the end of engine.out.log for its last error",
        ),
    ),
    (
        "stopped root",
        QUIET,
        snap(proc("stopped", 0.0, ("stopped",))),
        1,
        (),
        (),
        True,
        (
            "stopped",
            "engine pid 4242 stopped (SIGSTOP / Ctrl-Z) at the last poll: nothing runs until it is continued — `kill -CONT 4242 4300`",
        ),
    ),
    (
        "stopped worker, 3 polls",
        QUIET,
        snap(proc("sleeping", 0.0, ("stopped",))),
        1,
        ((NOW - 10, "stopped"), (NOW - 5, "stopped")),
        (),
        True,
        (
            "stopped",
            "pid 4300 of the engine tree stopped (SIGSTOP / Ctrl-Z) for the last 3 polls: nothing runs until it is continued — `kill -CONT 4300`",
        ),
    ),
    (
        "traced root",
        QUIET,
        snap(proc("tracing-stop", 0.0, ())),
        1,
        (),
        (),
        True,
        (
            "stopped",
            "engine pid 4242 held by a tracer (tracing-stop: gdb, strace, py-spy) at the last poll: nothing runs until it lets go — detach the tracer",
        ),
    ),
    (
        "D state, checkpoint due",
        SAVE_DUE,
        snap(proc("disk-sleep")),
        1,
        (),
        (),
        True,
        (
            "disk-sleep",
            "engine pid 4242 in D state (uninterruptible I/O) at the last poll: likely blocked on the filesystem — look at the data_dir / output_dir mount (NFS, a full or slow disk); the checkpoint at step 500 (save_every 500) is next",
        ),
    ),
    (
        "D state, eval due",
        EVAL_DUE,
        snap(proc("disk-sleep")),
        1,
        (),
        (),
        True,
        (
            "disk-sleep",
            "engine pid 4242 in D state (uninterruptible I/O) at the last poll: likely blocked on the filesystem — look at the data_dir / output_dir mount (NFS, a full or slow disk)",
        ),
    ),
    (
        "dead worker",
        QUIET,
        snap(proc("sleeping", 0.0, ("zombie",))),
        1,
        (),
        (),
        True,
        (
            "dead-child",
            "pid 4300 of the engine tree is a zombie at the last poll (a DataLoader worker or a rank exited) and the engine waits on it — look at engine.out.log for its error; it will not come back: stop the run and resume",
        ),
    ),
    (
        "RAM out, engine sampled",
        QUIET,
        snap(proc("running", 100.0), util=97.0),
        1,
        (),
        FALLING,
        True,
        (
            "ram-out",
            "host RAM falling 1.0 GiB/min, 4.0 GiB free: out of memory in ~4 min at this rate — loader workers' memory or a leak; look at the engine tree's PSS (3.0 GiB, 2 processes) and the host's other processes (`top -o RES`)",
        ),
    ),
    (
        "RAM out under a minute, remote",
        QUIET,
        snap(None, reason=REMOTE),
        1,
        (),
        SHORT,
        True,
        (
            "ram-out",
            "host RAM falling 1.0 GiB/min, 0.5 GiB free: out of memory in under a minute at this rate — loader workers' memory or a leak; look at the host's processes (`top -o RES`)",
        ),
    ),
    (
        "D state before RAM running out",
        QUIET,
        snap(proc("disk-sleep")),
        1,
        (),
        FALLING,
        True,
        (
            "disk-sleep",
            "engine pid 4242 in D state (uninterruptible I/O) at the last poll: likely blocked on the filesystem — look at the data_dir / output_dir mount (NFS, a full or slow disk)",
        ),
    ),
    (
        "GPU busy, eval due",
        EVAL_DUE,
        snap(proc(), util=97.0),
        1,
        (),
        (),
        True,
        (
            "gpu-busy",
            "GPU busy (97 %) with no record: likely the eval probe at step 250 (eval_every 250), not a hang — wait",
        ),
    ),
    (
        "GPU busy, eval due, 4 GPUs",
        EVAL_DUE,
        snap(proc(), util=97.0, gpus=4),
        4,
        (),
        (),
        True,
        (
            "gpu-busy",
            "GPU busy (97 %) with no record: likely the eval probe at step 250 (eval_every 250), not a hang — wait; on 4 GPUs a hung NCCL collective reads busy too: if it lasts, `py-spy dump --pid 4242`",
        ),
    ),
    (
        "GPU busy, no eval_every",
        NO_EVERY,
        snap(proc(), util=60.0),
        1,
        (),
        (),
        True,
        (
            "gpu-busy",
            "GPU busy (60 %) with no record: a long step or eval probe, not a hang — wait, or compare with eval_every",
        ),
    ),
    (
        "GPU busy at the idle line",
        QUIET,
        snap(proc(), util=5.0),
        1,
        (),
        (),
        True,
        (
            "gpu-busy",
            "GPU busy (5 %) with no record: a long step or eval probe, not a hang — wait, or compare with eval_every (250)",
        ),
    ),
    (
        "GPU busy, remote, 2 GPUs",
        QUIET,
        snap(None, util=97.0, gpus=2, reason=REMOTE),
        2,
        (),
        (),
        True,
        (
            "gpu-busy",
            "GPU busy (97 %) with no record: a long step or eval probe, not a hang — wait, or compare with eval_every (250); on 2 GPUs a hung NCCL collective reads busy too: if it lasts, `py-spy dump` the engine",
        ),
    ),
    (
        "GPU busy, no pid known, 2 GPUs",
        QUIET,
        dataclasses.replace(snap(None, util=97.0, gpus=2), engine_pid=None),
        2,
        (),
        (),
        True,
        (
            "gpu-busy",
            "GPU busy (97 %) with no record: a long step or eval probe, not a hang — wait, or compare with eval_every (250); on 2 GPUs a hung NCCL collective reads busy too: if it lasts, `py-spy dump` the engine",
        ),
    ),
    (
        "remote, GPU idle",
        QUIET,
        snap(None, reason=REMOTE),
        1,
        (),
        (),
        True,
        (
            "unsampled",
            "GPU idle (0 %) and the engine process not sampled (remote run: engine process not sampled): likely a hang (NCCL, a DataLoader deadlock) or blocked I/O — `py-spy dump` the engine on its host",
        ),
    ),
    (
        "remote, CPU run",
        QUIET,
        snap(None, util=None, reason=REMOTE),
        0,
        (),
        (),
        True,
        (
            "unsampled",
            "the engine process is not sampled (remote run: engine process not sampled) and the run is on the CPU: a hang cannot be told from a long step — look at the end of engine.out.log, or `py-spy dump` the engine on its host",
        ),
    ),
    (
        "remote, no GPU telemetry",
        QUIET,
        snap(None, util=None, reason=REMOTE),
        1,
        (),
        (),
        True,
        (
            "unsampled",
            "the engine process is not sampled (remote run: engine process not sampled) and no GPU telemetry (no NVIDIA GPU): a hang cannot be told from a long step — look at the end of engine.out.log, or `py-spy dump` the engine on its host",
        ),
    ),
    (
        "remote, GPU util not reported",
        QUIET,
        unreported(None, REMOTE),
        1,
        (),
        (),
        True,
        (
            "unsampled",
            "the engine process is not sampled (remote run: engine process not sampled) and GPU util not reported: a hang cannot be told from a long step — look at the end of engine.out.log, or `py-spy dump` the engine on its host",
        ),
    ),
    (
        "no telemetry",
        QUIET,
        None,
        1,
        (),
        (),
        True,
        (
            "unsampled",
            "the engine process is not sampled (no telemetry) and no telemetry: a hang cannot be told from a long step — look at the end of engine.out.log, or `py-spy dump` the engine on its host",
        ),
    ),
    (
        "no telemetry, CPU run",
        QUIET,
        None,
        0,
        (),
        (),
        True,
        (
            "unsampled",
            "the engine process is not sampled (no telemetry) and the run is on the CPU: a hang cannot be told from a long step — look at the end of engine.out.log, or `py-spy dump` the engine on its host",
        ),
    ),
    (
        "CPU busy, CPU run",
        QUIET,
        snap(proc("running", 100.0), util=None),
        0,
        (),
        (),
        True,
        (
            "cpu-busy",
            "engine busy on the CPU (100 % of a core) on a CPU run: a long step, not a hang — wait, or compare with the median interval 30.0 s",
        ),
    ),
    (
        "CPU busy at the line, GPU idle",
        QUIET,
        snap(proc("sleeping", 50.0)),
        1,
        (),
        (),
        True,
        (
            "cpu-busy",
            "engine busy on the CPU (50 % of a core) with the GPU idle (0 %): CPU-bound work (data decoding, a CPU fallback, a Python loop) or a busy-wait — `py-spy dump --pid 4242`",
        ),
    ),
    (
        "CPU busy, no GPU telemetry",
        QUIET,
        snap(proc("running", 90.0), util=None),
        1,
        (),
        (),
        True,
        (
            "cpu-busy",
            "engine busy on the CPU (90 % of a core), no GPU telemetry (no NVIDIA GPU): CPU-bound work, a busy-wait, or a CUDA sync spinning on a long GPU step — `py-spy dump --pid 4242`",
        ),
    ),
    (
        "running, CPU not measured, GPU idle",
        QUIET,
        snap(proc("running", None)),
        1,
        (),
        (),
        True,
        (
            "cpu-busy",
            "engine busy on the CPU (state running, CPU not measured yet) with the GPU idle (0 %): CPU-bound work (data decoding, a CPU fallback, a Python loop) or a busy-wait — `py-spy dump --pid 4242`",
        ),
    ),
    (
        "running at 10 %: not busy",
        QUIET,
        snap(proc("running", 10.0)),
        1,
        (),
        (),
        True,
        (
            "hang",
            "GPU idle (0 %) and the engine running (CPU 10 %): likely a DataLoader deadlock or a wait on a lock or queue — `py-spy dump --pid 4242`",
        ),
    ),
    (
        "hang, 2 GPUs",
        QUIET,
        snap(proc(), gpus=2),
        2,
        (),
        (),
        True,
        (
            "hang",
            "GPU idle (0 %) and the engine sleeping (CPU 1 %): likely a hung collective (NCCL) or a DataLoader deadlock — `py-spy dump --pid 4242`",
        ),
    ),
    (
        "hang, 1 GPU, 2 polls",
        QUIET,
        snap(proc()),
        1,
        ((NOW - 5, "sleeping"),),
        (),
        True,
        (
            "hang",
            "GPU idle (0 %) and the engine sleeping (CPU 1 %): likely a DataLoader deadlock or a wait on a lock or queue — `py-spy dump --pid 4242`",
        ),
    ),
    (
        "hang, CPU run, unknown state",
        QUIET,
        snap(ProcessSample(PID, GIB, None, 1)),
        0,
        (),
        (),
        True,
        (
            "hang",
            "engine in an unknown state (CPU not measured yet) on a CPU run, so not computing: likely a DataLoader deadlock or a wait on a peer rank (gloo) — `py-spy dump --pid 4242`",
        ),
    ),
    (
        "blind",
        QUIET,
        snap(proc("sleeping", 2.0), util=None),
        1,
        (),
        (),
        True,
        (
            "blind",
            "engine sleeping (CPU 2 %) and no GPU telemetry (no NVIDIA GPU): a hang cannot be told from a long GPU step here — `py-spy dump --pid 4242` shows which",
        ),
    ),
    (
        "blind, GPU util not reported",
        QUIET,
        unreported(proc()),
        1,
        (),
        (),
        True,
        (
            "blind",
            "engine sleeping (CPU 1 %) and GPU util not reported: a hang cannot be told from a long GPU step here — `py-spy dump --pid 4242` shows which",
        ),
    ),
    # another trainer's run
    (
        "foreign, RAM out",
        QUIET,
        snap(None),
        1,
        (),
        FALLING,
        False,
        (
            "ram-out",
            "host RAM falling 1.0 GiB/min, 4.0 GiB free: out of memory in ~4 min at this rate — look at the host's processes (`top -o RES`)",
        ),
    ),
    (
        "foreign, RAM out under a minute",
        QUIET,
        snap(None),
        1,
        (),
        SHORT,
        False,
        (
            "ram-out",
            "host RAM falling 1.0 GiB/min, 0.5 GiB free: out of memory in under a minute at this rate — look at the host's processes (`top -o RES`)",
        ),
    ),
    (
        "foreign, GPU busy",
        QUIET,
        snap(None, util=97.0),
        1,
        (),
        (),
        False,
        (
            "gpu-busy",
            "GPU busy (97 %) with no record: a long step or eval, or another process on the GPU — wait, or look at the trainer's own output",
        ),
    ),
    (
        "foreign, GPU busy on a CPU run",
        QUIET,
        snap(None, util=97.0),
        0,
        (),
        (),
        False,
        (
            "unsampled",
            "the trainer is not a process this console launched, so its state is not sampled: a hang cannot be told from a long step or a run that stopped without saying so — look at the trainer's own output or its process on its host",
        ),
    ),
    (
        "foreign, GPU idle",
        QUIET,
        snap(None),
        1,
        (),
        (),
        False,
        (
            "unsampled",
            "the trainer is not a process this console launched, so its state is not sampled: a hang cannot be told from a long step or a run that stopped without saying so — look at the trainer's own output or its process on its host",
        ),
    ),
    (
        "foreign, process sampled is not read",
        QUIET,
        snap(proc("zombie", 0.0, ())),
        1,
        (),
        (),
        False,
        (
            "unsampled",
            "the trainer is not a process this console launched, so its state is not sampled: a hang cannot be told from a long step or a run that stopped without saying so — look at the trainer's own output or its process on its host",
        ),
    ),
    (
        "foreign, no telemetry",
        QUIET,
        None,
        1,
        (),
        (),
        False,
        (
            "unsampled",
            "the trainer is not a process this console launched, so its state is not sampled: a hang cannot be told from a long step or a run that stopped without saying so — look at the trainer's own output or its process on its host",
        ),
    ),
]


@pytest.mark.parametrize(
    ("quiet", "t", "gpus_used", "states", "ram", "engine", "told"),
    [row[1:] for row in HEADLINES],
    ids=[row[0] for row in HEADLINES],
)
def test_each_case_reads_word_for_word(quiet, t, gpus_used, states, ram, engine, told) -> None:
    d = s.diagnose(quiet, t, ram, states, gpus_used, engine)
    said = d.message.split(f"last step {quiet.last_step}. ", 1)[1].split(". Seen: ")[0]
    assert (d.cause, said) == told
