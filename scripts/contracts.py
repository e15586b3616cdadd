"""An import-linter contract type of the house's own: who may read a store's probes.

A run's probe values are the evidence the verdict reads and the blind hides. The surfaces
(commands, the console, the model, the launch wing...) must ask the evidence gate
(fontaine_tui/core/run/evidence.py) for them, which hands out none while the read is
hidden. An import graph cannot see an attribute read, so this contract reads the source:
any `X.probes`, `X.superseded`, `X.conflicts` or `X.odd_values` (the RunStore's raw probe
store, its conflicting probe pairs, which hold both probes' values, and another trainer's eval
values that are not numbers, named with their steps; a call such as `entry.probes()` is
another object's method and allowed) in a source module outside the allowed ones breaks it,
named with its line.

pyproject.toml registers it (`contract_types`) and lint-imports runs it with the others.
"""

from __future__ import annotations

import ast
from pathlib import Path

from importlinter import Contract, ContractCheck, fields, output


def reads_in(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each read of an attribute in `names` in the file, calls left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return sorted(
        (node.lineno, node.attr)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in names and id(node) not in called
    )


class ReadsContract(Contract):
    """Source modules must not read the named attributes, but the allowed modules.

    Configuration: source_modules (packages or modules, descendants included), attributes
    (names), allowed_modules (modules that may)."""

    type_name = "reads"

    source_modules = fields.ListField(subfield=fields.ModuleField())
    attributes = fields.ListField(subfield=fields.StringField())
    allowed_modules = fields.ListField(subfield=fields.ModuleField(), required=False)

    def check(self, graph, verbose: bool) -> ContractCheck:  # type: ignore[no-untyped-def]
        names = set(self.attributes)  # type: ignore[call-overload]
        allowed = {m.name for m in self.allowed_modules or []}  # type: ignore[attr-defined]
        modules: set[str] = set()
        for source in self.source_modules:  # type: ignore[attr-defined]
            modules.add(source.name)
            modules |= graph.find_descendants(source.name)
        found = []
        for module in sorted(modules - allowed):
            path = _path_of(module)
            if path is None:
                continue
            found += [(module, line, name) for line, name in reads_in(path, names)]
        return ContractCheck(kept=not found, metadata={"found": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for module, line, name in check.metadata["found"]:
            output.print_error(f"{module} -> .{name} (l.{line})", bold=False)
            output.new_line()
        output.print(
            "Ask the evidence gate (core/run/evidence.py: seen_probes, seen_reads, "
            "seen_conflicts, seen_odd_values) instead."
        )


def _path_of(module: str) -> Path | None:
    base = Path.cwd().joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None
