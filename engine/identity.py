"""What ran and on what: the engine's code identity and the corpus's data identity, stdlib
only (no torch import). The console asks for both at launch (`python -m engine identity`) and
freezes them in prereg.json; the train loop writes the same in its `meta` record, so a run
whose code or data changed under it (a resume on edited code) shows both identities."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def code_identity() -> dict[str, object]:
    """sha256 over every engine source file (name and content, so an uncommitted edit
    shows), with the git commit and whether the engine's files differ from it, or the
    installed version where the engine is not in a git checkout."""
    h = hashlib.sha256()
    files = sorted(ROOT.glob("*.py"))
    for path in files:
        h.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    out: dict[str, object] = {"sha256": h.hexdigest(), "files": len(files)}
    commit = _git("rev-parse", "HEAD")
    if commit:
        out["git_commit"] = commit
        out["dirty"] = bool(_git("status", "--porcelain", "--", "."))
    else:
        out["version"] = _version("fontaine-tui") or "unknown"
    return out


def data_identity(root: Path) -> dict[str, object]:
    """The corpus by its manifest: sha256 of what the manifest says the files are (their own
    sha256s, shapes, the generator's version and seed), not when it was built."""
    out: dict[str, object] = {"root": str(root)}
    try:
        manifest = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError):
        out["fingerprint"] = None  # not built yet: the engine builds it at its first start
        return out
    if not isinstance(manifest, dict):
        out["fingerprint"] = None
        return out
    what = {k: manifest.get(k) for k in ("version", "seed", "image_size", "chunk", "datasets",
                                         "files")}
    out["fingerprint"] = hashlib.sha256(
        json.dumps(what, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return out


def versions() -> dict[str, str]:
    return {"python": platform.python_version(), "torch": _version("torch") or "absent",
            "transformers": _version("transformers") or "absent"}


def identity(data_root: Path) -> dict[str, object]:
    return {"code": code_identity(), "data": data_identity(data_root), "versions": versions(),
            "host": platform.node()}


def _git(*args: str) -> str:
    try:
        res = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                             timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return res.stdout.strip() if res.returncode == 0 else ""


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""
