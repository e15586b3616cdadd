"""RAM and run-folder guards, on both sides of their thresholds, and their CLI faces."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fontaine_tui import cli
from fontaine_tui.core.host.memory import HostRam
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.launch import capacity, guards
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry

GIB = 1 << 30


def tel(available: int, total: int = 64 * GIB) -> TelemetrySnapshot:
    return TelemetrySnapshot(0.0, None, "no NVIDIA GPU", HostRam(total, available, "meminfo"), "")


def test_ram_estimate_follows_the_knobs() -> None:
    demos = capacity.ram_estimate(load_preset("demosonly_1gpu"))
    micro = 96 // 8
    assert demos.bytes == capacity.RANK_BYTES + 8 * (
        capacity.WORKER_BYTES + 4 * micro * capacity.SAMPLE_BYTES
    )
    assert "8 workers" in demos.formula and "prefetch 4 x micro-batch 12" in demos.formula
    assert capacity.ram_estimate(load_preset("smoke")).bytes < demos.bytes


def test_ram_check_on_both_sides_of_warn_and_refuse() -> None:
    preset = load_preset("demosonly_1gpu")
    need = capacity.ram_estimate(preset).bytes
    total = 64 * GIB
    warn_left, alert_left = math.ceil(0.10 * total), math.ceil(0.05 * total)
    cases = [
        (need + warn_left, "ok"),
        (need + warn_left - 1, "warn"),
        (need + alert_left, "warn"),
        (need + alert_left - 1, "refuse"),
    ]
    for available, level in cases:
        f = capacity.check_ram(preset, tel(available, total))
        assert f.level == level, (available, f)
    f = capacity.check_ram(preset, tel(need + alert_left - 1, total))
    assert "the platform knobs imply ~3.9 GiB" in f.message and "--yes-ram" in f.message
    forced = capacity.check_ram(preset, tel(need + alert_left - 1, total), yes_ram=True)
    assert forced.level == "warn" and "launching anyway (--yes-ram)" in forced.message


def test_unknown_ram_warns_but_does_not_refuse() -> None:
    t = TelemetrySnapshot(0.0, None, "x", None, "no /proc/meminfo (Permission denied)")
    f = capacity.check_ram(load_preset("smoke"), t)
    assert f.level == "warn" and "Permission denied" in f.message


def test_refusal_is_one_line_naming_every_reason(tmp_path: Path) -> None:
    preset = load_preset("demosonly_1gpu")
    folder = RunFolder(tmp_path)
    (tmp_path / "train_log.jsonl").write_text("")
    found = guards.check_all(preset, folder, tel(GIB))
    why = guards.refusal(found)
    assert why is not None and "\n" not in why
    assert "already holds a launched run" in why and "RAM:" in why


def test_a_running_run_cannot_be_launched_again(tmp_path: Path) -> None:
    [f] = guards.check_folder(load_preset("smoke"), RunFolder(tmp_path), True, running_pid=1234)
    assert f.level == "refuse" and "still running as pid 1234" in f.message


def test_cli_refuses_a_registered_live_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    import psutil

    from fontaine_tui.core.host.memory import hostname

    monkeypatch.chdir(tmp_path)
    run = (tmp_path / "run").resolve()
    me = psutil.Process(os.getpid())
    Registry().upsert(
        Entry("smoke", str(run), hostname(), pid=me.pid, pid_started=me.create_time())
    )
    assert cli.main(["launch", "smoke", "--plain", "--output-dir", "run", "--resume"]) == 2
    err = capsys.readouterr().err
    assert f"still running as pid {me.pid}" in err
    assert not run.exists()


def test_doctor_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["doctor", "smoke", "--output-dir", str(tmp_path / "new")]) == 0
    out = capsys.readouterr().out
    assert "launch would go ahead" in out and "engine: " in out and "--run-name smoke" in out
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "prereg.json").write_text("{}")
    assert cli.main(["doctor", "smoke", "--output-dir", str(tmp_path / "old")]) == 1
    assert "refusing to launch:" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old"]  # doctor writes nothing


def test_bad_preset_and_poll_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["launch", "nosuchpreset", "--plain"]) == 2
    assert cli.main(["launch", "smoke", "--plain", "--poll", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(e.startswith("fontaine-tui: error:") for e in err)


def test_missing_init_is_refused_naming_the_preset_that_makes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    preset = load_preset("demosonly_1gpu")
    assert preset.recipe["init"] == "outputs/train/pretrain_so101"
    [finding] = guards.check_init(preset)
    assert finding.level == "refuse"
    assert finding.message.startswith(
        "recipe.init outputs/train/pretrain_so101: no engine "
        "checkpoint or Hugging Face model folder at "
    )
    assert "run `fontaine-tui launch pretrain_so101` from this folder first" in finding.message
    # the launch refuses it in the same one line as the other reasons
    findings = guards.check_all(preset, RunFolder(tmp_path / "run"), tel(60 * GIB))
    assert "pretrain_so101" in (guards.refusal(findings) or "")


@pytest.mark.parametrize(
    "layout",
    [
        ("checkpoints/step-000300/meta.json",),  # the pretraining run's folder
        ("model.safetensors", "meta.json"),  # one engine checkpoint
        ("config.json",),  # a Hugging Face model folder
        ("vision/config.json", "backbone/config.json"),  # its two parts
    ],
)
def test_init_found_in_each_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: tuple[str, ...]
) -> None:
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "outputs/train/pretrain_so101"
    for name in layout:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}")
    [finding] = guards.check_init(load_preset("demosonly_1gpu"))
    assert finding.level == "ok", finding


def test_incomplete_checkpoint_is_not_an_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    step = tmp_path / "outputs/train/pretrain_so101/checkpoints/step-000300"
    step.mkdir(parents=True)
    (step / "model.safetensors").write_bytes(b"")  # meta.json, written last, is missing
    [finding] = guards.check_init(load_preset("demosonly_1gpu"))
    assert finding.level == "refuse"


@pytest.mark.parametrize("mode", ["finish", "run"], ids=["finished", "stopped"])
def test_a_finished_log_without_attempts_has_nothing_to_resume(tmp_path: Path, mode: str) -> None:
    """No attempts.jsonl (a run launched before it was kept): the log's own `end` event says
    whether the run finished (nothing to resume) or was stopped (resumed from its checkpoint)."""
    import signal
    import subprocess
    import sys
    import time

    from fontaine_tui.core.verdict.prereg import freeze

    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    preset = load_preset("smoke")
    freeze(folder, preset, ["x"], "h")
    fake = Path(__file__).with_name("fake_engine.py")
    engine = subprocess.Popen([sys.executable, str(fake), str(folder.root), mode])
    if mode == "run":
        while "checkpoint" not in (folder.log.read_text() if folder.log.exists() else ""):
            time.sleep(0.05)
        engine.send_signal(signal.SIGINT)  # it checkpoints and logs `end`: stopped by SIGINT
    engine.wait(30)
    assert folder.log.read_text().splitlines()[-1].count('"event": "end"') == 1
    found = guards.check_folder(preset, folder, True)
    why = guards.refusal(found)
    if mode == "finish":
        assert why is not None and "nothing to resume" in why and "\n" not in why, found
        assert "its log ends: finished at step 8" in why, why
    else:
        assert why is None, why
