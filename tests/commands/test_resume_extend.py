"""`launch --resume` after an applied extend: the real engine trains on to the new endpoint.

presets/smoke.toml cut to 20 steps (anchor 10, endpoint 20; CPU) launched with --plain;
`amend --extend-to 40` declared while it runs (before the step-20 probe, so it is applied);
the run ends at its recipe's 20, UNDECIDABLE (no probe at the endpoint in force); `launch
--resume` then carries the endpoint in force to the engine, which trains to 40 (a probe on
the cadence at 30, then the endpoint's), and the verdict is final there. Half the smoke
preset's steps: each probe costs as much as a dozen steps.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.run.attempts import read_attempts
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.record import EXIT_CODES

if importlib.util.find_spec("torch") is None:  # the engine needs it (not imported here)
    pytest.skip("torch is not installed", allow_module_level=True)
# the engines it launches train on the default corpus: built once for the run (corpus_dir)
pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.usefixtures("corpus_dir")]
TIMEOUT = 300
STEPS, EXTEND = 20, 40  # the recipe's steps, the endpoint the amendment moves it to


def _cli(cwd: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "fontaine_tui", *args]


def _env(cwd: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "XDG_CONFIG_HOME": str(cwd / "config")}
    env.pop("FONTAINE_NOTIFY", None)
    return env


def _preset(cwd: Path) -> Path:
    """presets/smoke.toml (named smoke) with STEPS steps, read at 10 and STEPS."""
    text = (Path(__file__).resolve().parents[2] / "presets" / "smoke.toml").read_text()
    for old, new in (
        ("\nsteps = 40\n", f"\nsteps = {STEPS}\n"),
        ("\nanchor_step = 20\n", "\nanchor_step = 10\n"),
        ("\ndeclared_before_step = 20\n", "\ndeclared_before_step = 10\n"),  # the anchor
        ("\nendpoint_step = 40\n", f"\nendpoint_step = {STEPS}\n"),
    ):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = cwd / "smoke.toml"
    path.write_text(text)
    return path


def _launch(cwd: Path, *extra: str) -> subprocess.Popen:
    preset = str(_preset(cwd))
    argv = _cli(cwd, "launch", preset, "--plain", "--output-dir", "run", "--poll", "0.5")
    return subprocess.Popen(
        [*argv, *extra],
        cwd=cwd,
        env=_env(cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _cli(cwd, *args), cwd=cwd, env=_env(cwd), capture_output=True, text=True, timeout=60
    )


def test_resume_after_an_applied_extend_trains_to_the_new_endpoint(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    proc = _launch(tmp_path)
    deadline = time.monotonic() + TIMEOUT
    while not folder.prereg.exists():  # frozen before the engine starts
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    amend = _run(tmp_path, "amend", "run", "--extend-to", str(EXTEND), "--text", "slow warm-up")
    assert amend.returncode == 0, amend.stdout + amend.stderr
    assert "applied: " in amend.stdout and f"moves from {STEPS} to {EXTEND}" in amend.stdout
    out, err = proc.communicate(timeout=TIMEOUT)
    assert f"engine finished at step {STEPS}" in out, err[-2000:]
    first = json.loads(folder.verdict.read_text())  # the endpoint is EXTEND now
    assert (first["verdict"], first["endpoint_step"]) == ("UNDECIDABLE", EXTEND)
    assert f"no probe at the endpoint (step {EXTEND})" in first["reason"]
    assert f"the run ended at step {STEPS}" in first["reason"]

    resumed = _launch(tmp_path, "--resume")
    out, err = resumed.communicate(timeout=TIMEOUT)
    assert "resumed smoke" in out and "Traceback" not in err, err[-2000:]
    assert f"engine finished at step {EXTEND}" in out, out[-2000:] + err[-2000:]
    store = load_log(folder.log)
    assert [e.event for e in store.events] == ["start", "end", "resume", "end"]
    assert store.last_step == EXTEND and store.probe_steps()[-2:] == [30, EXTEND]
    argv = list(store.metas[-1].argv)
    assert argv[argv.index("--extend-to") + 1] == str(EXTEND)  # the engine was told it
    assert [(a.kind, a.cause) for a in read_attempts(folder)] == [
        ("launch", "finished"),
        ("resume", "finished"),
    ]
    final = json.loads(folder.verdict.read_text())
    assert (final["read_step"], final["provisional"]) == (EXTEND, False)
    assert final["verdict"] != "UNDECIDABLE" and final["delta"] is not None, final["reason"]
    assert resumed.returncode == EXIT_CODES[final["verdict"]]
    res = _run(tmp_path, "verdict", "run", "-j")
    doc = json.loads(res.stdout)
    assert (doc["read_step"], doc["provisional"], doc["verdict"]) == (
        EXTEND,
        False,
        final["verdict"],
    )
    assert res.returncode == EXIT_CODES[doc["verdict"]]  # no PROVISIONAL offset
