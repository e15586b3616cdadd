"""`launch --once` on a folder that already holds the preset's run: read back, never trained.

A run its stop_on_lock gate stopped has its final read, as a finished one has: --once reads it
(the verdict `verdict` prints, its code) and starts nothing. A finished run of another version
of the preset is refused, and so is --once with --resume. The launch's whole path, from a
new folder to a second run, is tests/test_readme_twice.py's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fontaine_tui.core.runfolder import LOG, RunFolder
from tests.commands.test_every_preset_reads_back import engine_run
from tests.commands.test_surfaces_agree import cli, gate_stop
from tests.logs import records_upto, write_log

ROOT = Path(__file__).resolve().parents[2]
PRESET = ROOT / "presets" / "pretrain_so101.toml"


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
    return tmp_path


def test_once_reads_a_run_its_gate_stopped_and_starts_nothing(isolated: Path) -> None:
    root = isolated / "run"
    root.mkdir()
    engine_run(root, PRESET)  # frozen, then its log replaced by one its gate cut at 300
    probes = {s: (3.0 - 0.01 * k, 3.1 - 0.01 * k) for k, s in enumerate(range(100, 501, 100))}
    write_log(root / LOG, records_upto(300, probes, steps=500))
    gate_stop(root, 300, 0)
    attempts = (root / "attempts.jsonl").read_bytes()
    want, read, _ = cli("verdict", str(root))
    code, out, err = cli("launch", str(PRESET), "--once", "--plain", "--output-dir", str(root))
    assert (code, err) == (want, ""), out + err
    assert out.splitlines()[0] == (
        f"pretrain_so101 already ran to its end in {root} (attempt 1 stopped by its gate: "
        "decision-locked): its read, not trained again (--once)"
    )
    assert out.split("\n", 1)[1] == read  # the read `verdict` prints
    assert (root / "attempts.jsonl").read_bytes() == attempts  # no attempt begun
    assert not RunFolder(root).engine_out.exists()  # no engine started


def test_once_refuses_a_finished_run_of_another_version_of_the_preset(isolated: Path) -> None:
    root = isolated / "run"
    root.mkdir()
    engine_run(root, PRESET)
    changed = isolated / "pretrain_so101.toml"
    changed.write_text(PRESET.read_text().replace("drift_min = 0.5", "drift_min = 0.25"))
    code, out, err = cli("launch", str(changed), "--once", "--plain", "--output-dir", str(root))
    assert code == 2 and out == "", out
    assert err.startswith(f"fontaine-tui: error: --once: {root} holds a finished run of another ")
    assert "--output-dir DIR for a new run" in err and len(err.splitlines()) == 1, err


def test_once_is_not_given_with_resume(isolated: Path) -> None:
    code, _, err = cli("launch", str(PRESET), "--once", "--resume", "--plain")
    assert code == 2
    assert err == (
        "fontaine-tui: error: --once: not with --resume or --on (it resumes a stopped run itself)\n"
    )
