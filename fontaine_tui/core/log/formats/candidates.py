"""The runs a folder holds that a [source] could name, and the one a read takes.

`candidates` lists each kind whose files are found, each of several runs of one kind and each
run of a store of several (an MLflow store), the detected kind's first; `choose` picks the one
to read (the first, or the one `--kind`, `--path`, `--run` name). `inspect` lists them, and
`get` and `inspect` read the one chosen (inspect.py's `load`).

A launched [command] run's folder is read through the [source] its prereg.json froze (`frozen`,
as `verdict` reads it: model/judge.py's `launched_source`), patterns and path and all: that run
is the first found and the one read unless another is named. The files this program writes in a
run folder (where.py's `OURS`) are never taken for a run's log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.eventdirs import SeveralRuns
from fontaine_tui.core.log.formats.grouper import FieldMap
from fontaine_tui.core.log.formats.locate import detect, files
from fontaine_tui.core.log.formats.registry import find, kinds
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.runfolder import LOG

EVERY_KEY = ("*",)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One run a [source] could name.

    It has its kind, path (relative to the folder; "" for the folder itself) and, for a store of
    several runs, the run."""

    kind: str
    path: str = ""
    run: str = ""
    describe: str = ""
    # a launched run's frozen [source] (None: found by its files): read through it, patterns
    # and all, every key an eval key (`spec`)
    frozen: SourceSpec | None = field(default=None, compare=False, repr=False)
    patterns: tuple[str, ...] = ()  # printed lines: the patterns that read them (or a set's name)

    def source_lines(self) -> list[str]:
        """The [source] lines that read this run alone."""
        lines = [f"kind = {_quote(self.kind)}"]
        if self.path:
            lines.append(f"path = {_quote(self.path)}")
        if self.run:
            lines.append(f"run = {_quote(self.run)}")
        if len(self.patterns) == 1:
            lines.append(f"patterns = {_quote(self.patterns[0])}")
        elif self.patterns:
            lines.append(f"patterns = [{', '.join(map(_quote, self.patterns))}]")
        return lines

    def matches(self, kind: str, path: str, run: str) -> bool:
        """Each of `kind`, `path` and `run` that is given is this run's."""
        named = ((kind, self.kind), (path, self.path), (run, self.run))
        return all(not want or want == have for want, have in named)

    def label(self) -> str:
        return ", ".join(self.source_lines())

    def spec(self, step: str = "step") -> SourceSpec:
        if self.frozen is not None:
            return _every_key(self.frozen, step)
        options = MappingProxyType({"run": self.run} if self.run else {})
        fields = FieldMap(EVERY_KEY, step=step)
        return SourceSpec(self.kind, self.path, fields, options, self.patterns)


