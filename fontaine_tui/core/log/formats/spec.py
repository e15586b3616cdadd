"""A preset's `[source]` as read (`SourceSpec`): which trainer's log a run is, and how to read it.

The table is read and checked in source.py (`read_spec`); this module holds only the record, so
the format registry (registry.py) and the finders of each kind's files (where.py) can name it
without reaching up to the reading of a preset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from fontaine_tui.core.log.formats.grouper import EVAL_PATTERNS, FieldMap

# prereg.json's provenance key holding the [source] path a launch read, {output_dir} filled in
FROZEN = "source"


@dataclass(frozen=True, slots=True)
class SourceSpec:
    kind: str
    path: str = ""  # a file or folder, relative to the run folder (or absolute)
    fields: FieldMap = field(default_factory=FieldMap)
    options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    patterns: tuple[str, ...] = ()  # lines: the regular expressions that read a printed line

    def canonical(self) -> dict[str, object]:
        """As hashed into the preset (only what was set)."""
        out: dict[str, object] = {"kind": self.kind}
        if self.path:
            out["path"] = self.path
        if self.fields.eval != EVAL_PATTERNS:
            out["eval"] = list(self.fields.eval)
        out.update(dict(self.fields.train))
        if self.fields.step != "step":
            out["step"] = self.fields.step
        if self.fields.time:
            out["time"] = self.fields.time
        if self.fields.probe_field:
            out["probe_field"] = self.fields.probe_field
            out["probe_value"] = self.fields.probe_value
        out.update(self.options)
        if self.patterns:
            out["patterns"] = list(self.patterns)
        return out


def frozen_path(provenance: object) -> str:
    """The [source] path a launch froze in prereg.json's provenance, or "" where it froze none.

    A [command] preset's path naming {output_dir} is frozen there filled in (the preset itself
    is frozen, and hashed, as written): relative to the run folder where it lies in it, so it
    is read against the folder read (a copy, or the folder moved, reads its own log)."""
    frozen = provenance.get(FROZEN) if isinstance(provenance, Mapping) else None
    path = frozen.get("path") if isinstance(frozen, Mapping) else None
    return path if isinstance(path, str) else ""


def read_at(spec: SourceSpec, path: str) -> SourceSpec:
    """`spec` reading `path` instead of its own (a frozen one, see frozen_path); "" keeps it."""
    return replace(spec, path=path) if path else spec
