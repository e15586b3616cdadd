"""The cause of an attempt's end, held to what cause_of gives today for each way an exit reads.

Each case is an exit as a target reads it (its status, its log's last event, its printed
lines, the OOM killer's counters) and the exact (cause, detail) it is told as; the order of
the cases within a group is the order the causes are tried in."""

from __future__ import annotations

import pytest

from fontaine_tui.core.host.oomkill import MemoryEvidence
from fontaine_tui.core.run.exits import ExitInfo, cause_of

GIB = 1 << 30
CG = "/sys/fs/cgroup/run"
TORCH_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
NAN = "non-finite loss at step 7"
OUTSIDE = (
    "SIGKILL from outside the program: a user, a scheduler, or an OOM killer this machine "
    "does not report"
)
BASE = dict(
    code=None, signal=None, oom=False, last_step=7, checkpoint_step=None, event="", detail=""
)

# (case, the exit's fields, the OOM killer's counters, (cause, detail))
CASES = [
    ("nan error event", {"event": "error", "detail": NAN, "code": 1}, None, ("nan", NAN)),
    ("nan printed, exit 3", {"code": 3, "output": f"error: {NAN}"}, None, ("nan", f"error: {NAN}")),
    (
        "exit 3, nothing printed of a loss",
        {"code": 3, "output": "Traceback"},
        None,
        ("crashed", "Traceback"),
    ),
    ("exit 0", {"code": 0}, None, ("finished", "exit 0 at step 7")),
    (
        "exit 0 with its end event",
        {"code": 0, "event": "end", "detail": "finished at step 7"},
        None,
        ("finished", "finished at step 7"),
    ),
    (
        "end event finished, exit 1 (torchrun)",
        {"code": 1, "event": "end", "detail": "finished at step 7"},
        None,
        ("finished", "finished at step 7"),
    ),
    (
        "end event, SIGINT",
        {"signal": "SIGINT", "event": "end", "detail": "stopped by SIGINT at step 7"},
        None,
        ("stopped", "stopped by SIGINT at step 7"),
    ),
    (
        "end event, SIGTERM",
        {"signal": "SIGTERM", "event": "end", "detail": "stopped by SIGTERM at step 7"},
        None,
        ("stopped", "stopped by SIGTERM at step 7"),
    ),
    (
        "cuda oom in the error event",
        {"code": 1, "event": "error", "detail": TORCH_OOM, "output": "Cannot allocate memory"},
        None,
        ("cuda-oom", TORCH_OOM),
    ),
    (
        "cuda oom in the oom line",
        {"code": 1, "oom": True, "oom_line": TORCH_OOM, "output": "last"},
        None,
        ("cuda-oom", TORCH_OOM),
    ),
    ("cuda oom in the output", {"code": 1, "output": TORCH_OOM}, None, ("cuda-oom", TORCH_OOM)),
    (
        "error detail not read without an error event",
        {"code": 1, "event": "end", "detail": TORCH_OOM, "output": "x"},
        None,
        ("crashed", "x"),
    ),
    (
        "host oom printed",
        {"code": 1, "output": "MemoryError: Unable to allocate 3 GiB"},
        None,
        ("host-oom", "MemoryError: Unable to allocate 3 GiB"),
    ),
    (
        "a GPU allocation anywhere outranks a host one",
        {"code": 1, "event": "error", "detail": "std::bad_alloc", "output": TORCH_OOM},
        None,
        ("cuda-oom", TORCH_OOM),
    ),
    (
        "out of memory alone, a GPU line",
        {"code": 1, "oom": True, "oom_line": "NCCL out of memory"},
        None,
        ("cuda-oom", "NCCL out of memory"),
    ),
    (
        "out of memory alone, a plain line",
        {"code": 1, "oom": True, "oom_line": "out of memory"},
        None,
        ("host-oom", "out of memory"),
    ),
    (
        "out of memory alone, from the output",
        {"code": 1, "oom": True, "output": "cudnn out of memory"},
        None,
        ("cuda-oom", "cudnn out of memory"),
    ),
    ("out of memory alone, no line", {"code": 1, "oom": True}, None, ("host-oom", "out of memory")),
    (
        "SIGKILL is no allocation failure",
        {"signal": "SIGKILL", "oom": True, "output": TORCH_OOM},
        None,
        ("killed", OUTSIDE),
    ),
    (
        "SIGKILL, cgroup counted one, no limit",
        {"signal": "SIGKILL"},
        {"cgroup": CG, "cgroup_kills": 1},
        (
            "oom-killed",
            "cgroup /sys/fs/cgroup/run (no memory limit found) counted 1 OOM kill while it ran",
        ),
    ),
    (
        "SIGKILL, cgroup counted two, own limit",
        {"signal": "SIGKILL"},
        {"cgroup": CG, "cgroup_kills": 2, "limit": 8 * GIB, "limit_at": CG},
        (
            "oom-killed",
            "cgroup /sys/fs/cgroup/run (memory limit 8.0 GiB) counted 2 OOM kills while it ran",
        ),
    ),
    (
        "SIGKILL, cgroup counted, parent's limit in MiB",
        {"signal": "SIGKILL"},
        {"cgroup": CG, "cgroup_kills": 1, "limit": 512 << 20, "limit_at": "/sys/fs/cgroup"},
        (
            "oom-killed",
            "cgroup /sys/fs/cgroup/run (memory limit 512 MiB set at /sys/fs/cgroup) counted 1 OOM kill while it ran",
        ),
    ),
    (
        "SIGKILL, only the system counter",
        {"signal": "SIGKILL"},
        {"system_kills": 2},
        (
            "oom-killed",
            "the system-wide OOM-kill counter (/proc/vmstat oom_kill) rose by 2 while it ran; its cgroup's counter could not be read, so this is weaker evidence",
        ),
    ),
    (
        "SIGKILL, system counter but cgroup read as 0",
        {"signal": "SIGKILL"},
        {"cgroup": CG, "cgroup_kills": 0, "system_kills": 2},
        (
            "killed",
            "SIGKILL from outside the program: a user or a scheduler (its cgroup /sys/fs/cgroup/run counted no OOM kill; the system-wide OOM-kill counter rose by 2: another process was the victim)",
        ),
    ),
    (
        "child killed, cgroup counted",
        {"code": 1, "output": "worker killed by signal: Killed"},
        {"cgroup": CG, "cgroup_kills": 1},
        (
            "oom-killed",
            "cgroup /sys/fs/cgroup/run (no memory limit found) counted 1 OOM kill while it ran",
        ),
    ),
    (
        "child killed under torchrun, system counter",
        {"code": 1, "output": "exitcode  : -9 (pid: 12)"},
        {"system_kills": 1},
        (
            "oom-killed",
            "the system-wide OOM-kill counter (/proc/vmstat oom_kill) rose by 1 while it ran; its cgroup's counter could not be read, so this is weaker evidence",
        ),
    ),
    (
        "child killed, no counters",
        {"code": 1, "output": "Signal 9 (SIGKILL) received by PID 4"},
        None,
        ("crashed", "Signal 9 (SIGKILL) received by PID 4"),
    ),
    (
        "silent exit, cgroup counted",
        {},
        {"cgroup": CG, "cgroup_kills": 3},
        (
            "oom-killed",
            "cgroup /sys/fs/cgroup/run (no memory limit found) counted 3 OOM kills while it ran",
        ),
    ),
    (
        "silent exit, system counter only",
        {},
        {"system_kills": 3},
        ("unknown", "exit status unknown (not started by this console) and no end event"),
    ),
    (
        "error event is not silent",
        {"event": "error", "detail": "boom"},
        {"cgroup": CG, "cgroup_kills": 3},
        ("crashed", "boom"),
    ),
    (
        "exit 1 is not silent",
        {"code": 1, "output": "bye"},
        {"cgroup": CG, "cgroup_kills": 3},
        ("crashed", "bye"),
    ),
    (
        "SIGKILL this program sent",
        {"signal": "SIGKILL", "sent": "SIGKILL"},
        None,
        (
            "killed",
            "SIGKILL from this program: its stop (SIGINT and SIGTERM went unanswered) or the processes mode's signal",
        ),
    ),
    (
        "SIGKILL this program sent, counters read",
        {"signal": "SIGKILL", "sent": "SIGKILL"},
        {"cgroup": CG, "cgroup_kills": 0},
        (
            "killed",
            "SIGKILL from this program: its stop (SIGINT and SIGTERM went unanswered) or the processes mode's signal",
        ),
    ),
    ("SIGKILL from outside, no counters", {"signal": "SIGKILL"}, None, ("killed", OUTSIDE)),
    (
        "SIGKILL from outside, cgroup unread",
        {"signal": "SIGKILL"},
        {"system_kills": 0},
        ("killed", OUTSIDE),
    ),
    (
        "SIGKILL from outside, cgroup counted none",
        {"signal": "SIGKILL"},
        {"cgroup": CG, "cgroup_kills": 0},
        (
            "killed",
            "SIGKILL from outside the program: a user or a scheduler (its cgroup /sys/fs/cgroup/run counted no OOM kill)",
        ),
    ),
    (
        "SIGKILL from outside, another victim",
        {"signal": "SIGKILL"},
        {"cgroup": CG, "cgroup_kills": 0, "system_kills": 4},
        (
            "killed",
            "SIGKILL from outside the program: a user or a scheduler (its cgroup /sys/fs/cgroup/run counted no OOM kill; the system-wide OOM-kill counter rose by 4: another process was the victim)",
        ),
    ),
    (
        "SIGKILL sent SIGTERM first",
        {"signal": "SIGKILL", "sent": "SIGTERM"},
        None,
        ("killed", OUTSIDE),
    ),
    (
        "SIGINT this console sent, no end event",
        {"signal": "SIGINT", "sent": "SIGINT"},
        None,
        ("stopped", "SIGINT from this console's stop; no end event (no checkpoint on the way out)"),
    ),
    (
        "SIGTERM from outside, no end event",
        {"signal": "SIGTERM"},
        None,
        ("killed", "SIGTERM from outside the program before it could stop cleanly (no end event)"),
    ),
    (
        "SIGTERM sent SIGINT",
        {"signal": "SIGTERM", "sent": "SIGINT"},
        None,
        ("killed", "SIGTERM from outside the program before it could stop cleanly (no end event)"),
    ),
    (
        "SIGHUP from outside with an end event",
        {"signal": "SIGHUP", "event": "end", "detail": "bye"},
        None,
        ("killed", "SIGHUP from outside the program before it could stop cleanly (no end event)"),
    ),
    (
        "SIGHUP this console sent",
        {"signal": "SIGHUP", "sent": "SIGHUP"},
        None,
        ("stopped", "SIGHUP from this console's stop; no end event (no checkpoint on the way out)"),
    ),
    (
        "SIGTERM with an error event crashed",
        {"signal": "SIGTERM", "event": "error", "detail": "boom"},
        None,
        ("crashed", "boom"),
    ),
    (
        "SIGTERM exit 143 with an error, no words",
        {"code": 143, "signal": "SIGTERM", "event": "error"},
        None,
        ("crashed", "exit 143, no error line"),
    ),
    (
        "exit 1 with an error event",
        {"code": 1, "event": "error", "detail": "ValueError: bad", "output": "printed"},
        None,
        ("crashed", "ValueError: bad"),
    ),
    (
        "exit 1, error event without words, printed",
        {"code": 1, "event": "error", "output": "printed"},
        None,
        ("crashed", "printed"),
    ),
    (
        "exit 1, the last printed line",
        {"code": 1, "output": "Traceback: boom"},
        None,
        ("crashed", "Traceback: boom"),
    ),
    ("exit 1, nothing printed", {"code": 1}, None, ("crashed", "exit 1, no error line")),
    (
        "exit 2 after an end event not finished",
        {"code": 2, "event": "end", "detail": "stopped early"},
        None,
        ("crashed", "exit 2, no error line"),
    ),
    ("SIGSEGV", {"signal": "SIGSEGV"}, None, ("crashed", "killed by SIGSEGV, no error line")),
    (
        "SIGSEGV with words printed",
        {"signal": "SIGSEGV", "output": "Segmentation fault"},
        None,
        ("crashed", "Segmentation fault"),
    ),
    (
        "SIGABRT exit 134",
        {"code": 134, "signal": "SIGABRT"},
        None,
        ("crashed", "exit 134, no error line"),
    ),
    ("error event, no status", {"event": "error", "detail": "boom"}, None, ("crashed", "boom")),
    (
        "error event, no status, no words",
        {"event": "error"},
        None,
        ("crashed", "exit None, no error line"),
    ),
    (
        "end event, no status",
        {"event": "end", "detail": "stopped at step 7"},
        None,
        ("finished", "stopped at step 7"),
    ),
    (
        "end event finished, no status",
        {"event": "end", "detail": "finished at step 7"},
        None,
        ("finished", "finished at step 7"),
    ),
    (
        "exit 1 to this program's SIGINT (Lightning's way)",
        {"code": 1, "sent": "SIGINT", "output": "Detected KeyboardInterrupt"},
        None,
        ("stopped", "SIGINT from this program's stop, taken its own way (exit 1)"),
    ),
    (
        "exit 0 to this program's SIGINT",
        {"code": 0, "sent": "SIGINT"},
        None,
        ("stopped", "SIGINT from this program's stop, taken its own way (exit 0)"),
    ),
    (
        "SIGABRT on the way out of this program's stop",
        {"signal": "SIGABRT", "sent": "SIGTERM"},
        None,
        ("stopped", "SIGTERM from this program's stop, taken its own way (died of SIGABRT)"),
    ),
    (
        "SIGINT after this console's SIGTERM went out",
        {"signal": "SIGINT", "sent": "SIGTERM"},
        None,
        ("stopped", "SIGINT from this console's stop; no end event (no checkpoint on the way out)"),
    ),
    (
        "exit 1 with an error event during this program's stop",
        {"code": 1, "sent": "SIGINT", "event": "error", "detail": "ValueError: bad"},
        None,
        ("crashed", "ValueError: bad"),
    ),
    (
        "end event finished, exit 0, a stop sent",
        {"code": 0, "sent": "SIGINT", "event": "end", "detail": "finished at step 7"},
        None,
        ("finished", "finished at step 7"),
    ),
    (
        "nothing known",
        {},
        None,
        ("unknown", "exit status unknown (not started by this console) and no end event"),
    ),
    (
        "nothing known, printed",
        {"output": "hello", "event": "probe"},
        None,
        ("unknown", "exit status unknown (not started by this console) and no end event"),
    ),
]


