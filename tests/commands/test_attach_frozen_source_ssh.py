"""`attach` of a launched [command]'s run reads it through the [source] frozen in its
prereg.json, here and over SSH alike: a real `launch` of a preset whose trainer writes
log.jsonl, then `attach --plain` of its folder, locally and through a real sshd on
127.0.0.1, without and with `-p`, all to the same final verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.verdict.record import EXIT_CODES
from tests.sshd_helper import HOST_ALIAS

ROOT = Path(__file__).resolve().parents[2]

TRAINER = """import json, os
with open(os.path.join(os.environ["FONTAINE_OUTPUT_DIR"], "log.jsonl"), "a") as fh:
    for s in range(1, 61):
        rec = {"step": s, "loss": 2.0 - s / 60}
        if s % 10 == 0:
            rec["eval_loss"] = 1.0 - s / 100
        fh.write(json.dumps(rec) + "\\n")
"""


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def _launch(tmp_path: Path, source: str) -> Path:
    """A finished HEALTHY run of a [command] preset whose trainer writes log.jsonl."""
    (tmp_path / "train.py").write_text(TRAINER)
    (tmp_path / "f.toml").write_text(f'''[run]
name = "f"
output_dir = "runs/f"
[command]
argv = ["{sys.executable}", "train.py"]
[source]
{source}
[verdict]
metric = "eval_loss"
anchor_step = 20
endpoint_step = 60
healthy_max = 0.5
drift_min = 0.6
''')
    res = _cli(tmp_path, "launch", "f.toml", "--plain")
    assert res.returncode == EXIT_CODES["HEALTHY"], res.stdout + res.stderr
    folder = tmp_path / "runs" / "f"
    assert (folder / "log.jsonl").is_file() and not (folder / "train_log.jsonl").exists()
    return folder


@pytest.fixture
def launched(tmp_path: Path, registry_path: Path) -> Path:
    """A launched run whose [source] names its file: log.jsonl."""
    return _launch(tmp_path, 'kind = "jsonl"\npath = "log.jsonl"')


FINAL = "verdict: HEALTHY (final, step 60 of 60"


@pytest.mark.ssh
@pytest.mark.parametrize("preset", [(), ("-p", "./f.toml")], ids=["frozen", "named"])
def test_attach_over_ssh_reads_the_frozen_source_as_here(sshd, launched, tmp_path, preset):
    here = _cli(tmp_path, "attach", "runs/f", "--plain", "--quiet-end", "3", *preset)
    assert here.returncode == EXIT_CODES["HEALTHY"], here.stdout + here.stderr
    assert FINAL in here.stdout
    there = _cli(
        tmp_path,
        "attach",
        f"{HOST_ALIAS}:{launched}",
        "--ssh-config",
        str(sshd.config),
        "--plain",
        "--quiet-end",
        "3",
        *preset,
    )
    out = there.stdout + there.stderr
    assert there.returncode == EXIT_CODES["HEALTHY"], out
    assert FINAL in there.stdout, out
    assert "train_log.jsonl" not in out and "BLINDED" not in out and "source.path" not in out
    steps = [ln for ln in there.stdout.splitlines() if ln.startswith("step ")]
    here_steps = [ln for ln in here.stdout.splitlines() if ln.startswith("step ")]
    assert steps == here_steps and steps


@pytest.mark.ssh
def test_attach_over_ssh_refuses_a_frozen_source_naming_no_file(sshd, tmp_path, registry_path):
    """Here the folder's one *.jsonl is found; over SSH no folder is searched: one line, exit 2."""
    folder = _launch(tmp_path, 'kind = "jsonl"')
    here = _cli(tmp_path, "attach", "runs/f", "--plain", "--quiet-end", "3")
    assert here.returncode == EXIT_CODES["HEALTHY"] and FINAL in here.stdout, here.stderr
    there = _cli(
        tmp_path,
        "attach",
        f"{HOST_ALIAS}:{folder}",
        "--ssh-config",
        str(sshd.config),
        "--plain",
        "--quiet-end",
        "3",
    )
    assert there.returncode == 2, there.stdout + there.stderr
    assert there.stderr.count("\n") == 1 and "Traceback" not in there.stderr
    assert "source.path: name the jsonl file to follow on the remote host" in there.stderr
    assert "verdict:" not in there.stdout and "train_log.jsonl" not in there.stdout


@pytest.mark.ssh
def test_babysit_over_ssh_follows_the_frozen_source(sshd, launched, tmp_path):
    """`babysit host:/run` of the same run reads its log.jsonl, as babysit here does: its
    final read is the run's, posted once the log ends."""
    from tests.commands.test_babysit import env_for
    from tests.core.notify.server import Hook

    hook = Hook()
    try:
        res = subprocess.run(
            [sys.executable, "-m", "fontaine_tui", "babysit", f"{HOST_ALIAS}:{launched}"]
            + ["--poll", "0.3", "--ssh-config", str(sshd.config)],
            cwd=tmp_path,
            env={**env_for(tmp_path, FONTAINE_NOTIFY=hook.url()), "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        titles = [json.loads(r.body)["title"] for r in hook.requests]
    finally:
        hook.close()
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert titles and titles[-1] == "f: VERDICT HEALTHY", (titles, out)
    assert "train_log.jsonl" not in out, out
