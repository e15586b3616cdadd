"""Callers hold a launched run's process as a `Handle` (core/launch/targets/base.py), never as
a target's own class: only core/launch/targets/ and each handle's own module name
EngineProcess, RemoteEngine or SlurmJob, so a new target is one module and nothing outside it
branches on the kinds there are."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fontaine_tui"
TARGETS = PACKAGE / "core" / "launch" / "targets"
OWN = {  # each concrete handle and the module that defines it
    "EngineProcess": PACKAGE / "core" / "run" / "launcher.py",
    "RemoteEngine": PACKAGE / "core" / "launch" / "remote.py",
    "SlurmJob": PACKAGE / "core" / "slurm" / "job.py",
}


def _annotation_names(text: str) -> set[str]:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return set()
    return _names(tree)


def _names(tree: ast.AST) -> set[str]:
    """Every name used in code: names, attributes, imports, string annotations and casts."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(a.name.rpartition(".")[2] for a in node.names)
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.arg | ast.AnnAssign):
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(node.returns)
        elif isinstance(node, ast.Call) and node.args and getattr(node.func, "id", "") == "cast":
            annotations.append(node.args[0])
        for a in annotations:
            if isinstance(a, ast.Constant) and isinstance(a.value, str):
                out |= _annotation_names(a.value)
    return out


def named_handles(root: Path = PACKAGE) -> list[str]:
    """'module: Class' for each concrete handle named outside targets/ and its own module."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if TARGETS in path.parents:
            continue
        names = _names(ast.parse(path.read_text(), str(path)))
        for cls, own in OWN.items():
            if cls in names and path != own:
                found.append(f"{path.relative_to(ROOT)}: {cls}")
    return found


def test_only_the_targets_name_a_concrete_handle() -> None:
    assert named_handles() == []


def test_the_scan_sees_an_isinstance_a_cast_and_an_import(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "from fontaine_tui.core.slurm.job import SlurmJob\n"
        "def f(h): return isinstance(h, SlurmJob)\n"
    )
    (tmp_path / "b.py").write_text('from typing import cast\ndef f(h): cast("EngineProcess", h)\n')
    (tmp_path / "c.py").write_text("from x import remote\ndef f(h: 'remote.RemoteEngine'): ...\n")
    (tmp_path / "d.py").write_text('"""RemoteEngine in words only."""\n')
    assert [line.rpartition(": ")[2] for line in _scan(tmp_path)] == [
        "SlurmJob",
        "EngineProcess",
        "RemoteEngine",
    ]


def _scan(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        names = _names(ast.parse(path.read_text(), str(path)))
        found += [f"{path.name}: {cls}" for cls in OWN if cls in names]
    return found


def test_every_kind_of_the_table_picks_its_own_targets_and_reopens() -> None:
    from fontaine_tui.core.launch.targets.pick import KINDS, kind_module, pick_target

    for kind in KINDS:
        module = kind_module(kind)
        assert callable(module.target_for) and callable(module.reopen_entry), kind
    ons = {"local": None, "slurm": "slurm:gpu", "ssh": "login1"}
    assert {kind: pick_target(on).kind for kind, on in ons.items()} == {k: k for k in ons}
    assert pick_target("slurm:gpu@login1").kind == "ssh"  # submitted by the login node


def test_an_entry_is_reopened_by_its_recorded_kind_an_old_one_by_its_fields() -> None:
    from fontaine_tui.core.launch.targets.pick import kind_of
    from fontaine_tui.core.runs.registry import Entry

    def kind(host: str = "here", **fields: object) -> str:
        return kind_of(Entry("r", "/runs/r", host, **fields), "here")

    assert [kind(pid=7), kind(job="12"), kind("far", pid=7)] == ["local", "slurm", "ssh"]
    assert [kind(pid=7, target="k8s"), kind(job="12", target="slurm")] == ["k8s", "slurm"]
    # another host's run is held through that host, whatever ran it there; a run `--on` sent
    # to this very host is this host's own
    assert kind("far", pid=7, target="local") == "ssh"
    assert kind(pid=7, target="ssh") == "local"
