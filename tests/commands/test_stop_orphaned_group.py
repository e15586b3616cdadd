"""`runs` and `stop` of a detached [command] whose registered process was killed with SIGKILL.

The registered pid is the command's exit-noting parent (core/exitnote.py), the leader of the
session the launch made. Killed with SIGKILL, it notes nothing; the trainer ignores the
SIGTERM it then gets and keeps writing its log in that process group. `runs` says the run is
running, its group living on without its parent; `stop` signals the group (SIGINT first),
and records the stop: a stop line and a "stopped" end in attempts.jsonl, the registry's
status. A group whose members started before the attempt the run recorded is not the run's:
`stop` refuses in one line and sends nothing. Real subprocesses: the CLI, a Python trainer
writing JSONL, a real kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from fontaine_tui.core.runs.registry import Registry

pytestmark = pytest.mark.slow
TRAINER = """import json, signal, sys, time
from pathlib import Path
signal.signal(signal.SIGTERM, signal.SIG_IGN)
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
with open(out / "log.jsonl", "a") as f:
    for step in range(1, 1200):
        f.write(json.dumps({"step": step, "train/loss": 1.0 / step}) + "\\n")
        if step % 10 == 0:
            f.write(json.dumps({"step": step, "eval_loss": 0.5}) + "\\n")
        f.flush()
        time.sleep(0.05)
"""


def _preset(tmp_path: Path, name: str) -> Path:
    (tmp_path / "trainer.py").write_text(TRAINER)
    path = tmp_path / f"{name}.toml"
    path.write_text(f"""[run]
name = "{name}"
output_dir = "runs/{name}"

[command]
argv = ["{sys.executable}", "{tmp_path / "trainer.py"}", "{{output_dir}}"]
resume_argv = ["{sys.executable}", "{tmp_path / "trainer.py"}", "{{output_dir}}"]

[source]
kind = "jsonl"
eval_every = 10

[verdict]
metric = "eval_loss"
anchor_step = 10
endpoint_step = 60000
healthy_max = 0.3
drift_min = 1.0
""")
    return path


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"}
    env.update(
        PYTHONUNBUFFERED="1",
        XDG_CONFIG_HOME=str(tmp_path / "cfg"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _trainers(pgid: int) -> list[int]:
    """The live trainer processes of the test's own group `pgid`."""
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if (
                os.getpgid(p.pid) == pgid
                and p.info["status"] != psutil.STATUS_ZOMBIE
                and (p.info["cmdline"] or ["", ""])[1].endswith("trainer.py")
            ):
                out.append(p.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return out


@pytest.fixture
def orphaned(tmp_path: Path) -> Iterator[tuple[Path, int, int]]:
    """(the run folder, the registered pid, the trainer's pid), the registered one killed."""
    res = _cli(tmp_path, "launch", str(_preset(tmp_path, "ign")), "--detach", "-j")
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    folder, pid = Path(doc["run_dir"]), int(doc["pid"])
    try:
        deadline = time.monotonic() + 60
        log = folder / "log.jsonl"
        while not (log.exists() and b"eval_loss" in log.read_bytes()):  # its handler is set
            assert time.monotonic() < deadline, "the trainer never logged a probe"
            time.sleep(0.05)
        [trainer] = _trainers(pid)
        os.kill(pid, signal.SIGKILL)  # the registered pid: the exit-noting parent
        while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.3)  # the trainer got its parent's-death SIGTERM, and ignored it
        assert _trainers(pid) == [trainer]
        yield folder, pid, trainer
    finally:
        if _trainers(pid):  # what a failed stop left running, in the test's own group
            os.killpg(pid, signal.SIGKILL)


def _row(tmp_path: Path) -> dict:
    res = _cli(tmp_path, "runs", "--json")
    assert res.returncode == 0, res.stderr
    [row] = [json.loads(x) for x in res.stdout.splitlines() if x.strip()]
    return row


def _events(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "attempts.jsonl").read_text().splitlines()]


def test_runs_says_the_run_runs_on_in_its_group(tmp_path, registry_path, orphaned) -> None:
    _, pid, trainer = orphaned
    row = _row(tmp_path)
    assert row["state"] == "running", row
    said = f"pid {pid} is gone, but its process group lives on without its parent"
    assert said in row["detail"] and f"pid {trainer}" in row["detail"], row
    table = _cli(tmp_path, "runs", "--update")
    assert " running " in table.stdout, table.stdout
    assert Registry(registry_path).entries()[0].status == "running"


def test_stop_signals_the_group_left_and_records_the_stop(
    tmp_path, registry_path, orphaned
) -> None:
    folder, pid, trainer = orphaned
    res = _cli(tmp_path, "stop", "runs/ign", "--yes")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "already ended" not in res.stdout, res.stdout
    assert (
        f"stopping pid {trainer}, left running in the process group of command pid {pid} "
        "(gone) (SIGINT, then SIGTERM, then SIGKILL)"
    ) in res.stderr, res.stderr
    assert "command stopped by SIGINT at step" in res.stdout, res.stdout
    assert _trainers(pid) == []
    events = _events(folder)
    assert [e["event"] for e in events] == ["begin", "stop", "end"], events
    assert (events[-1]["cause"], events[-1]["signal"]) == ("stopped", "SIGINT"), events[-1]
    [entry] = Registry(registry_path).entries()
    assert entry.status == "stopped", entry
    assert _row(tmp_path)["state"] == "stopped"


def test_a_group_whose_members_started_before_the_attempt_is_refused(
    tmp_path, registry_path, orphaned
) -> None:
    """The attempt and the registry say the run's process began 30 s after the trainer
    did (an edited file): its group is not the one that attempt made, and nothing is sent."""
    folder, pid, trainer = orphaned
    lines = (folder / "attempts.jsonl").read_text().splitlines()
    begin = json.loads(lines[0])
    begin["pid_started"] += 30
    (folder / "attempts.jsonl").write_text(json.dumps(begin) + "\n")
    registry = Registry(registry_path)
    [entry] = registry.entries()
    registry.update(entry.run_dir, entry.host, pid_started=begin["pid_started"])

    res = _cli(tmp_path, "stop", "runs/ign", "--yes")
    assert res.returncode == 2, res.stdout + res.stderr
    [line] = res.stderr.strip().splitlines()
    assert f"command pid {pid} is gone and its process group lives on (pid {trainer})" in line
    assert f"pid {trainer} started " in line and "before the run's attempt" in line, line
    assert line.endswith("not signalled (stop it by hand if it is yours)"), line
    time.sleep(0.3)
    assert _trainers(pid) == [trainer]  # nothing sent
    assert [e["event"] for e in _events(folder)] == ["begin"]  # nothing recorded
    assert Registry(registry_path).entries()[0].status == "running"


def test_a_resume_is_refused_while_the_group_left_runs(tmp_path, registry_path, orphaned) -> None:
    """A second trainer would write the same log beside the one still running."""
    folder, pid, trainer = orphaned
    res = _cli(tmp_path, "launch", str(tmp_path / "ign.toml"), "--resume", "--detach", "-j")
    if res.returncode == 0:  # started: the test stops what it started
        os.killpg(json.loads(res.stdout.strip().splitlines()[-1])["pid"], signal.SIGKILL)
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"this run is still running as pid {trainer} (fontaine-tui runs; stop it first)" in (
        res.stderr
    ), res.stderr
    assert [e["event"] for e in _events(folder)] == ["begin"]  # no second attempt
