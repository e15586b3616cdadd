"""[recovery] kept by `launch --plain`, end to end with a real [command] trainer.

The trainer (a few lines of Python writing metrics.jsonl and a checkpoint) pauses at a step;
the test then ends it from outside the way a preemption does (a real SIGKILL by the test) or
as a user does (`fontaine-tui stop`). A kill from outside is restarted through resume_argv and
the run finishes; attempts.jsonl, the plain output and verdict.json say each restart and its
cause. A loss that is not finite, max_restarts reached and a user's stop are never restarted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.core.launch.test_attempts import MemoryCgroup, NoCgroup

TRAINER = """import json, os, sys, time
out = os.environ["FONTAINE_OUTPUT_DIR"]
mode, resume = sys.argv[1], "--resume" in sys.argv
ckpt = os.path.join(out, "ckpt.json")
start = json.load(open(ckpt))["step"] if resume and os.path.exists(ckpt) else 0
pause = start + 10 if mode == "always" else 20 if not resume else -1
with open(os.path.join(out, "metrics.jsonl"), "a") as fh:
    for s in range(start + 1, 41):
        loss = float("nan") if mode == "nan" and s == pause else 2.0 - s / 40
        rec = {"step": s, "loss": loss}
        if s % 10 == 0:
            rec["eval_loss"] = 1.8 - s / 100
        fh.write(json.dumps(rec) + "\\n")
        fh.flush()
        if s % 5 == 0:
            with open(ckpt + ".tmp", "w") as c:
                json.dump({"step": s}, c)
            os.replace(ckpt + ".tmp", ckpt)
        if s == pause and mode == "oom":  # past the cgroup's limit: the kernel's OOM killer
            hog = []
            while True:
                hog.append(b"x" * (32 << 20))
        if s == pause:
            open(os.path.join(out, f"paused-{os.getpid()}"), "w").close()
            time.sleep(120)  # ended from outside by the test
"""


def _preset(tmp_path: Path, mode: str, recovery: str) -> Path:
    (tmp_path / "trainer.py").write_text(TRAINER)
    argv = f'"{sys.executable}", "{tmp_path / "trainer.py"}", "{mode}"'
    path = tmp_path / "rec.toml"
    path.write_text(f"""[run]
name = "rec"
output_dir = "runs/rec"
[command]
argv = [{argv}]
resume_argv = [{argv}, "--resume"]
[source]
kind = "jsonl"
[verdict]
metric = "eval_loss"
anchor_step = 20
endpoint_step = 40
healthy_max = 0.0
drift_min = 0.2
{recovery}
""")
    return path


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    env.pop("FONTAINE_NOTIFY", None)
    return {**env, **more}


def _launch(
    tmp_path: Path,
    preset: Path,
    wrap: Callable[[list[str]], list[str]] = list,
    **env: str,
) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "fontaine_tui", "launch", str(preset), "--plain", "--poll", "0.2"]
    return subprocess.Popen(
        wrap(argv),
        cwd=tmp_path,
        env=_env(tmp_path, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _attempts(folder: Path) -> list[dict]:
    path = folder / "attempts.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _paused(folder: Path, proc: subprocess.Popen[str], n: int) -> int:
    """The pid of attempt `n` (its process group's) once its trainer paused (paused-PID)."""
    deadline = time.monotonic() + 60
    while True:
        begins = [a for a in _attempts(folder) if a["event"] == "begin"]
        if len(begins) >= n and len(list(folder.glob("paused-*"))) >= n:
            return int(begins[n - 1]["pid"])
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        assert time.monotonic() < deadline, _attempts(folder)
        time.sleep(0.1)


def _end(proc: subprocess.Popen[str]) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=120)
    return proc.returncode, out


