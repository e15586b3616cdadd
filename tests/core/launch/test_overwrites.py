"""The launcher and the console overwrite only files they wrote themselves.

prereg.json is created, never replaced; verdict.json and the overlay PNG replace only an
earlier export of ours; the registry refuses to rewrite a TOML file that holds anything but
[[runs]]. Anything else is one line (InputError) and the file stays byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fontaine_tui.core.atomic import create_new, replace_own
from fontaine_tui.core.charts.probes import probes_chart
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.run.evidence import seen_reads
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.seal import export as exporter
from fontaine_tui.core.verdict.prereg import freeze, read_prereg
from fontaine_tui.core.verdict.rules import compute_verdict
from tests.logs import RIGONLY_LIKE, records


def _folder(tmp_path: Path) -> RunFolder:
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    folder.log.write_text("".join(json.dumps(r) + "\n" for r in records(RIGONLY_LIKE)))
    return folder


def test_prereg_is_created_never_replaced(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    preset = load_preset("demosonly_1gpu")
    freeze(folder, preset, ["python", "-m", "fontaine_engine"], "h")
    first = folder.prereg.read_bytes()
    with pytest.raises(InputError, match="already exists"):
        freeze(folder, load_preset("smoke"), ["other"], "h2")
    assert folder.prereg.read_bytes() == first
    assert read_prereg(folder).preset_name == "demosonly_1gpu"
    assert sorted(p.name for p in folder.root.iterdir()) == ["prereg.json", "train_log.jsonl"]


def test_create_new_and_replace_own_leave_foreign_files(tmp_path: Path) -> None:
    f = tmp_path / "x"
    create_new(f, b"one")
    with pytest.raises(FileExistsError):
        create_new(f, b"two")
    assert f.read_bytes() == b"one"
    with pytest.raises(InputError, match="left untouched"):
        replace_own(f, b"three", lambda head: head.startswith(b"ours"), "a thing")
    assert f.read_bytes() == b"one"
    replace_own(f, b"ours 2", lambda head: True, "a thing")
    assert f.read_bytes() == b"ours 2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x"]  # no temp file left


def test_export_replaces_only_its_own_verdict_and_chart(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    preset = load_preset("demosonly_1gpu")
    store = load_log(folder.log)
    verdict = compute_verdict(store, preset)
    spec = probes_chart(seen_reads(store, [verdict], hidden=False), preset, verdict, scaled=False)
    mine = folder.root / "verdict.json"
    mine.write_text('{"verdict": "my own analysis"}\n')
    with pytest.raises(InputError, match="verdict.json: exists and is not a verdict.json"):
        exporter.export(folder.root, verdict, spec)
    assert mine.read_text() == '{"verdict": "my own analysis"}\n'
    mine.unlink()
    first = exporter.export(folder.root, verdict, spec)  # ours now: may be rewritten
    again = exporter.export(folder.root, verdict, spec)
    assert json.loads(again.verdict_path.read_text())["verdict"] == verdict.verdict
    if first.chart_path is None:  # no matplotlib: the chart half is not testable here
        return
    chart = first.chart_path
    chart.write_bytes(b"\x89PNG\r\n\x1a\n a user's own picture")
    mine.unlink()
    with pytest.raises(InputError, match="disc_overlay.png"):
        exporter.export(folder.root, verdict, spec)
    assert chart.read_bytes() == b"\x89PNG\r\n\x1a\n a user's own picture"


def test_registry_never_rewrites_a_file_that_is_not_a_registry(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    text = '[project]\nname = "mine"\n'
    path.write_text(text)
    reg = Registry(path)
    entry = Entry(name="r", run_dir=str(tmp_path), host="h")
    with pytest.raises(InputError, match="project: expected only"):
        reg.upsert(entry)
    assert path.read_text() == text