@pytest.mark.parametrize(("name", "fields", "counters", "told"), CASES, ids=[c[0] for c in CASES])
def test_each_exit_is_told_its_cause(name, fields, counters, told):
    memory = MemoryEvidence(**counters) if counters is not None else None
    info = ExitInfo(**{**BASE, **fields}, memory=memory)
    assert cause_of(info) == told
    assert (info.cause, info.cause_detail) == told


def test_the_counters_given_outrank_the_exit_s_own():
    """The counters read at the exit's judging (cause_of's memory) are those it is judged by."""
    info = ExitInfo(**{**BASE, "signal": "SIGKILL"}, memory=MemoryEvidence(CG, 2, 0))
    assert cause_of(info) == (
        "killed",
        f"SIGKILL from outside the program: a user or a scheduler (its cgroup {CG} counted "
        "no OOM kill)",
    )
    assert cause_of(info, MemoryEvidence(CG, 2, 1)) == (
        "oom-killed",
        f"cgroup {CG} (no memory limit found) counted 1 OOM kill while it ran",
    )


CUDA = "RuntimeError: CUDA error: an illegal memory access was encountered"
CRASH_OUT = (
    "step 39\n"
    "Traceback (most recent call last):\n"
    '  File "/t/trainer.py", line 14, in <module>\n'
    '    raise RuntimeError("CUDA error")\n'
    f"{CUDA}\n"
    "wandb: Waiting for W&B process to finish...\n"
)
AFTER_STOP = (
    "Exception ignored in atexit callback: <function teardown>\n"
    "Traceback (most recent call last):\n"
    '  File "/t/trainer.py", line 6, in teardown\n'
    "KeyboardInterrupt\n"
)


