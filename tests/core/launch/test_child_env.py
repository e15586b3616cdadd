"""No child process gets a notification secret: FONTAINE_NOTIFY, nor the variable a preset's
`[[notify]] url_env` names. Each child here is a real process that prints its environment."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.launch.engine_argv import engine_identity
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.run.launcher import EngineProcess
from fontaine_tui.core.runfolder import RunFolder
from tests.core.launch.conftest import preset_variant

SECRET = "https://hooks.slack.com/services/T000/B000/SECRETTOKEN"
VAR = "RUN_HOOK_SECRET"
ROOT = Path(__file__).resolve().parents[3]
# prints the names of the variables it got whose value holds the secret, as one JSON list
DUMP = (
    "import json, os; print(json.dumps(sorted(k for k, v in os.environ.items() "
    "if 'SECRETTOKEN' in v)))"
)


@pytest.fixture
def secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Both secrets in this process's environment, and a preset naming VAR loaded (as every
    launch, watch and re-score loads its preset before starting a child)."""
    monkeypatch.setenv("FONTAINE_NOTIFY", SECRET)
    monkeypatch.setenv(VAR, SECRET)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    path = preset_variant(tmp_path, "smoke", "hooked")
    path.write_text(path.read_text() + f'\n[[notify]]\nurl_env = "{VAR}"\n')
    return load_preset(path)


def script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_engine_gets_neither_secret(tmp_path: Path, secrets) -> None:
    folder = RunFolder(tmp_path)
    EngineProcess.start([sys.executable, "-c", DUMP], folder).wait(20)
    assert json.loads(folder.engine_out.read_text()) == []


def test_engine_identity_gets_neither_secret(tmp_path: Path, secrets) -> None:
    python = script(
        tmp_path / "python",
        "import json, os\nprint(json.dumps("
        "{'got': sorted(k for k, v in os.environ.items() if 'SECRETTOKEN' in v)}))",
    )
    assert engine_identity([str(python), "-m", "fontaine_engine", "train"]) == {"got": []}


def test_the_rescore_gets_neither_secret(tmp_path: Path, secrets) -> None:
    from fontaine_tui.core.launch.rescore import ScoreOffer, run_score

    offer = ScoreOffer(tmp_path, "s", "corpus", tmp_path / "out", (sys.executable, "-c", DUMP))
    code, last = asyncio.run(run_score(offer))
    assert (code, json.loads(last)) == (0, [])


def test_sbatch_and_its_job_get_neither_secret(
    tmp_path: Path, secrets, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sbatch hands the job the environment it was given (--export=ALL): a stand-in sbatch
    prints what it got and a job id."""
    from fontaine_tui.core.slurm import client as slurm_client

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    got = tmp_path / "sbatch-env.json"
    script(
        bin_dir / "sbatch",
        "import json, os\n"
        f"open({str(got)!r}, 'w').write(json.dumps(sorted(k for k, v in os.environ.items() "
        "if 'SECRETTOKEN' in v)))\nprint('4242')",
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    assert slurm_client.submit(folder, tmp_path / "job.sh", "debug", "smoke") == "4242"
    assert json.loads(got.read_text()) == []
    # a scheduler query (squeue) gets none either
    script(bin_dir / "squeue", DUMP)
    res = slurm_client.local_runner()(["squeue"])
    assert res is not None and json.loads(res.stdout) == []


def test_ssh_gets_neither_secret(tmp_path: Path, secrets, monkeypatch) -> None:
    """The ssh client (a stand-in here) may forward variables (SendEnv): it gets none."""
    from fontaine_tui.core.runs.fleet import look_host

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    got = tmp_path / "ssh-env.json"
    script(
        bin_dir / "ssh",
        "import json, os\n"
        f"open({str(got)!r}, 'w').write(json.dumps(sorted(k for k, v in os.environ.items() "
        "if 'SECRETTOKEN' in v)))",
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    look_host("elsewhere", [], False, 10, tmp_path)
    assert json.loads(got.read_text()) == []


SPAWNS = {
    ("subprocess", "run"),
    ("subprocess", "Popen"),
    ("subprocess", "check_output"),
    ("subprocess", "call"),
    ("subprocess", "check_call"),
    ("asyncio", "create_subprocess_exec"),
    ("asyncio", "create_subprocess_shell"),
    ("children", "spawn"),  # core/children.py: every child on the event loop
}


def test_every_child_process_is_started_with_child_env() -> None:
    """Every place in fontaine_tui that starts a process passes env=child_env(...)."""
    bare = []
    for path in sorted((ROOT / "fontaine_tui").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and (node.func.value.id, node.func.attr) in SPAWNS
            ):
                continue
            env = next((k.value for k in node.keywords if k.arg == "env"), None)
            if not (
                isinstance(env, ast.Call)
                and isinstance(env.func, ast.Name)
                and env.func.id == "child_env"
            ):
                bare.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert bare == []
