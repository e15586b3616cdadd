"""The runs screen's rows: the live state, looked up at most every few seconds."""

from __future__ import annotations

from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.model.runs import RunsList


def test_rows_are_looked_up_again_only_after_every_s(tmp_path):
    registry = Registry(tmp_path / "registry.toml")
    run = tmp_path / "run"
    run.mkdir()
    registry.upsert(Entry(name="a", run_dir=str(run), host=hostname(), status="exited"))
    now = [100.0]
    runs = RunsList(registry, every_s=2.0, clock=lambda: now[0])
    rows, _ = runs.rows()
    assert [(r.name, r.state) for r in rows] == [("a", "exited")]
    registry.upsert(Entry(name="b", run_dir=str(tmp_path), host="elsewhere"))
    now[0] += 1.9
    assert [r.name for r in runs.rows()[0]] == ["a"]  # within every_s: the last look
    now[0] += 0.1
    rows, _ = runs.rows()
    assert [(r.name, r.state) for r in rows] == [("a", "exited"), ("b", "remote")]


def test_no_registry_says_why():
    assert RunsList(None).rows() == ([], "no registry given")
