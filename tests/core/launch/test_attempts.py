"""Attempts and the cause of each one's end, against the real engine on the session's corpus
(the smallest runs: tiny model, a few steps, no loader workers): a SIGKILL mid-run, a crash
on resume, the kernel's OOM kill in a memory cgroup, an allocation failing under
`ulimit -v`, a NaN stop, a finish and a stop; and attempts.jsonl itself.

The runs that need no hand on them start together (`fleet`), polled by one thread as a
console would, so the two cores overlap their start-ups.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.launch.targets import local
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.run import attempts
from fontaine_tui.core.run.exits import ExitInfo, exit_info
from fontaine_tui.core.run.launcher import EngineProcess
from fontaine_tui.core.run.logtail import HOST_OOM, read_tail
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.model.attempt_end import end_attempt
from fontaine_tui.model.babysitter import Babysitter
from fontaine_tui.model.notices import RunNotices
from fontaine_tui.model.session import Session
from tests.core.notify.server import Hook

if importlib.util.find_spec("torch") is None:  # the engine needs it (not imported here)
    pytest.skip("torch is not installed", allow_module_level=True)
pytestmark = [pytest.mark.engine, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
HOST = "test-host"
TIMEOUT = 240
# Measured on 2 CPU cores, batch 256 on the tiny model, no loader workers: the engine peaks
# at ~430 MiB (cgroup rss) before its first step and ~720 MiB in it; 576 MiB lets it start
# and kills it in training.
CGROUP_LIMIT = 576 << 20
# Its address space: ~1.2 GB once imported, ~1.6 GB to train; 1.3 GB fails in the corpus load
ULIMIT_V_KIB = 1_300_000


def engine_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_WAIT_POLICY": "PASSIVE", **extra}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    return env


def train_argv(
    out: Path, data: Path, *extra: str, steps: int = 3, batch: int = 8, save_every: int = 1000
) -> list[str]:
    return [
        sys.executable,
        "-m",
        "fontaine_engine",
        "train",
        "--run-name",
        "t",
        "--output-dir",
        str(out),
        "--data-dir",
        str(data),
        "--model-size",
        "tiny",
        "--batch-size",
        str(batch),
        "--backward-chunks",
        "1",
        "--seed",
        "0",
        "--lr",
        "1e-3",
        "--warmup-steps",
        "0",
        "--steps",
        str(steps),
        "--eval-every",
        "1000",
        "--save-every",
        str(save_every),
        "--num-workers",
        "0",
        "--device",
        "cpu",
        *extra,
    ]


def log_events(folder: RunFolder) -> list[dict]:
    return [r for r in map(json.loads, folder.log.read_text().splitlines()) if r["kind"] == "event"]


def lines(folder: RunFolder) -> list[dict]:
    return [json.loads(x) for x in folder.attempts.read_text().splitlines()]


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


# -- a memory cgroup of our own ----------------------------------------------------------------


class NoCgroup(Exception):
    """This machine does not let the test make a memory cgroup (the reason)."""


@dataclass
class MemoryCgroup:
    path: Path
    version: int

    @classmethod
    def make(cls, limit: int) -> MemoryCgroup:
        """A new memory cgroup limited to `limit` bytes, swap included: v1 under
        /sys/fs/cgroup/memory, else v2 at the unified hierarchy's root."""
        name = f"fontaine-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        v1 = Path("/sys/fs/cgroup/memory")
        if (v1 / "memory.limit_in_bytes").is_file():
            group = cls(v1 / name, 1)
            files = [
                ("memory.limit_in_bytes", str(limit)),
                ("memory.memsw.limit_in_bytes", str(limit)),
            ]
        else:
            base = next(
                (
                    b
                    for b in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
                    if (b / "cgroup.controllers").is_file()
                ),
                None,
            )
            if base is None:
                raise NoCgroup(
                    "no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory and no "
                    "cgroup v2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified"
                )
            if "memory" not in (base / "cgroup.controllers").read_text().split():
                raise NoCgroup(
                    f"the memory controller is not available in {base} (cgroup.controllers)"
                )
            try:
                if "memory" not in (base / "cgroup.subtree_control").read_text().split():
                    (base / "cgroup.subtree_control").write_text("+memory")
            except OSError as exc:
                raise NoCgroup(
                    f"cannot enable the memory controller for children of {base}: "
                    f"{exc.strerror or exc}"
                ) from None
            group = cls(base / name, 2)
            files = [("memory.max", str(limit)), ("memory.swap.max", "0")]
        try:
            group.path.mkdir()
        except OSError as exc:
            raise NoCgroup(f"cannot create cgroup {group.path}: {exc.strerror or exc}") from None
        try:
            for fname, value in files:
                if fname == files[0][0] or (group.path / fname).exists():
                    (group.path / fname).write_text(value)
        except OSError as exc:
            group.remove()
            raise NoCgroup(f"cannot set {group.path}/{fname}: {exc.strerror or exc}") from None
        return group

    def wrap(self, argv: list[str]) -> list[str]:
        """argv started inside the cgroup by a wrapper that moves itself there shortly after
        it starts (the sleep: the console sees the move on a poll, not at the start)."""
        return [
            "sh",
            "-c",
            f'sleep 0.3; echo $$ > {self.path}/cgroup.procs && exec "$@"',
            "sh",
            *argv,
        ]

    def remove(self) -> None:
        """rmdir, once no process is left in it."""
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError):
                for pid in (self.path / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


# -- the runs that need no hand on them, started together --------------------------------------


@dataclass
class Run:
    folder: RunFolder
    engine: EngineProcess
    attempt: int
    sitter: Babysitter
    info: ExitInfo | None = None
    done: threading.Event = field(default_factory=threading.Event)


class Fleet:
    def __init__(self) -> None:
        self.runs: dict[str, Run] = {}
        self.skipped: dict[str, str] = {}
        self.cgroup: MemoryCgroup | None = None
        # where each run's incident is posted, as a launch posts it: a path other than the run's
        # name, which the secrets policy would mask in the post as the webhook's token
        self.hook = Hook()
        self._quit = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def start(self, name: str, root: Path, argv: list[str], **env: str) -> None:
        folder = RunFolder(root / name)
        folder.root.mkdir(parents=True)
        engine = EngineProcess.start(argv, folder, env=engine_env(**env))
        notices = RunNotices.configured(
            name, print, None, {"FONTAINE_NOTIFY": self.hook.url(f"/hook-{name}")}
        )
        session = Session(
            LocalRun(folder.root), load_preset("smoke"), "launch", engine, folder.root
        )
        sitter = Babysitter(session, notices, watcher="test", poll_log=None)
        self.runs[name] = Run(
            folder, engine, attempts.begin(folder, "launch", engine, HOST), sitter
        )

    def _poll(self) -> None:
        """As a launch does: poll each engine (refreshing its cgroup), end its attempt (an
        incident is posted)."""
        deadline = time.monotonic() + TIMEOUT
        while not self._quit.is_set() and time.monotonic() < deadline:
            waiting = [r for r in self.runs.values() if not r.done.is_set()]
            if not waiting:
                return
            for run in waiting:
                if (info := run.engine.poll()) is not None:
                    end_attempt(run.folder, run.attempt, info, run.sitter, print)
                    run.sitter.close()  # its post delivered
                    run.info = info
                    run.done.set()
            time.sleep(0.1)

    def incidents(self, name: str) -> list[dict]:
        """What was posted for `name`: its incident, if it had one."""
        return [json.loads(r.body) for r in self.hook.requests if r.path == f"/hook-{name}"]

    def wait(self, name: str) -> Run:
        if name in self.skipped:
            pytest.skip(self.skipped[name])
        run = self.runs[name]
        assert run.done.wait(TIMEOUT), (name, run.folder.engine_out.read_text()[-3000:])
        assert run.info is not None
        return run

    def close(self) -> None:
        self._quit.set()
        self._thread.join(10)
        for run in self.runs.values():
            if run.engine.poll() is None:
                kill_group(run.engine.pid)
                run.engine.wait(10)
        if self.cgroup is not None:
            self.cgroup.remove()
        self.hook.close()


@pytest.fixture(scope="module")
def fleet(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("fleet")
    fl = Fleet()
    try:
        try:
            fl.cgroup = MemoryCgroup.make(CGROUP_LIMIT)
        except NoCgroup as exc:
            fl.skipped["oom-killed"] = f"no memory cgroup for the OOM-kill test: {exc}"
        if fl.cgroup is not None:
            fl.start(
                "oom-killed",
                root,
                fl.cgroup.wrap(train_argv(root / "oom-killed", corpus_dir, steps=5, batch=256)),
            )
        fl.start(
            "nan", root, train_argv(root / "nan", corpus_dir, "--lr", "1e6", steps=30, save_every=1)
        )
        fl.start(
            "host-oom",
            root,
            [
                "sh",
                "-c",
                f'ulimit -v {ULIMIT_V_KIB} && exec "$@"',
                "sh",
                *train_argv(root / "host-oom", corpus_dir),
            ],
            OMP_NUM_THREADS="1",
        )
        fl.start("finished", root, train_argv(root / "finished", corpus_dir, steps=3))
        fl._thread.start()
        yield fl
    finally:
        fl.close()


def test_the_kernel_oom_killing_the_engine_in_its_cgroup_is_oom_killed(fleet: Fleet) -> None:
    run = fleet.wait("oom-killed")
    info, group = run.info, fleet.cgroup
    assert info is not None and group is not None
    out = run.folder.engine_out.read_text()
    assert info.signal == "SIGKILL" and info.code is None, out[-2000:]
    assert [e["event"] for e in log_events(run.folder)] == ["start"]  # died training
    assert info.cause == "oom-killed" and info.status == "oom"
    assert info.cause_detail == (
        f"cgroup {group.path} (memory limit 576 MiB) counted 1 OOM kill while it ran"
    )
    assert info.describe().startswith("engine killed by the kernel's OOM killer at step 0 ")
    begin, end = lines(run.folder)
    # it moved into the cgroup after its start: the poll found it there
    assert (begin["cgroup"] or {}).get("path") != str(group.path)
    assert end["memory"]["cgroup"] == str(group.path) and end["memory"]["cgroup_oom_kills"] == 1
    assert (end["cause"], end["signal"], end["exit_code"]) == ("oom-killed", "SIGKILL", None)
    [post] = fleet.incidents("oom-killed")
    assert post["title"] == "oom-killed: incident: attempt 1 oom-killed"
    assert post["level"] == "alert" and "OOM killer" in post["text"]


def test_a_non_finite_loss_stops_the_engine_without_a_checkpoint(fleet: Fleet) -> None:
    run = fleet.wait("nan")
    info = run.info
    assert info is not None
    # lr 1e6: the loss goes non-finite at step 2; which of its parts do depends on the model
    detail = info.cause_detail
    assert re.fullmatch(r"non-finite loss: loss=nan(, \w+=(nan|inf|-inf))* at step 2", detail), (
        detail
    )
    assert (info.code, info.cause) == (3, "nan")
    assert info.status == "failed" and info.last_step == 2 and info.checkpoint_step == 1
    assert info.describe() == (
        f"engine stopped on a non-finite loss at step 2 (last checkpoint step 1), exit 3: {detail}"
    )
    assert log_events(run.folder)[-1] == {
        **log_events(run.folder)[-1],
        "event": "error",
        "detail": detail,
        "step": 2,
    }
    ckpts = sorted(p.name for p in run.folder.checkpoints.iterdir() if not p.name.startswith("."))
    assert ckpts == ["step-000001"]  # the weights after the NaN step were not saved
    recs = [json.loads(x) for x in run.folder.log.read_text().splitlines()]
    assert not [r for r in recs if r["kind"] == "eval"]  # nor probed
    assert lines(run.folder)[-1]["cause"] == "nan"
    assert [p["title"] for p in fleet.incidents("nan")] == ["nan: incident: attempt 1 nan"]


def test_an_allocation_failing_under_ulimit_v_is_host_oom(fleet: Fleet) -> None:
    run = fleet.wait("host-oom")
    info = run.info
    assert info is not None
    out = run.folder.engine_out.read_text()
    # how it fails varies with where the limit bites: MemoryError (exit 1), glibc's abort
    # (exit 127), std::bad_alloc (SIGABRT)
    assert info.code != 0 and info.cause == "host-oom", out[-2000:]
    assert HOST_OOM.search(info.cause_detail) and info.cause_detail in out  # the engine's line
    assert info.status == "oom" and "out of host memory at step 0" in info.describe()
    assert lines(run.folder)[-1]["cause"] == "host-oom"
    [post] = fleet.incidents("host-oom")
    assert post["title"] == "host-oom: incident: attempt 1 host-oom"
    assert post["level"] == "alert" and info.cause_detail in post["text"]


def test_a_clean_finish(fleet: Fleet) -> None:
    run = fleet.wait("finished")
    info = run.info
    assert info is not None
    assert (info.code, info.cause, info.cause_detail) == (0, "finished", "finished at step 3")
    [a] = attempts.read_attempts(run.folder, host=HOST)
    assert (a.number, a.kind, a.cause, a.last_step, a.exit_code) == (1, "launch", "finished", 3, 0)
    assert fleet.incidents("finished") == []  # a finish is no incident


def test_sigkill_mid_run_then_a_resume_that_crashes(corpus_dir: Path, tmp_path: Path) -> None:
    """Attempt 1, SIGKILLed from outside: "killed"; attempt 2, a resume from a checkpoint
    made unreadable: "crashed" with the engine's error line. Both read back in order."""
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    argv = train_argv(folder.root, corpus_dir, steps=1000, save_every=3)
    engine = EngineProcess.start(argv, folder, env=engine_env())
    try:
        first = attempts.begin(folder, "launch", engine, HOST)
        deadline = time.monotonic() + TIMEOUT
        while (read_tail(folder).checkpoint_step or 0) < 3 or read_tail(folder).last_step < 4:
            assert engine.poll() is None, folder.engine_out.read_text()[-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(engine.pid, signal.SIGKILL)  # someone else's kill: not the console's stop
        info = engine.wait(10)
    finally:
        kill_group(engine.pid)
    assert info is not None and info.signal == "SIGKILL"
    assert attempts.end(folder, first, info) and not attempts.end(folder, first, info)
    ev = info.memory
    assert ev is not None
    if ev.cgroup_kills is None and ev.system_kills:  # no cgroup counter, and another OOM kill
        assert info.cause == "oom-killed" and "weaker evidence" in info.cause_detail
    else:
        assert info.cause == "killed" and info.status == "killed"
        assert info.cause_detail.startswith("SIGKILL from outside the program: a user")
        assert ev.cgroup_kills in (None, 0)
    killed_at = read_tail(folder).last_step
    assert info.last_step == killed_at >= 4 and info.checkpoint_step is not None
    begin, end = lines(folder)
    assert (begin["event"], begin["attempt"], begin["kind"], begin["pid"]) == (
        "begin",
        1,
        "launch",
        engine.pid,
    )
    assert begin["log_offset"] == 0 and begin["host"] == HOST and begin["at"].endswith("Z")
    assert (end["event"], end["attempt"], end["cause"], end["last_step"], end["signal"]) == (
        "end",
        1,
        info.cause,
        killed_at,
        "SIGKILL",
    )

    newest = max(folder.checkpoints.glob("step-*"))
    (newest / "model.safetensors").write_bytes(b"\xff" * 64)  # unreadable now
    log_size, out_size = folder.log.stat().st_size, folder.engine_out.stat().st_size
    resumed = EngineProcess.start([*argv, "--resume"], folder, env=engine_env())
    try:
        second = attempts.begin(folder, "resume", resumed, HOST)
        crash = resumed.wait(TIMEOUT)
    finally:
        kill_group(resumed.pid)
    assert crash is not None and second == 2
    attempts.end(folder, second, crash)
    error = log_events(folder)[-1]
    assert error["event"] == "error" and crash.code == 1, folder.engine_out.read_text()[-2000:]
    assert (crash.cause, crash.cause_detail, crash.status) == ("crashed", error["detail"], "failed")
    assert crash.output == f"engine: {error['detail']}"  # its last line says the same
    assert crash.describe().endswith(
        f"(exit 1) at step {crash.last_step} (last checkpoint "
        f"step {crash.checkpoint_step}): {error['detail']}"
    )
    one, two = attempts.read_attempts(folder, host=HOST)
    assert (one.number, one.kind, one.cause, one.last_step) == (1, "launch", info.cause, killed_at)
    assert (two.number, two.kind, two.cause, two.exit_code) == (2, "resume", "crashed", 1)
    assert (one.log_offset, one.out_offset, two.log_offset, two.out_offset) == (
        0,
        0,
        log_size,
        out_size,
    )
    assert two.detail == error["detail"] and two.pid == resumed.pid


def test_a_stop_from_the_console_is_stopped(corpus_dir: Path, tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    engine = EngineProcess.start(
        train_argv(folder.root, corpus_dir, steps=1000), folder, env=engine_env()
    )
    try:
        n = attempts.begin(folder, "launch", engine, HOST)
        deadline = time.monotonic() + TIMEOUT
        while read_tail(folder).last_step < 2:
            assert engine.poll() is None, folder.engine_out.read_text()[-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        info = engine.stop(grace_int=60, grace_term=10)
    finally:
        kill_group(engine.pid)
    assert (info.code, info.signal, info.cause, info.status) == (
        130,
        "SIGINT",
        "stopped",
        "stopped",
    )
    assert info.cause_detail == f"stopped by SIGINT at step {info.last_step}"
    assert info.checkpoint_step == info.last_step  # it checkpointed on the way out
    attempts.end(folder, n, info)
    [a] = attempts.read_attempts(folder, host=HOST)
    assert (a.cause, a.signal, a.exit_code, a.last_step) == (
        "stopped",
        "SIGINT",
        130,
        info.last_step,
    )


# -- causes told from what the engine prints ------------------------------------------------------

TORCH_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; "
    "79.15 GiB total capacity; 76.02 GiB already allocated; 1.12 GiB free; 77.50 GiB "
    "reserved in total by PyTorch) If reserved memory is >> allocated memory try "
    "setting max_split_size_mb to avoid fragmentation."
)


def test_cuda_out_of_memory_from_the_engine_output(tmp_path: Path) -> None:
    """The lines torch and torchrun print, the engine's error event as log.failed writes it."""
    folder = RunFolder(tmp_path)
    detail = TORCH_OOM.removeprefix("torch.")
    folder.log.write_text(
        '{"kind":"event","step":0,"time":1.0,"event":"start","detail":"model small"}\n'
        '{"kind":"train","step":7,"time":2.0,"loss":1.0}\n'
        + json.dumps({"kind": "event", "step": 7, "time": 3.0, "event": "error", "detail": detail})
        + "\n"
    )
    folder.engine_out.write_text(
        f"Traceback (most recent call last):\n  ...\n{TORCH_OOM}\nengine: {detail}\n"
    )
    info = exit_info(folder, 1)
    assert (info.cause, info.cause_detail, info.status) == ("cuda-oom", detail, "oom")
    assert info.describe().startswith(
        "engine CUDA out of memory at step 7 (no checkpoint), "
        "exit 1: OutOfMemoryError: CUDA out of memory. Tried"
    )
    # under torchrun: no event from a rank that died in its traceback, torchrun's report last
    folder.log.write_text('{"kind":"train","step":7,"time":2.0,"loss":1.0}\n')
    folder.engine_out.write_text(
        f"[rank0]: {TORCH_OOM}\nE1204 ... failed (exitcode: 1)\n" + "=" * 60 + "\n"
    )
    info = exit_info(folder, 1)
    assert (info.cause, info.cause_detail) == ("cuda-oom", f"[rank0]: {TORCH_OOM}"[:300])
    assert attempts.cause_of(info) == (info.cause, info.cause_detail)


# -- attempts.jsonl itself ----------------------------------------------------------------------


def test_attempts_file_is_appended_only_and_tolerates_a_torn_line(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    assert attempts.read_attempts(folder) == [] and attempts.open_attempt(folder) is None
    first = EngineProcess.start(["sleep", "30"], folder)
    try:
        n = attempts.begin(folder, "launch", first, HOST, clock=lambda: 1000.0)
        assert n == 1
        [a] = attempts.read_attempts(folder, host=HOST)
        assert (a.cause, a.detail) == ("running", f"pid {first.pid} alive")
        assert attempts.open_attempt(folder).number == 1 and not a.ended
        assert a.began_at == "1970-01-01T00:16:40.000000Z"
        again = local.reopen(folder, a)  # judged from the attempt's start
        assert again.pid == first.pid and again.memory.baseline() == a.baseline()
        first.signal_group(signal.SIGTERM)
        info = first.wait(10)
    finally:
        kill_group(first.pid)
    assert info is not None and (info.cause, info.signal) == ("stopped", "SIGTERM")
    assert info.cause_detail == (
        "SIGTERM from this console's stop; no end event (no checkpoint on the way out)"
    )
    [a] = attempts.read_attempts(folder, host=HOST)
    assert a.cause == "unknown" and "no end recorded: pid" in a.detail  # gone, no end line
    before = folder.attempts.read_bytes()
    inode = folder.attempts.stat().st_ino
    with open(folder.attempts, "ab") as fh:  # a console killed halfway through its end line
        fh.write(b'{"event":"end","attempt":1,"cau')
    torn = folder.attempts.read_bytes()
    second = EngineProcess.start(["sleep", "30"], folder)
    try:
        assert attempts.begin(folder, "resume", second, HOST) == 2
        info2 = second.stop(grace_int=5)
    finally:
        kill_group(second.pid)
    assert attempts.end(folder, 2, info2)
    after = folder.attempts.read_bytes()
    assert after.startswith(torn) and torn.startswith(before)  # appended, never rewritten
    assert folder.attempts.stat().st_ino == inode
    one, two = attempts.read_attempts(folder, host=HOST)
    assert (one.number, one.kind, one.cause) == (1, "launch", "unknown")
    assert one.detail == "no end recorded; a later attempt began"
    assert (two.number, two.kind, two.pid, two.ended) == (2, "resume", second.pid, True)
    assert two.cause == info2.cause and two.log_offset == 0
    assert attempts.open_attempt(folder) is None
    with pytest.raises(ValueError, match="attempt kind 'rerun'"):
        attempts.begin(folder, "rerun", second, HOST)


def test_the_cgroup_counter_is_found_on_v1_v2_hybrid_and_container_layouts(tmp_path: Path) -> None:
    """/proc/PID/cgroup's line -> the folder whose oom_kill the kernel counts in (folders
    laid out as the kernel shows them; the machine's own are in the tests above)."""
    from fontaine_tui.core.host.oomkill import Cgroup, cgroup_from

    root, proc = tmp_path / "cg", tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    layout = (
        ("memory/jobs/a", "memory.oom_control"),
        ("unified/svc/b", "memory.events"),
        ("unified/svc", "memory.events"),
        ("c", "memory.events"),
    )
    for folder, name in layout:
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / name).write_text("oom_kill_disable 0\noom_kill 2\n")
    (root / "unified/svc/memory.max").write_text("1073741824\n")
    (root / "unified/svc/b/memory.max").write_text("max\n")
    hybrid = "4:memory:/jobs/a\n0::/svc/b\n"
    assert cgroup_from(hybrid, proc, root) == Cgroup(root / "memory/jobs/a", 1)
    assert cgroup_from("0::/svc/b\n", proc, root) == Cgroup(root / "unified/svc/b", 2)
    assert cgroup_from("0::/c\n", proc, root) == Cgroup(root / "c", 2)  # v2 at the root
    assert cgroup_from("0::/\n", proc, root) is None  # the v2 root counts nothing itself
    b = Cgroup(root / "unified/svc/b", 2)
    assert b.oom_kills() == 2 and b.limit() == (1 << 30, root / "unified/svc")  # its parent's
    # a container: the hierarchy mounted from /docker/x down, at the usual place
    (proc / "self" / "mountinfo").write_text(
        f"35 31 0:32 /docker/x {root}/memory rw,relatime - cgroup cgroup rw,memory\n"
    )
    (root / "memory/memory.oom_control").write_text("oom_kill 0\n")
    assert cgroup_from("4:memory:/docker/x\n", proc, root) == Cgroup(root / "memory", 1)
    assert cgroup_from("4:memory:/docker/x/jobs/a\n", proc, root) == Cgroup(
        root / "memory/jobs/a", 1
    )
