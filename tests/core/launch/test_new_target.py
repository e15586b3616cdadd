"""What a new launch target costs: its module and its line in the table of kinds, nothing else.

k8s_target.py is the whole of a new target (`--on k8s:NS`, standing in for a cluster that runs
the command here). It goes into a copy of fontaine_tui as core/launch/targets/k8s.py with one
line in targets/pick.py's KINDS, and the copy's own `launch --on k8s:NS` and `stop` run it: the
run is registered as a k8s run, its telemetry recorded, and a `stop` from another process
reopens it through the new module and reads how the command ended (cause "stopped", never
"unknown"). The exit note, the command's `who` and the recorder are the launched run's
(model/launched.py), not the target's."""

from __future__ import annotations

import ast
import contextlib
import difflib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.host.recorder import MODULE as RECORDER
from fontaine_tui.core.runfolder import TELEMETRY, RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.model.launched import LaunchedRun

PACKAGE = Path(__file__).resolve().parents[3] / "fontaine_tui"
TARGETS = "core/launch/targets"
NEW = Path(__file__).with_name("k8s_target.py")
TABLE = "KINDS: dict[str, str] = {\n"
LINE = '    "k8s": "fontaine_tui.core.launch.targets.k8s",  # k8s:NAMESPACE\n'

TRAINER = """import json, os, time
out = os.environ["FONTAINE_OUTPUT_DIR"]
step = 0
while True:
    step += 1
    with open(os.path.join(out, "metrics.jsonl"), "a") as fh:
        fh.write(json.dumps({"step": step, "loss": 1.0}) + "\\n")
    time.sleep(0.05)
"""


def with_k8s(tmp_path: Path) -> Path:
    """A copy of fontaine_tui with the new target: its module, and its line in the table."""
    tree = tmp_path / "tree"
    shutil.copytree(PACKAGE, tree / "fontaine_tui", ignore=shutil.ignore_patterns("__pycache__"))
    targets = tree / "fontaine_tui" / TARGETS
    shutil.copy(NEW, targets / "k8s.py")
    pick = targets / "pick.py"
    text = pick.read_text()
    assert text.count(TABLE) == 1
    pick.write_text(text.replace(TABLE, TABLE + LINE))
    return tree


def changed_lines(before: Path, after: Path) -> dict[str, int]:
    """Each .py file that differs between two trees, and how many lines it adds or removes."""
    out = {}
    names = {p.relative_to(d).as_posix() for d in (before, after) for p in d.rglob("*.py")}
    for name in sorted(names):
        old, new = before / name, after / name
        a = old.read_text().splitlines() if old.exists() else []
        b = new.read_text().splitlines() if new.exists() else []
        diff = [
            line
            for line in difflib.unified_diff(a, b, lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
        if diff:
            out[name] = len(diff)
    return out


def _preset(tmp_path: Path) -> Path:
    (tmp_path / "trainer.py").write_text(TRAINER)
    path = tmp_path / "k8s.toml"
    path.write_text(f'''[run]
name = "k8s"
output_dir = "runs/k8s"
[command]
argv = ["{sys.executable}", "{tmp_path / "trainer.py"}"]
[source]
kind = "jsonl"
[verdict]
metric = "eval_loss"
anchor_step = 20
endpoint_step = 40
healthy_max = 0.0
drift_min = 0.2
''')
    return path


def _until(what: str, done, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def _recorders(folder: Path) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if RECORDER in cmd and str(folder) in cmd:
            found.append(p)
    return found


def test_a_new_target_launches_registers_records_and_stops(tmp_path: Path) -> None:
    tree = with_k8s(tmp_path)
    assert changed_lines(PACKAGE, tree / "fontaine_tui") == {
        f"{TARGETS}/k8s.py": len(NEW.read_text().splitlines()),
        f"{TARGETS}/pick.py": 1,
    }
    imported = {  # it stands alone: no other target's module
        n.module
        for n in ast.walk(ast.parse(NEW.read_text()))
        if isinstance(n, ast.ImportFrom) and n.module
    }
    assert {m for m in imported if m.startswith("fontaine_tui.core.launch.targets.")} == {
        "fontaine_tui.core.launch.targets.base"
    }
    env = {k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"}
    env |= {"PYTHONPATH": str(tree), "FONTAINE_TELEMETRY_S": "0.5"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "fontaine_tui", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    folder = RunFolder(tmp_path / "run")
    launch = cli(
        "launch", str(_preset(tmp_path)), "--on", "k8s:ns", "--output-dir", str(folder.root),
        "--detach", "--json",
    )  # fmt: skip
    assert launch.returncode == 0, launch.stderr
    pid = json.loads(launch.stdout.splitlines()[-1])["pid"]
    try:
        [entry] = Registry().entries()
        assert (entry.target, entry.host, entry.pid) == ("k8s", hostname(), pid)
        prereg = json.loads(folder.prereg.read_text())
        assert prereg["provenance"]["k8s"] == {"namespace": "ns"}
        _until("the command trains", (folder.root / "metrics.jsonl").exists)
        _until("its telemetry is recorded", (folder.root / TELEMETRY).exists)
        stop = cli("stop", str(folder.root), "--yes", "--json")  # the command is not its child
        assert stop.returncode == 0, stop.stderr
        assert f"stopping pod of pid {pid}" in stop.stderr  # reopened by the new module
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)  # a failed stop leaves nothing running
    lines = [json.loads(x) for x in folder.attempts.read_text().splitlines()]
    end = lines[-1]
    assert (end["event"], end["cause"], end["signal"]) == ("end", "stopped", "SIGINT"), end
    assert json.loads(stop.stdout.splitlines()[-1])["signal"] == "SIGINT", stop.stdout
    _until("the recorder ends with the run", lambda: not _recorders(folder.root), 30)


def test_a_kind_this_fontaine_tui_does_not_know_is_refused_before_any_signal(
    tmp_path: Path,
) -> None:
    registry = Registry()
    entry = Entry("k8s", str(tmp_path / "run"), hostname(), pid=os.getpid(), target="k8s")
    registry.upsert(entry)
    with pytest.raises(InputError, match=r"target kind 'k8s': not one this fontaine-tui knows"):
        LaunchedRun.from_registry(entry, registry, hostname())
