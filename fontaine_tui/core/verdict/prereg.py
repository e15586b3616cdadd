"""The frozen pre-registration of a run (prereg.json), written before the engine starts.

It holds the preset and the provenance of what runs; a blinded run's review head is written
with it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from types import MappingProxyType

from fontaine_tui import __version__
from fontaine_tui.core.atomic import create_new
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.log.formats.spec import frozen_path
from fontaine_tui.core.log.records import Meta
from fontaine_tui.core.preset.checks import canonical_bytes
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.validate import preset_from_canonical
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.runfolder import REVIEW, RunFolder
from fontaine_tui.core.secrets import mask_tree, tree_secrets
from fontaine_tui.core.verdict import head as chain_head

SCHEMA = "fontaine-tui/prereg/1"


@dataclass(frozen=True, slots=True)
class Prereg:
    schema: str
    preset_name: str
    preset_path: str
    preset: Mapping[str, object]  # the canonical preset as frozen
    preset_sha256: str
    argv: tuple[str, ...]
    launched_at: str  # UTC ISO-8601 with Z
    host: str
    version: str
    # what ran on what, as the engine said at launch (`python -m fontaine_engine identity`): code,
    # data, versions, host; empty for a run launched before provenance was recorded
    provenance: Mapping[str, object] = dataclasses.field(default_factory=dict)

    @property
    def launched_ts(self) -> float:
        return parse_utc(self.launched_at)

    def frozen_preset(self, origin: str = "prereg.json") -> Preset:
        """The preset as frozen, under the name it was launched with, reading its log there.

        That is the [source] path the launch froze ({output_dir} filled in: `read_with`)."""
        frozen = preset_from_canonical(self.preset, f"{origin}#{self.preset_name}")
        return self.read_with(dataclasses.replace(frozen, name=self.preset_name or frozen.name))

    def read_with(self, preset: Preset) -> Preset:
        """`preset` reading its [source] where this launch found it.

        A [command] preset's path naming {output_dir} is frozen in the provenance, filled in
        with the run folder; `preset` keeps its own path where none was frozen."""
        return preset.source_at(frozen_path(self.provenance))


@dataclass(frozen=True, slots=True)
class BoundsChange:
    """A preset read now differs from the one frozen at launch."""

    sections: tuple[str, ...]  # top-level preset sections that differ
    frozen_sha256: str
    current_sha256: str
    keys: tuple[str, ...] = ()  # each differing leaf: "verdict.healthy_max: frozen 0.3, given 0.7"

    @property
    def detail(self) -> str:
        """The differing keys (the first few), for one line."""
        shown = "; ".join(self.keys[:4]) + ("; ..." if len(self.keys) > 4 else "")
        return shown or ", ".join(self.sections)

    @property
    def math_changed(self) -> bool:
        """Whether anything changed beyond the knobs that leave the read alone.

        Those are [platform] (machinery-only knobs), [slurm] and [babysit] (when the run is
        polled)."""
        return any(s not in ("platform", "babysit", "slurm") for s in self.sections)

    @property
    def message(self) -> str:
        return (
            f"bounds changed after launch: [{'], ['.join(self.sections)}] differ from "
            f"prereg.json (frozen sha256 {self.frozen_sha256[:12]}, "
            f"now {self.current_sha256[:12]})"
        )


def utc_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_utc(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def freeze(
    folder: RunFolder,
    preset: Preset,
    argv: list[str] | tuple[str, ...],
    host: str,
    now: float | None = None,
    provenance: Mapping[str, object] | None = None,
) -> Prereg:
    """Write prereg.json, whole, where none exists yet; the folder must exist.

    Nothing secret is written (core/secrets.py): a preset or argv holding what looks like a
    credential is refused (InputError naming its key; they are hashed, so never masked), and
    the provenance observed at launch is written with its credentials masked."""
    canonical = json.loads(canonical_bytes(preset.canonical))
    found = tree_secrets({"preset": canonical, "argv": list(argv)})
    if found:
        raise InputError(
            f"{folder.prereg}: not written: {found[0]} holds what looks like a credential; "
            "the preset and its command are frozen into it and shown: keep the secret in "
            "the launching shell's environment (docs/secrets.md)"
        )
    masked = mask_tree(dict(provenance or {}))
    assert isinstance(masked, dict)
    prereg = Prereg(
        schema=SCHEMA,
        preset_name=preset.name,
        preset_path=preset.path,
        preset=preset.canonical,
        preset_sha256=preset.sha256,
        argv=tuple(argv),
        launched_at=utc_iso(time.time() if now is None else now),
        host=host,
        version=__version__,
        provenance=MappingProxyType(masked),
    )
    doc = {
        "schema": prereg.schema,
        "preset_name": prereg.preset_name,
        "preset_path": prereg.preset_path,
        "preset": canonical,
        "preset_sha256": prereg.preset_sha256,
        "argv": list(prereg.argv),
        "launched_at": prereg.launched_at,
        "host": prereg.host,
        "version": prereg.version,
        **({"provenance": dict(prereg.provenance)} if prereg.provenance else {}),
    }
    try:  # never over another launch's pre-registration
        create_new(folder.prereg, json.dumps(doc, indent=2, sort_keys=True) + "\n")
    except FileExistsError:
        raise InputError(
            f"{folder.prereg}: already exists (this folder holds a launched run); "
            "nothing was changed"
        ) from None
    if blind_frozen(prereg.preset):  # its review trail is kept from launch: 0 lines
        genesis = hashlib.sha256(read_whole(folder.prereg)).hexdigest()
        chain_head.record(folder.root / REVIEW, 0, genesis)
    return prereg


def blind_frozen(preset: Mapping[str, object]) -> bool:
    """Whether a frozen (canonical) preset is blind: `[verdict] blind = true`.

    Such a run's review trail is kept from launch: `freeze` writes its head (review.jsonl.head,
    0 lines, chained from prereg.json), so a look at the hidden read recorded in it cannot be
    erased by removing the trail and its head: review.py names a missing head."""
    verdict = preset.get("verdict")
    return isinstance(verdict, Mapping) and verdict.get("blind") is True


def unfreeze(folder: RunFolder) -> None:
    """Remove what `freeze` wrote, for a launch that then did not start."""
    folder.prereg.unlink(missing_ok=True)
    chain_head.head_path(folder.root / REVIEW).unlink(missing_ok=True)


def read_prereg(folder: RunFolder) -> Prereg:
    """The frozen pre-registration; InputError if missing, unreadable or tampered with."""
    path = folder.prereg
    try:
        raw = read_whole(path)
    except FileNotFoundError:
        raise InputError(
            f"{path}: no prereg.json (was this run launched by fontaine-tui?)"
        ) from None
    except OSError as exc:
        raise InputError(f"{path}: expected a JSON prereg ({exc})") from None
    return parse_prereg(raw, str(path))


def parse_prereg(raw: bytes, origin: str) -> Prereg:
    """A prereg.json document (read locally or through a run source), hash-checked."""
    try:
        doc = json_loads(raw)
    except ValueError as exc:
        raise InputError(f"{origin}: expected a JSON prereg ({exc})") from None
    try:
        if doc["schema"] != SCHEMA:
            raise InputError(f"{origin}: schema: expected {SCHEMA!r}, got {doc['schema']!r}")
        preset = doc["preset"]
        if not isinstance(preset, dict):
            raise TypeError("preset is not an object")
        prereg = Prereg(
            schema=doc["schema"],
            preset_name=str(doc["preset_name"]),
            preset_path=str(doc.get("preset_path", "")),
            preset=MappingProxyType(preset),
            preset_sha256=str(doc["preset_sha256"]),
            argv=tuple(map(str, doc["argv"])),
            launched_at=str(doc["launched_at"]),
            host=str(doc.get("host", "")),
            version=str(doc.get("version", "")),
            provenance=MappingProxyType(_object(doc.get("provenance", {}), "provenance")),
        )
        parse_utc(prereg.launched_at)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(
            f"{origin}: expected a prereg document ({type(exc).__name__}: {exc})"
        ) from None
    actual = hashlib.sha256(canonical_bytes(prereg.preset)).hexdigest()
    if actual != prereg.preset_sha256:
        raise InputError(
            f"{origin}: preset_sha256: the frozen preset hashes to {actual[:12]}, "
            f"not {prereg.preset_sha256[:12]} (prereg.json was edited)"
        )
    return prereg


def _object(value: object, key: str) -> dict:
    if not isinstance(value, dict):
        raise TypeError(f"{key} is not an object")
    return value


def provenance_changes(frozen: Mapping[str, object], metas: Sequence[Meta]) -> tuple[str, ...]:
    """Where the log's meta records name other code or data than was frozen at launch.

    Such a change is a resume on edited code, or another corpus. Each is described in words
    naming both sides; () when they agree or either side did not record it."""
    out: list[str] = []
    for key, what, field_ in (("code", "the code", "sha256"), ("data", "the data", "fingerprint")):
        was = frozen.get(key)
        if not isinstance(was, Mapping) or not was.get(field_):
            continue
        for m in metas:
            now = m.code if key == "code" else m.data
            if not now.get(field_) or now.get(field_) == was.get(field_):
                continue
            out.append(
                f"{what} changed under the run: launched with {_ident(was)}; the log's "
                f"meta at step {m.step} (line {m.line}) says {_ident(now)}"
            )
    return tuple(out)


def _ident(d: Mapping[str, object]) -> str:
    if "fingerprint" in d:
        return f"corpus {str(d.get('fingerprint'))[:12]} ({d.get('root', '?')})"
    commit = d.get("git_commit")
    where = (
        f"git {str(commit)[:12]}{' + uncommitted changes' if d.get('dirty') else ''}"
        if commit
        else f"version {d.get('version', '?')}"
    )
    return f"{where}, source sha256 {str(d.get('sha256', '?'))[:12]}"


def frozen_over(prereg: Prereg, given: Preset | None, given_name: str, origin: str) -> Preset:
    """The preset a run is read with: the frozen one.

    A `given` preset that differs from it beyond [platform] is refused (InputError naming the
    keys). The headless readers call this; the console instead shows the difference as a ledger
    warning."""
    if given is not None:
        change = compare(prereg, given)
        if change is not None and change.math_changed:
            raise InputError(
                f"--preset {given_name}: differs from the run's frozen pre-registration "
                f"({origin}): {change.detail}; a run folder is read with the bounds frozen at "
                "launch (leave out --preset)"
            )
    return prereg.frozen_preset(origin)


def compare(prereg: Prereg, preset: Preset) -> BoundsChange | None:
    """None when the preset read now is the one frozen at launch."""
    if preset.sha256 == prereg.preset_sha256:
        return None
    now, then = json.loads(canonical_bytes(preset.canonical)), dict(prereg.preset)
    sections = tuple(sorted(k for k in set(now) | set(then) if now.get(k) != then.get(k)))
    keys = tuple(_leaf_differences(json.loads(canonical_bytes(then)), now))
    return BoundsChange(sections or ("?",), prereg.preset_sha256, preset.sha256, keys)


_ABSENT = object()


def _show(value: object) -> str:
    """A frozen or given value, short: a long one is cut with an ellipsis, never mid-quote."""
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:76] + '..."'[: 4 if text[0] == '"' else 3]


def _leaf_differences(frozen: object, given: object, path: str = "") -> list[str]:
    """Every leaf where two canonical presets differ, as 'a.b[0].c: frozen X, given Y'."""
    if isinstance(frozen, dict) and isinstance(given, dict):
        out = []
        for key in sorted(set(frozen) | set(given)):
            sub = f"{path}.{key}" if path else str(key)
            out += _leaf_differences(frozen.get(key, _ABSENT), given.get(key, _ABSENT), sub)
        return out
    if isinstance(frozen, list) and isinstance(given, list) and len(frozen) == len(given):
        out = []
        for i, (a, b) in enumerate(zip(frozen, given, strict=True)):
            out += _leaf_differences(a, b, f"{path}[{i}]")
        return out
    if frozen == given:
        return []
    return [f"{path}: frozen {_show(frozen)}, given {_show(given)}"]