def test_a_kill_from_outside_is_restarted_resumed_and_finished(tmp_path, hook):
    folder = tmp_path / "runs" / "rec"
    preset = _preset(tmp_path, "once", "[recovery]\nmax_restarts = 2\nbackoff_s = 0.1")
    proc = _launch(tmp_path, preset, FONTAINE_NOTIFY=hook.url("/h"))
    os.killpg(_paused(folder, proc, 1), signal.SIGKILL)  # its whole group, as a spot reclaim does
    code, out = _end(proc)
    assert "command finished at step 40, exit 0" in out, out[-3000:]
    assert "restart 1 of 2 in 0.1 s ([recovery]): preemption (SIGKILL from outside" in out, out
    assert "(restart 1 of 2)" in out  # the resume's launch line
    said = [
        (a["event"], a.get("kind") or a.get("cause"), a.get("restart")) for a in _attempts(folder)
    ]
    assert said == [
        ("begin", "launch", None),
        ("end", "killed", None),
        ("begin", "resume", 1),
        ("end", "finished", None),
    ], said
    again = [a for a in _attempts(folder) if a.get("restart")][0]
    assert (again["of"], again["cause"]) == (2, "preemption")
    steps = [json.loads(x)["step"] for x in (folder / "metrics.jsonl").read_text().splitlines()]
    assert steps[-1] == 40 and 21 in steps  # resumed from its checkpoint, not from 0
    assert "recovery: up to 2 restarts on preemption, oom, node_failure; 1 used" in out
    doc = json.loads((folder / "verdict.json").read_text())
    assert doc["recovery"] == {
        "max_restarts": 2,
        "on": ["preemption", "oom", "node_failure"],
        "used": 1,
        "restarts": [{"attempt": 2, "cause": "preemption"}],
    }
    assert not doc["provisional"] and code == 0, out[-3000:]
    posts = [json.loads(r.body) for r in hook.requests]
    restart = [p for p in posts if p["title"].startswith("rec: attempt 1 ended: restart 1 of 2")]
    assert len(restart) == 1 and restart[0]["level"] == "warn", [p["title"] for p in posts]
    judged = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(folder)],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "recovery: up to 2 restarts on preemption, oom, node_failure; 1 used" in judged.stdout
    prereg = json.loads((folder / "prereg.json").read_text())
    assert prereg["preset"]["recovery"] == {
        "max_restarts": 2,
        "on": ["node_failure", "oom", "preemption"],
        "backoff_s": 0.1,
    }


def test_the_kernels_oom_kill_is_restarted_as_oom(tmp_path):
    """A real OOM kill: launch --plain and its trainer in a memory cgroup of 512 MiB."""
    try:
        group = MemoryCgroup.make(512 << 20)
    except NoCgroup as exc:
        pytest.skip(f"no memory cgroup for the OOM-kill test: {exc}")
    folder = tmp_path / "runs" / "rec"
    try:
        preset = _preset(
            tmp_path, "oom", '[recovery]\nmax_restarts = 1\non = ["oom"]\nbackoff_s = 0.1'
        )
        code, out = _end(_launch(tmp_path, preset, group.wrap))
    finally:
        group.remove()
    assert "restart 1 of 1 in 0.1 s ([recovery]): oom (cgroup " in out, out[-3000:]
    assert "command finished at step 40, exit 0" in out, out[-3000:]
    ends = [a["cause"] for a in _attempts(folder) if a["event"] == "end"]
    assert ends == ["oom-killed", "finished"], _attempts(folder)
    assert [a.get("cause") for a in _attempts(folder) if a["event"] == "begin"] == [None, "oom"]


def test_max_restarts_reached_is_said_and_not_restarted(tmp_path):
    folder = tmp_path / "runs" / "rec"
    proc = _launch(
        tmp_path, _preset(tmp_path, "always", "[recovery]\nmax_restarts = 1\nbackoff_s = 0.1")
    )
    os.killpg(_paused(folder, proc, 1), signal.SIGKILL)
    os.killpg(_paused(folder, proc, 2), signal.SIGKILL)
    code, out = _end(proc)
    assert code == 1, out[-3000:]
    assert "not restarted ([recovery]): max_restarts = 1 reached (1 restart used)" in out, out
    assert [a["attempt"] for a in _attempts(folder) if a["event"] == "begin"] == [1, 2]
    assert json.loads((folder / "verdict.json").read_text())["recovery"]["used"] == 1


def test_a_non_finite_loss_is_never_restarted(tmp_path):
    folder = tmp_path / "runs" / "rec"
    proc = _launch(tmp_path, _preset(tmp_path, "nan", "[recovery]\nmax_restarts = 3"))
    os.killpg(_paused(folder, proc, 1), signal.SIGKILL)
    code, out = _end(proc)
    assert code == 1, out[-3000:]
    assert "not restarted ([recovery]): the loss is not finite (loss is nan at step 20)" in out
    assert [a["attempt"] for a in _attempts(folder) if a["event"] == "begin"] == [1]


