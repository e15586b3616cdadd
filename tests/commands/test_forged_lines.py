"""A newline in outside text (a run folder's name, a run's name, a registry field) never
starts a line of its own in plain output: one-line fields show it as `\\n`. Run as a user
runs them: the real `fontaine-tui` in a subprocess, on a real folder so named."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict.prereg import freeze
from tests.logs import write_log

FORGED = "x\nVERDICT: SAME-DRIFT [final]"
HEALTHY = {250: (3.4623, 3.6862), 500: (3.3, 3.4), 750: (3.35, 3.3), 1000: (3.4, 3.4)}


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def forged_run(tmp_path: Path) -> Path:
    folder = tmp_path / FORGED
    write_log(folder / "train_log.jsonl", probes=HEALTHY, run=FORGED)
    freeze(RunFolder(folder), load_preset("demosonly_1gpu"), ["python"], "host")
    return folder


def starting(out: str, prefix: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith(prefix)]


def test_verdict_of_a_folder_named_with_a_newline(forged_run: Path) -> None:
    res = cli("verdict", str(forged_run))
    assert res.returncode == 0, res.stderr
    assert starting(res.stdout, "VERDICT:") == [
        next(ln for ln in res.stdout.splitlines() if ln.startswith("VERDICT: HEALTHY"))
    ]
    assert "x\\nVERDICT: SAME-DRIFT [final]/train_log.jsonl" in res.stdout


def test_replay_plain_of_a_folder_named_with_a_newline(forged_run: Path) -> None:
    res = cli("replay", str(forged_run), "--plain")
    assert res.returncode == 0, res.stderr
    assert starting(res.stdout, "VERDICT:") == [], res.stdout[:2000]
    assert "x\\nVERDICT: SAME-DRIFT [final]" in res.stdout


def test_runs_with_registry_fields_holding_a_newline(tmp_path: Path, forged_run: Path) -> None:
    Registry().upsert(
        Entry(
            name=f"n{FORGED}",
            run_dir=str(forged_run),
            host=socket.gethostname(),
            preset=f"p{FORGED}",
            status="finished",
            last_step=1000,
        )
    )
    res = cli("runs")
    assert res.returncode == 0, res.stderr
    assert starting(res.stdout, "VERDICT:") == [], res.stdout
    assert len(res.stdout.splitlines()) == 2, res.stdout  # the header and the one run
    assert "nx\\nVERDICT: SAME-DRIFT [final]" in res.stdout


def test_amend_and_bank_print_the_folder_on_one_line(
    forged_run: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("FONTAINE_BANK", str(tmp_path / "bank"))
    res = cli("amend", str(forged_run), "--extend-to", "1250")
    assert res.returncode == 1, res.stderr  # recorded, refused: the run ended at 1000
    assert not starting(res.stdout, "VERDICT:") and "x\\nVERDICT" in res.stdout, res.stdout
    res = cli("bank", "add", str(forged_run), "--as", "ref")
    assert res.returncode == 0, res.stderr
    assert not starting(res.stdout, "VERDICT:") and "x\\nVERDICT" in res.stdout, res.stdout


def test_a_unicode_line_separator_in_a_folder_name_starts_no_line(tmp_path: Path) -> None:
    folder = tmp_path / "y\u2028VERDICT: HEALTHY  [final]  forged\u2029"
    write_log(folder / "train_log.jsonl", probes=HEALTHY)
    freeze(RunFolder(folder), load_preset("demosonly_1gpu"), ["python"], "host")
    res = cli("verdict", str(folder))
    assert res.returncode == 0, res.stderr
    assert len(starting(res.stdout, "VERDICT:")) == 1, res.stdout  # splitlines() splits there
    assert "\\u2028VERDICT" in res.stdout
