"""LaunchedRun: one launch sequence (guards, freeze, start, attempt, register) and one end,
through the local target, with a real subprocess standing in for the engine."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.launch.targets.local import LocalTarget
from fontaine_tui.core.launch.targets.pick import pick_target
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run import attempts
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Registry
from fontaine_tui.model.launched import LaunchedRun

# writes its log into its working folder (the maker's cwd), its end event's detail from
# the maker's environment
TOY = """
import json, os, time
with open("train_log.jsonl", "a") as log:
    for step in range(1, 4):
        log.write(json.dumps({"kind": "train", "step": step, "time": time.time(),
                              "loss": 1.0, "step_s": 0.01, "data_s": 0.0}) + "\\n")
    log.write(json.dumps({"kind": "event", "step": 3, "time": time.time(), "event": "end",
                          "detail": os.environ["TOY_NOTE"]}) + "\\n")
print("toy done")
"""


class ToyMaker:
    """A maker of another command than the engine's: argv, env and cwd its own."""

    def __init__(self, program: str = sys.executable) -> None:
        self.program = program

    def argv(self, preset: Preset, folder: Path, resume: bool, endpoint=None) -> list[str]:
        return [self.program, "-c", TOY]

    def env(self, preset: Preset, folder: Path) -> Mapping[str, str] | None:
        return {"TOY_NOTE": "toy finished", "PATH": "/usr/bin:/bin"}

    def cwd(self, preset: Preset, folder: Path) -> Path | None:
        return folder

    def provenance(self, preset: Preset, folder: Path, argv: list[str]) -> dict[str, object]:
        return {"command": "toy"}


def _wait(run: LaunchedRun, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while (info := run.handle.poll()) is None:
        assert time.monotonic() < deadline, "the toy never exited"
        time.sleep(0.05)
    return info


def test_a_local_launch_registers_runs_and_finishes_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    preset = load_preset("smoke")
    registry = Registry()
    run = LaunchedRun.launch(
        LocalTarget(),
        preset,
        output_dir=str(tmp_path / "run"),
        poll_s=0.5,
        registry=registry,
        maker=ToyMaker(),
    )
    folder = RunFolder(tmp_path / "run")
    assert run.folder == folder and run.run_dir == str(folder.root)
    entry = registry.find(folder.root, hostname())
    assert entry is not None and (entry.status, entry.pid) == ("running", run.handle.pid)
    assert entry.pid_started > 0 and entry.poll_cadence_s == 0.5 and not entry.job
    assert entry.target == "local"  # how `stop` and `babysit` reopen it
    prereg = json.loads(folder.prereg.read_text())
    assert prereg["provenance"]["command"] == "toy"  # the maker's, with the target's device
    assert prereg["provenance"]["device"]["requested"] == preset.platform["device"]
    assert run.attempt == 1 and attempts.open_attempt(folder).number == 1

    info = _wait(run)
    assert run.finish_seen() and run.finish_seen()  # the second finishes nothing again
    assert (folder.root / "train_log.jsonl").exists()  # written in the maker's cwd
    assert "toy done" in folder.engine_out.read_text()
    assert info.status == "finished" and info.last_step == 3
    entry = registry.find(folder.root, hostname())
    assert (entry.status, entry.exit_code, entry.last_step) == ("exited", 0, 3)  # 3 of 40
    assert attempts.open_attempt(folder) is None  # the attempt ended
    assert folder.verdict.exists()
    assert run.after_console(0) == run.code == 1  # short of recipe.steps: not clean
    out = capsys.readouterr().out
    assert "VERDICT:" in out and out.count("verdict.json written") == 1

    again = LaunchedRun.from_registry(entry, registry, hostname())
    assert again.handle.poll() is not None and again.opened is None


def test_a_start_that_fails_leaves_no_launched_run(tmp_path: Path) -> None:
    registry = Registry()
    with pytest.raises(InputError, match=r"cannot start the engine \(/nonexistent/toy\)"):
        LaunchedRun.launch(
            LocalTarget(),
            load_preset("smoke"),
            output_dir=str(tmp_path / "run"),
            registry=registry,
            maker=ToyMaker("/nonexistent/toy"),
        )
    folder = RunFolder(tmp_path / "run")
    assert not folder.prereg.exists() and not folder.attempts.exists()
    assert registry.entries() == []


def test_targets_are_picked_from_on() -> None:
    assert isinstance(pick_target(None), LocalTarget)
    assert type(pick_target("slurm:gpu")).__name__ == "SlurmTarget"
    ssh = pick_target("slurm:gpu@login1")
    assert (type(ssh).__name__, ssh.host, ssh.remote) == ("SshHostTarget", "login1", True)
    with pytest.raises(InputError, match="expected a host name"):
        pick_target("-oProxyCommand=x")


def test_a_blinded_start_that_fails_leaves_no_review_head(tmp_path: Path) -> None:
    # a blinded run's review trail is kept from launch: gone with prereg.json when nothing ran
    text = (Path(__file__).parents[2] / "presets" / "smoke.toml").read_text()
    path = tmp_path / "blind.toml"
    path.write_text(text.replace("[verdict]\n", "[verdict]\nblind = true\n", 1))
    with pytest.raises(InputError, match=r"cannot start the engine"):
        LaunchedRun.launch(
            LocalTarget(),
            load_preset(path),
            output_dir=str(tmp_path / "run"),
            registry=Registry(),
            maker=ToyMaker("/nonexistent/toy"),
        )
    folder = RunFolder(tmp_path / "run")
    assert not folder.prereg.exists() and not (folder.root / "review.jsonl.head").exists()


def test_the_exit_line_of_a_blinded_launch_hides_the_presets_label(tmp_path: Path) -> None:
    # the trainer's end words name the preset's [labels] word for a class: the read itself
    text = (Path(__file__).parents[2] / "presets" / "smoke.toml").read_text()
    path = tmp_path / "blind.toml"
    path.write_text(
        text.replace("[verdict]\n", "[verdict]\nblind = true\n", 1)
        + '\n[labels]\nHEALTHY = "LEARNED"\n'
    )

    class Maker(ToyMaker):
        def argv(self, preset: Preset, folder: Path, resume: bool, endpoint=None) -> list[str]:
            return [self.program, "-c", "import sys; sys.exit('early stop: LEARNED')"]

    run = LaunchedRun.launch(
        LocalTarget(),
        load_preset(path),
        output_dir=str(tmp_path / "run"),
        registry=Registry(),
        maker=Maker(),
    )
    _wait(run)
    info = run.record_exit()
    assert info is not None
    said = info.describe(*run.blind_rule())
    assert "LEARNED" not in said and "hidden until the final read" in said, said