def _quote(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


def _every_key(frozen: SourceSpec, step: str) -> SourceSpec:
    """A frozen [source] reading every key as an eval key, at its own step unless `step` names one.

    Every line is then a probe line (a JSONL `probe_field` rule is left out), as `inspect`
    reads any run."""
    fields = replace(
        frozen.fields,
        eval=EVERY_KEY,
        step=frozen.fields.step if step == "step" else step,
        probe_field="",
        probe_value="",
    )
    return replace(frozen, fields=fields)


def frozen_candidate(folder: Path, frozen: SourceSpec) -> Candidate:
    """The run a launched folder's frozen [source] names, described by the files it reads."""
    try:
        paths = files(folder, frozen)
    except (InputError, OSError):
        paths = []
    shown = ", ".join(_rel(folder, p) for p in paths[:2]) + (
        f" and {len(paths) - 2} more" if len(paths) > 2 else ""
    )
    run = frozen.options.get("run", "")
    return Candidate(
        frozen.kind, frozen.path, run, f"{shown} (prereg.json's [source])", frozen=frozen
    )


def candidates(folder: Path, frozen: SourceSpec | None = None) -> list[Candidate]:
    """Every run the folder holds that a [source] could name, the detected kind's first.

    The list holds each kind whose files are found (a kind whose files another kind already
    reads is left out), each of several runs of one kind, and each run of a store of several.
    `frozen`: a launched run's frozen [source], whose run is the first (its files no other's)."""
    try:
        primary = detect(folder)
    except InputError:
        primary = ""
    if primary == "fontaine":
        return [Candidate("fontaine", describe=LOG)]
    out: list[Candidate] = []
    seen: set[Path] = set()
    if frozen is not None:
        out.append(frozen_candidate(folder, frozen))
        seen |= _frozen_files(folder, frozen)
    for kind in _kinds_from(primary):
        for rel, paths in _found(folder, kind):
            real = _unclaimed(paths, seen)
            if real is not None:
                seen |= real
                out += _runs_of(folder, kind, rel, paths)
    return out


def _frozen_files(folder: Path, frozen: SourceSpec) -> set[Path]:
    """The real paths of the files a frozen [source] reads (none where they are not there)."""
    try:
        return {p.resolve() for p in files(folder, frozen)}
    except (InputError, OSError):
        return set()


def _kinds_from(primary: str) -> list[str]:
    """The kinds to look for: the detected one (if any) first, then the others but fontaine."""
    others = [k for k in kinds() if k not in (primary, "fontaine")]
    return [primary, *others] if primary else others


def _unclaimed(paths: list[Path], seen: set[Path]) -> set[Path] | None:
    """The files' real paths, where there are some, all still there, and none of them `seen`.

    None where a kind listed before reads any of them (or they are gone, or none)."""
    real = {p.resolve() for p in paths}
    if not paths or not all(p.exists() for p in paths) or real & seen:
        return None
    return real


def _found(folder: Path, kind: str) -> list[tuple[str, list[Path]]]:
    """The files of `kind` in the folder, as (path, files): one entry, or one a run of several.

    Empty where the folder holds no such files (or they cannot be listed)."""
    try:
        return [("", files(folder, SourceSpec(kind)))]
    except SeveralRuns as exc:
        return _each_run(folder, kind, exc.found)
    except (InputError, OSError):
        return []


def _each_run(folder: Path, kind: str, rels: tuple[str, ...]) -> list[tuple[str, list[Path]]]:
    """The files of each of several runs of `kind` (its path `rel`), where they are found."""
    found = []
    for rel in rels:
        try:
            found.append((rel, files(folder, SourceSpec(kind, rel))))
        except InputError:
            continue
    return found


def _runs_of(folder: Path, kind: str, rel: str, paths: list[Path]) -> list[Candidate]:
    """The candidates of one kind's files: one, or each run of a store of several."""
    shown = ", ".join(_rel(folder, p) for p in paths[:2])
    shown += f" and {len(paths) - 2} more" if len(paths) > 2 else ""
    runs = _store_runs(kind, paths[0])
    if len(runs) > 1:
        return [Candidate(kind, rel, run_id, f"{shown}: {text}") for run_id, text in runs]
    return [Candidate(kind, rel, "", shown)]


def _store_runs(kind: str, store: Path) -> list[tuple[str, str]]:
    """The runs of a store that holds several ((id, words)), by its format's inspect hook."""
    fmt = find(kind)
    return fmt.inspect_runs(store) if fmt is not None and fmt.inspect_runs is not None else []


def _rel(folder: Path, path: Path) -> str:
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return str(path)


def choose(
    folder: Path,
    kind: str = "",
    path: str = "",
    run: str = "",
    frozen: SourceSpec | None = None,
) -> tuple[Candidate, tuple[Candidate, ...]]:
    """The run to read (the first, or the one named) and all found; else one-line InputError.

    `frozen`: a launched run's frozen [source] (model/judge.py's `launched_source`), whose run
    is the first, so the one read unless another is named."""
    if not folder.exists():
        raise InputError(f"{folder}: no such folder")
    if not folder.is_dir():
        raise InputError(f"{folder}: expected a run folder (a directory)")
    found = candidates(folder, frozen)
    if kind and kind not in kinds():
        raise InputError(f"--kind: expected one of {', '.join(kinds())}, got {kind!r}")
    if kind or path or run:
        return _named(folder, found, kind, path, run), tuple(found)
    if not found:
        detect(folder)  # says what it expected
        raise InputError(f"{folder}: no log this console reads")
    return found[0], tuple(found)


def _named(folder: Path, found: list[Candidate], kind: str, path: str, run: str) -> Candidate:
    """The first run found that is what --kind, --path and --run name (those given).

    Where none is and a kind is named, the run as named (read so, its errors its own)."""
    chosen = next((c for c in found if c.matches(kind, path, run)), None)
    if chosen is not None:
        return chosen
    if not kind:
        raise InputError(
            f"{folder}: no run matches --path {path!r} --run {run!r} "
            f"(found: {'; '.join(c.label() for c in found) or 'none'})"
        )
    return Candidate(kind, path, run)