def _crash_read(tmp_path, printed: str, until: int | None = None) -> str:
    from fontaine_tui.core.run.exits import crash_before
    from fontaine_tui.core.runfolder import RunFolder

    folder = RunFolder(tmp_path)
    folder.engine_out.write_text(printed)
    return crash_before(folder, 0, len(printed) if until is None else until)


def test_a_traceback_printed_before_the_stop_is_its_crash(tmp_path):
    assert _crash_read(tmp_path, CRASH_OUT + AFTER_STOP, len(CRASH_OUT)) == CUDA


@pytest.mark.parametrize(
    "printed",
    [
        "step 39\n",
        AFTER_STOP,  # KeyboardInterrupt is the stop taken, no crash
        'Traceback (most recent call last):\n  File "t.py", line 1\nSystemExit: 1\n',
        'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\n',  # torn
    ],
)
def test_no_crash_before_the_stop(tmp_path, printed):
    assert _crash_read(tmp_path, printed) == ""


HANDLED = (
    "ERROR flash attention missing, falling back to eager attention\n"
    "Traceback (most recent call last):\n"
    '  File "/t/trainer.py", line 8, in <module>\n'
    "    import flash_attn\n"
    "ModuleNotFoundError: No module named 'flash_attn'\n"
)


def test_a_traceback_training_went_on_after_is_handled(tmp_path):
    from fontaine_tui.core.run.exits import CRASH_TAIL_LINES

    def steps(n: int) -> str:
        return "".join(f"step {i}\n\n" for i in range(n))  # blank lines are not counted

    near = HANDLED + steps(CRASH_TAIL_LINES - 1)
    assert _crash_read(tmp_path, near) == "ModuleNotFoundError: No module named 'flash_attn'"
    assert _crash_read(tmp_path, HANDLED + steps(CRASH_TAIL_LINES)) == ""
    # a later crash near the stop is still read, past the handled one
    assert _crash_read(tmp_path, HANDLED + steps(50) + CRASH_OUT) == CUDA


def test_a_crash_after_the_stop_is_not_before_it(tmp_path):
    assert _crash_read(tmp_path, "step 39\n" + CRASH_OUT, len("step 39\n")) == ""


def test_a_stop_with_a_crash_before_it_is_a_crash():
    info = ExitInfo(**{**BASE, "code": 1, "sent": "SIGINT", "crash": CUDA})
    assert cause_of(info) == ("crashed", CUDA)
    assert info.describe().startswith("engine failed (exit 1) at step 7")
    # an older stop line (no out_at) reads no crash: a stop, as before
    old = ExitInfo(**{**BASE, "code": 1, "sent": "SIGINT"})
    assert cause_of(old)[0] == "stopped"