def test_a_users_stop_is_never_restarted(tmp_path):
    folder = tmp_path / "runs" / "rec"
    proc = _launch(tmp_path, _preset(tmp_path, "once", "[recovery]\nmax_restarts = 3"))
    _paused(folder, proc, 1)
    stop = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "stop", str(folder), "--yes"],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert stop.returncode == 0, stop.stdout + stop.stderr
    code, out = _end(proc)
    assert code == 1, out[-3000:]
    assert "not restarted ([recovery]): a user stopped it" in out, out[-3000:]
    assert [a["attempt"] for a in _attempts(folder) if a["event"] == "begin"] == [1]


def test_babysit_says_the_restart_due_and_how_to_make_it(tmp_path):
    """`babysit` watches a detached run and does not restart it: it says what was due."""
    folder = tmp_path / "runs" / "rec"
    preset = _preset(tmp_path, "once", "[recovery]\nmax_restarts = 2")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "fontaine_tui", *args],
            cwd=tmp_path,
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert cli("launch", str(preset), "--detach").returncode == 0
    deadline = time.monotonic() + 60
    while not (paused := list(folder.glob("paused-*"))):
        assert time.monotonic() < deadline, _attempts(folder)
        time.sleep(0.1)
    os.kill(int(paused[0].name.split("-")[1]), signal.SIGKILL)  # the trainer, not its wrapper
    while (folder / "command.exits.jsonl").exists() is False:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    out = cli("babysit", str(folder), "--once")
    said = out.stdout + out.stderr
    assert "not restarted: preemption makes restart 1 of 2, but this watcher does not" in said
    assert "restart runs (launch does)" in said
    assert f"fontaine-tui launch PRESET --resume --output-dir {folder}" in said, said
    assert [a["attempt"] for a in _attempts(folder) if a["event"] == "begin"] == [1]


class Output:
    """launch --plain's output, read line by line as it comes (a thread)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        import threading

        self.proc, self.lines = proc, []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def wait_for(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            assert self.proc.poll() is None or self.reader.is_alive(), "".join(self.lines)
            assert time.monotonic() < deadline, "".join(self.lines)[-3000:]
            time.sleep(0.05)

    def end(self) -> tuple[int, str]:
        code = self.proc.wait(120)
        self.reader.join(10)
        return code, "".join(self.lines)


BACKOFF = "[recovery]\nmax_restarts = 2\nbackoff_s = 30"  # a wait no test reaches the end of


def test_a_users_stop_during_the_backoff_cancels_the_restart(tmp_path):
    """`fontaine-tui stop` between an attempt's end and its restart: no restart is made."""
    folder = tmp_path / "runs" / "rec"
    proc = _launch(tmp_path, _preset(tmp_path, "once", BACKOFF))
    out = Output(proc)
    os.killpg(_paused(folder, proc, 1), signal.SIGKILL)
    out.wait_for("restart 1 of 2 in 30 s ([recovery]): preemption")
    began = time.monotonic()
    stop = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "stop", str(folder), "--yes"],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert stop.returncode == 0, stop.stdout + stop.stderr
    code, said = out.end()
    assert time.monotonic() - began < 25, said  # cancelled, not waited out
    assert "restart 1 of 2 not made: a user stopped the run during its backoff" in said, said
    assert [a["attempt"] for a in _attempts(folder) if a["event"] == "begin"] == [1]
    assert [a["attempt"] for a in _attempts(folder) if a["event"] == "stop"] == [1]
    assert code == 1, said[-3000:]


def test_ctrl_c_during_the_backoff_cancels_the_restart_as_a_users_stop(tmp_path):
    """The user's Ctrl-C in the backoff: no restart, and attempts.jsonl records the stop, so a
    later watcher does not offer the restart either."""
    folder = tmp_path / "runs" / "rec"
    proc = _launch(tmp_path, _preset(tmp_path, "once", BACKOFF))
    out = Output(proc)
    os.killpg(_paused(folder, proc, 1), signal.SIGKILL)
    out.wait_for("restart 1 of 2 in 30 s ([recovery]): preemption")
    time.sleep(0.5)  # in the wait
    proc.send_signal(signal.SIGINT)
    code, said = out.end()
    assert "restart 1 of 2 not made: interrupted" in said, said[-3000:]
    assert "Traceback" not in said, said
    assert [a["attempt"] for a in _attempts(folder) if a["event"] == "begin"] == [1]
    assert [a["attempt"] for a in _attempts(folder) if a["event"] == "stop"] == [1]
    babysat = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "babysit", str(folder), "--once"],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "makes restart" not in babysat.stdout + babysat.stderr
