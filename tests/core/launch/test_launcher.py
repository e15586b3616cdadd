"""Engine argv from a preset, and the process lifecycle (with a stand-in engine script)."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.core.launch.engine_argv import build_argv
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.run.launcher import EngineProcess
from fontaine_tui.core.run.logtail import newest_checkpoint, read_tail
from fontaine_tui.core.runfolder import RunFolder
from tests.core.launch.conftest import preset_variant

FAKE = str(Path(__file__).with_name("fake_engine.py"))


def test_argv_is_the_preset_one_to_one(tmp_path: Path) -> None:
    argv = build_argv(load_preset("smoke"), Path("/runs/s"), python="PY")
    assert argv == [
        "PY",
        "-m",
        "fontaine_engine",
        "train",
        "--run-name",
        "smoke",
        "--output-dir",
        "/runs/s",
        "--model-size",
        "tiny",
        "--batch-size",
        "8",
        "--backward-chunks",
        "2",
        "--seed",
        "0",
        "--image-augment",
        "0.5",
        "--recompute-stats",
        "--objective",
        "joint",
        "--insulate-flow",
        "--flow-decoder-init",
        "inherit",
        "--lr",
        "0.001",
        "--warmup-steps",
        "5",
        "--steps",
        "40",
        "--eval-every",
        "10",
        "--eval-dataset-breakdown",
        "--save-every",
        "20",
        "--num-workers",
        "1",
        "--prefetch-factor",
        "2",
        "--device",
        "cpu",
    ]
    assert "--init" not in argv and "--chunk-grad-allreduce" not in argv  # "" and false


def test_argv_for_ranks_flags_and_paths(tmp_path: Path) -> None:
    p = load_preset(
        preset_variant(
            tmp_path,
            nproc="2",
            chunk_grad_allreduce="true",
            recompute_stats="false",
            init='"/ckpt/step-000500"',
            data_dir='"/data/c"',
            batch_size="8",
        )
    )
    argv = build_argv(p, Path("/o"), resume=True, python="PY")
    assert argv[:8] == [
        "PY",
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "2",
        "-m",
        "fontaine_engine",
        "train",
    ]
    assert argv[argv.index("--data-dir") + 1] == "/data/c"
    assert argv[argv.index("--init") + 1] == "/ckpt/step-000500"
    assert "--chunk-grad-allreduce" in argv and "--recompute-stats" not in argv
    assert argv[-1] == "--resume"


def test_engine_argv_parses_with_the_real_engine_parser(tmp_path: Path) -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    from fontaine_engine.parser import build_parser

    for name in ("smoke", "demosonly_1gpu"):
        p = load_preset(name)
        argv = build_argv(p, tmp_path, resume=True)
        args = build_parser().parse_args(argv[argv.index("train") :])
        for key in (
            "batch_size",
            "backward_chunks",
            "steps",
            "eval_every",
            "save_every",
            "seed",
            "warmup_steps",
            "recompute_stats",
            "insulate_flow",
            "init",
        ):
            assert getattr(args, key) == p.recipe[key], key
        assert args.lr == p.recipe["lr"] and args.image_augment == p.recipe["image_augment"]
        assert args.num_workers == p.platform["num_workers"] and args.resume


def _start(tmp_path: Path, mode: str) -> tuple[EngineProcess, RunFolder]:
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir(parents=True, exist_ok=True)
    engine = EngineProcess.start([sys.executable, FAKE, str(folder.root), mode], folder)
    deadline = time.monotonic() + 20
    while read_tail(folder).last_step < 3:
        assert time.monotonic() < deadline, folder.engine_out.read_text()
        time.sleep(0.05)
    return engine, folder


def test_own_session_output_and_graceful_stop(tmp_path: Path) -> None:
    engine, folder = _start(tmp_path, "run")
    assert os.getpgid(engine.pid) == engine.pid != os.getpgrp()  # its own process group
    assert os.getsid(engine.pid) == engine.pid  # and session: a closed terminal spares it
    assert engine.poll() is None
    info = engine.stop(grace_int=10, grace_term=5)
    assert (info.status, info.code, info.signal, info.event) == ("stopped", 130, "SIGINT", "end")
    assert info.last_step >= 3 and info.checkpoint_step is not None
    assert "stopped by SIGINT at step" in info.describe()
    assert "fake engine up" in folder.engine_out.read_text()
    assert engine.poll() is info  # the same answer once exited


def test_stop_escalates_to_sigterm_then_sigkill(tmp_path: Path) -> None:
    engine, _ = _start(tmp_path / "a", "ignore_int")
    t = time.monotonic()
    info = engine.stop(grace_int=0.5, grace_term=5)
    assert (info.status, info.code, info.signal) == ("stopped", 143, "SIGTERM")
    assert time.monotonic() - t < 4
    engine, _ = _start(tmp_path / "b", "ignore_all")
    info = engine.stop(grace_int=0.3, grace_term=0.3)
    assert (info.status, info.code, info.signal) == ("killed", None, "SIGKILL")
    assert f"killed by SIGKILL at step {info.last_step}" in info.describe()


def test_oom_is_detected_from_the_log(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    engine = EngineProcess.start([sys.executable, FAKE, str(tmp_path), "oom"], folder)
    info = engine.wait(20)
    assert info is not None and (info.status, info.code, info.last_step) == ("oom", 1, 3)
    assert "out of memory at step 3" in info.describe()


def test_finish_is_clean(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    info = EngineProcess.start([sys.executable, FAKE, str(tmp_path), "finish"], folder).wait(20)
    assert (info.status, info.code, info.last_step, info.checkpoint_step) == ("finished", 0, 8, 5)


def test_reattach_by_pid_from_another_console(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    # an earlier console started it; this one only knows the pid and start time
    earlier = subprocess.Popen(
        [sys.executable, FAKE, str(folder.root), "run"],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
    )
    try:
        import psutil

        started = psutil.Process(earlier.pid).create_time()
        while read_tail(folder).last_step < 2:
            time.sleep(0.05)
        again = EngineProcess.reattach(folder, earlier.pid, started)
        assert again.poll() is None
        info = again.stop(grace_int=10, grace_term=5)
        assert (info.status, info.code, info.signal) == ("stopped", None, "SIGINT")
    finally:
        if earlier.poll() is None:
            os.killpg(earlier.pid, signal.SIGKILL)
        earlier.wait()


def test_a_pid_that_does_not_lead_its_own_group_is_never_signalled(tmp_path: Path) -> None:
    """A registered pid now held by another process (a reused pid, an edited registry): the
    engine is gone, and its stop signals nobody: not the process, not its group (here the
    test runner's own), not init's."""
    folder = RunFolder(tmp_path)
    other = subprocess.Popen(["sleep", "30"])  # in this process's group, not leading one
    try:
        for pid in (other.pid, os.getpid(), 1, 0):
            engine = EngineProcess.reattach(folder, pid)
            assert engine.signal_group(signal.SIGTERM) is False, pid
            assert engine.poll() is not None, pid  # judged gone
        assert other.poll() is None  # untouched
        # a group leader, but not the process registered (another start time)
        leader = subprocess.Popen(["sleep", "30"], start_new_session=True)
        try:
            import psutil

            started = psutil.Process(leader.pid).create_time()
            engine = EngineProcess.reattach(folder, leader.pid, started - 3600)
            assert engine.signal_group(signal.SIGTERM) is False and engine.poll() is not None
            assert leader.poll() is None
            same = EngineProcess.reattach(folder, leader.pid, started)  # the one registered
            assert same.signal_group(signal.SIGTERM) is True
            assert leader.wait(10) == -signal.SIGTERM
        finally:
            leader.kill()
            leader.wait()
    finally:
        other.kill()
        other.wait()


def test_newest_complete_checkpoint(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    assert newest_checkpoint(folder) is None
    for step, complete in ((20, True), (40, True), (60, False)):
        d = folder.checkpoints / f"step-{step:06d}"
        d.mkdir(parents=True)
        if complete:
            (d / "meta.json").write_text("{}")
    assert newest_checkpoint(folder) == (40, folder.checkpoints / "step-000040")


def test_tail_reads_only_the_end_of_a_long_log(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    with open(folder.log, "w") as fh:
        for s in range(1, 20001):
            fh.write(f'{{"kind":"train","step":{s},"time":{s}.0,"loss":1.0}}\n')
        fh.write('{"kind":"train","st')  # torn
    tail = read_tail(folder, nbytes=4096)
    assert tail.last_step == 20000 and tail.last_event == "" and not tail.oom


def test_a_failure_the_log_does_not_explain_shows_the_engine_output(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    info = EngineProcess.start([sys.executable, FAKE, str(tmp_path), "oom"], folder).wait(20)
    assert info.status == "oom"
    # a later start is judged on its own output, not on the earlier OOM in engine.out.log
    info = EngineProcess.start([sys.executable, FAKE, str(tmp_path), "fail"], folder).wait(20)
    assert (info.status, info.code, info.oom) == ("failed", 2, False)
    assert info.describe() == (
        "engine failed (exit 2) at step 3 (no checkpoint): "
        "engine: error: --batch-size 7: expected a multiple of 2"
    )


def test_sigkill_names_its_likely_sources(tmp_path: Path) -> None:
    engine, _ = _start(tmp_path, "run")
    os.kill(engine.pid, signal.SIGKILL)
    info = engine.wait(10)
    assert info.status == "killed" and info.cause == "killed"
    assert "SIGKILL from outside the program: a user" in info.describe()


def test_after_the_console_a_finished_run_is_recorded_and_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fontaine_tui.core.runs.registry import Entry, Registry
    from fontaine_tui.core.verdict.prereg import freeze
    from fontaine_tui.model.launched import LaunchedRun

    folder = RunFolder(tmp_path)
    preset = load_preset("smoke")
    prereg = freeze(folder, preset, ["x"], "h")
    registry = Registry()
    live = EngineProcess.start([sys.executable, FAKE, str(tmp_path), "run"], folder)
    registry.upsert(Entry("smoke", str(tmp_path), "h", pid=live.pid))
    try:  # the console was closed with "detach": the registry keeps the run as running
        run = LaunchedRun(live, registry, "h", str(folder.root), folder, preset, prereg)
        assert run.after_console(0) == 0
        assert registry.entries()[0].status == "running" and not folder.verdict.exists()
    finally:
        live.stop(grace_int=10)
    folder = RunFolder(tmp_path / "b")
    folder.root.mkdir()
    prereg = freeze(folder, preset, ["x"], "h")
    registry.upsert(Entry("smoke", str(folder.root), "h"))
    done = EngineProcess.start([sys.executable, FAKE, str(folder.root), "finish"], folder)
    done.wait(20)
    code = LaunchedRun(done, registry, "h", str(folder.root), folder, preset, prereg).after_console(
        0
    )
    entry = registry.find(folder.root, "h")
    assert (entry.status, entry.exit_code, entry.last_step) == ("exited", 0, 8)  # 8 of 40
    assert folder.verdict.exists() and "VERDICT: UNDECIDABLE" in capsys.readouterr().out
    assert code == 1  # finished short of recipe.steps: not a clean finish for the verdict


def test_a_clean_stop_under_a_wrapper_that_exits_1_is_still_a_stop(tmp_path: Path) -> None:
    engine, _ = _start(tmp_path, "wrapper")  # torchrun exits 1 after its ranks stop cleanly
    info = engine.stop(grace_int=10)
    assert (info.status, info.code, info.signal) == ("stopped", 1, "SIGINT")
    assert info.describe().startswith("engine stopped by SIGINT at step")


def test_a_reattached_run_that_logged_an_error_reads_as_failed(tmp_path: Path) -> None:
    from fontaine_tui.core.run.exits import exit_info

    folder = RunFolder(tmp_path)
    folder.log.write_text(
        '{"kind":"train","step":9,"time":1.0,"loss":1}\n'
        '{"kind":"event","step":9,"time":2.0,"event":"error",'
        '"detail":"ValueError: bad batch"}\n'
    )
    info = exit_info(folder, None)  # not our child: no exit status
    assert info.status == "failed"
    assert info.describe() == "engine failed at step 9 (no checkpoint): ValueError: bad batch"


def test_the_engine_never_gets_the_notification_token(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    env = {**os.environ, "FONTAINE_NOTIFY": "https://hooks.example.org/SECRET123"}
    engine = EngineProcess.start(
        [sys.executable, "-c", "import os; print(sorted(k for k in os.environ if 'NOTIFY' in k))"],
        folder,
        env,
    )
    engine.wait(20)
    assert folder.engine_out.read_text().strip() == "[]"


def test_an_engine_that_exits_at_once_still_has_its_start_time_recorded(tmp_path: Path) -> None:
    """launch registers the start time `stop` needs: an engine already exited (a zombie,
    not yet reaped) when it is read still has one."""
    from fontaine_tui.core.run.launcher import process_started

    folder = RunFolder(tmp_path)
    for _ in range(30):
        engine = EngineProcess.start(["true"], folder)
        assert engine.started is not None and engine.started > 0
        engine.wait(10)
    zombie = subprocess.Popen(["true"])
    time.sleep(0.3)  # exited, not reaped
    assert process_started(zombie.pid) is None  # a zombie is no live engine...
    assert process_started(zombie.pid, zombie_ok=True) is not None  # ...but has a start time
    zombie.wait()


@pytest.mark.parametrize("started", [None, 0.0])
def test_a_found_again_pid_without_its_start_time_is_never_signalled(
    tmp_path: Path, started: float | None
) -> None:
    from fontaine_tui.core.errors import InputError

    leader = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        engine = EngineProcess.reattach(RunFolder(tmp_path), leader.pid, started)
        assert engine.refusal() is not None
        assert engine.signal_group(signal.SIGTERM) is False
        with pytest.raises(InputError, match="no start time recorded"):
            engine.stop(grace_int=1, grace_term=1)
        time.sleep(0.2)
        assert leader.poll() is None
    finally:
        leader.kill()
        leader.wait()
