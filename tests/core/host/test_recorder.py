"""The telemetry recorder beside a real engine stand-in: its samples, its end, its bound."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.core.host import recorder
from fontaine_tui.core.host.history import read_history
from fontaine_tui.core.runfolder import TELEMETRY

# an engine stand-in: a real process tree (one child), a log line, then an exit
ENGINE = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
open(sys.argv[1], "a").write('{"step": 7, "loss": 1.0}\\n')
time.sleep(float(sys.argv[2]))
child.kill()
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory):
    """One run: the stand-in engine for 2.5 s, its recorder sampling every 0.4 s."""
    folder = tmp_path_factory.mktemp("run")
    (folder / "prereg.json").write_text("{}\n")
    engine = subprocess.Popen(
        [sys.executable, "-c", ENGINE, str(folder / "train_log.jsonl"), "2.5"]
    )
    import psutil

    started = psutil.Process(engine.pid).create_time()
    env = dict(os.environ, FONTAINE_TELEMETRY_S="0.4")
    old = os.environ.get("FONTAINE_TELEMETRY_S")
    os.environ["FONTAINE_TELEMETRY_S"] = "0.4"
    try:
        rec = recorder.spawn(folder, engine.pid, started, env)
    finally:
        if old is None:
            os.environ.pop("FONTAINE_TELEMETRY_S")
        else:
            os.environ["FONTAINE_TELEMETRY_S"] = old
    engine.wait(20)
    ended = time.monotonic()
    rec.wait(10)
    return folder, rec, time.monotonic() - ended


def test_the_recorder_samples_the_engine_tree_and_ends_with_it(recorded) -> None:
    folder, rec, after = recorded
    assert rec.returncode == 0 and after < 2.5  # it went within a look of the engine's end
    lines = [json.loads(line) for line in (folder / TELEMETRY).read_text().splitlines()]
    assert len(lines) >= 3
    last = lines[-1]
    assert last["node"] == socket.gethostname() and last["step"] == 7
    procs = [line["engine"] and line["engine"]["procs"] for line in lines]
    assert max(p or 0 for p in procs) >= 2, procs  # the tree, not one pid
    assert last["engine"]["mem"] > 0 and last["engine"]["pid"] > 0
    assert last["ram"]["total"] > last["ram"]["used"] > 0
    assert last["disk"]["free"] > 0 and last["net"] is not None
    for line in lines:  # no GPU here: the line says why, with no number
        assert (line["gpus"] is None) == bool(line.get("gpu_reason"))
    assert sorted(line["t"] for line in lines) == [line["t"] for line in lines]


def test_the_history_reads_back_with_rates(recorded) -> None:
    folder, _, _ = recorded
    history = read_history([(folder / TELEMETRY).read_bytes()])
    (samples,) = history.nodes.values()
    assert history.garbage == history.torn == 0
    assert samples[-1].values["mem"] and samples[-1].values["net_in"] is not None


def test_the_recorder_refuses_a_folder_with_no_prereg(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", recorder.MODULE, str(tmp_path), "--pid", str(os.getpid())],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and "prereg.json" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_recorder_of_a_gone_pid_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "prereg.json").write_text("{}\n")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert recorder.record(tmp_path, gone.pid, None, interval=0.1) == 0
    assert not (tmp_path / TELEMETRY).exists()


def _line(t: float) -> dict:
    return {"v": 1, "t": t, "node": "n", "step": int(t), "gpus": None, "gpu_reason": "none"}


def test_the_sidecar_stays_bounded_and_keeps_its_whole_span(tmp_path: Path) -> None:
    sidecar = recorder.Sidecar(tmp_path / TELEMETRY, bound=4000)
    for i in range(2000):
        sidecar.append(_line(float(i)))
    newest, older = sidecar.path.stat().st_size, sidecar.older.stat().st_size
    assert newest <= 4000 + 100 and older <= 4000
    history = read_history([sidecar.older.read_bytes(), sidecar.path.read_bytes()])
    times = [s.t for s in history.nodes["n"]]
    assert times[0] == 0.0 and times[-1] == 1999.0 and times == sorted(times)


def test_a_torn_line_and_garbage_are_counted_never_raised(tmp_path: Path) -> None:
    good = json.dumps(_line(1.0)).encode()
    history = read_history([b"not json\n" + good + b"\n[1]\n" + good[:20], None])
    assert len(history.nodes["n"]) == 1 and history.garbage == 2 and history.torn == 1
    assert history.notice("t") == "t: 2 lines not a sample, a torn last line: not read"
    assert read_history([None]).missing


def test_a_bad_interval_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from fontaine_tui.core.errors import InputError

    monkeypatch.setenv("FONTAINE_TELEMETRY_S", "soon")
    with pytest.raises(InputError, match="FONTAINE_TELEMETRY_S: expected a number"):
        recorder.recorder_on()
    monkeypatch.setenv("FONTAINE_TELEMETRY_S", "0")
    assert not recorder.recorder_on()


def test_files_of_those_names_that_are_not_ours_stay_untouched(tmp_path: Path) -> None:
    from fontaine_tui.core.errors import InputError

    (tmp_path / "prereg.json").write_text("{}\n")
    theirs = tmp_path / TELEMETRY
    theirs.write_text("my own notes\n")
    brief = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"])
    with pytest.raises(InputError, match="not a telemetry history; left untouched"):
        recorder.record(tmp_path, brief.pid, None, interval=0.1)  # (it would end in 2 s)
    brief.kill()  # refused at once: its 2 s were only the bound of a recorder that records
    brief.wait()
    assert theirs.read_text() == "my own notes\n"
    sidecar = recorder.Sidecar(tmp_path / "telemetry.node0.jsonl", bound=500)
    sidecar.older.write_text("mine too\n")
    with pytest.raises(InputError, match="not a telemetry history written by fontaine-tui"):
        for i in range(20):
            sidecar.append(_line(float(i)))
    assert sidecar.older.read_text() == "mine too\n"


def test_a_sidecar_read_again_parses_only_what_was_appended(tmp_path: Path) -> None:
    from fontaine_tui.core.host.history import FileRead, merged

    sidecar = recorder.Sidecar(tmp_path / TELEMETRY, bound=1000)
    read = FileRead()
    for i in range(5):
        sidecar.append(_line(float(i)))
    data = sidecar.path.read_bytes()
    assert read.feed(data + b'{"v":1,"t":5')  # a torn last line: held back, not garbage
    first = read.samples[0]
    sidecar.append(_line(5.0))
    assert not read.feed(sidecar.path.read_bytes())
    assert [s.t for s in read.samples] == [0, 1, 2, 3, 4, 5] and read.samples[0] is first
    for i in range(6, 40):  # past the bound: thinned, the newest file begins again
        sidecar.append(_line(float(i)))
    read.feed(sidecar.path.read_bytes())
    older = FileRead()
    older.feed(sidecar.older.read_bytes())
    history = merged([(older, False), (read, False)])
    times = [s.t for s in history.nodes["n"]]
    assert times == sorted(times) and times[-1] == 39.0 and read.samples[0] is not first


def test_a_fifo_for_a_log_is_no_step_and_no_wait(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "train_log.jsonl")
    assert recorder.last_step(tmp_path) is None  # never blocks on a writer that never comes


def test_a_folder_that_goes_ends_the_recording(tmp_path: Path) -> None:
    import shutil
    import threading

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "prereg.json").write_text("{}\n")
    brief = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"])
    try:
        threading.Timer(0.5, shutil.rmtree, (folder,)).start()
        t0 = time.monotonic()
        recorder.record(folder, brief.pid, None, interval=0.2)
        assert time.monotonic() - t0 < 10 and not folder.exists()  # no folder made again
    finally:
        brief.kill()
        brief.wait()


def test_a_stops_sigint_leaves_the_recorder_to_the_engines_end(tmp_path: Path) -> None:
    """scancel --signal=INT reaches every process of a job: the recorder keeps recording."""
    import signal

    (tmp_path / "prereg.json").write_text("{}\n")
    engine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
    rec = subprocess.Popen(
        [sys.executable, "-m", recorder.MODULE, str(tmp_path), "--pid", str(engine.pid)]
        + ["--interval", "0.2"]
    )
    deadline = time.monotonic() + 30
    while not (tmp_path / TELEMETRY).exists():  # recording: its SIGINT is ignored by now
        assert rec.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    rec.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert rec.poll() is None  # still there, beside the engine
    engine.wait()
    assert rec.wait(10) == 0
    assert (tmp_path / TELEMETRY).read_text().count("\n") >= 3


@pytest.mark.parametrize("how", ["moved", "prereg replaced"])
def test_a_folder_that_replaced_the_runs_is_never_written(tmp_path: Path, how: str) -> None:
    """The run folder moved away and a new run's folder made at its path (or its prereg.json
    replaced by another run's): the recorder writes no line there, and ends quietly."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "prereg.json").write_text('{"run": "first"}\n')
    engine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    rec = subprocess.Popen(
        [sys.executable, "-m", recorder.MODULE, str(folder), "--pid", str(engine.pid)]
        + ["--interval", "0.2"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (folder / TELEMETRY).exists():
            assert rec.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        if how == "moved":
            folder.rename(tmp_path / "run.moved")
            folder.mkdir()
        else:
            (folder / TELEMETRY).unlink()
            (folder / "prereg.json.new").write_text('{"run": "second"}\n')
            os.replace(folder / "prereg.json.new", folder / "prereg.json")
        (folder / "prereg.json").write_text('{"run": "second"}\n')
        assert rec.wait(10) == 0  # it ends, the engine still running
        _, err = rec.communicate()
        assert err == ""  # quietly
        assert not (folder / TELEMETRY).exists()
        assert engine.poll() is None
    finally:
        rec.kill()
        engine.kill()
        engine.wait()
        rec.wait()
