"""What ran and on what: the engine's code identity and the corpus's data identity.

Stdlib only (no torch import). The console asks for both at launch (`python -m fontaine_engine
identity`) and freezes them in prereg.json. The train loop writes the same in its `meta`
record, so a run whose code or data changed under it (a resume on edited code) shows both
identities."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def code_identity() -> dict[str, object]:
    """The engine's code identity: a sha256 over every engine source file, and its version.

    The hash covers each file's name and content, so an uncommitted edit shows. It comes with
    the git commit and whether the engine's files differ from it, or the installed version
    where the engine is not in a git checkout.
    """
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
    """The data by content.

    The engine's corpus: sha256 of what its manifest says the files are (their own sha256s,
    the generator's version and seed), not when it was built. A user's LeRobotDataset folder
    (or a folder of them): sha256 over every meta/ and data/ file's name and content, and
    every video's name, size and first MiB (a multi-GB video is not re-read at each launch).
    """
    out: dict[str, object] = {"root": str(root)}
    try:
        manifest = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError):
        manifest = None
    if isinstance(manifest, dict):
        what = {
            k: manifest.get(k)
            for k in ("version", "seed", "image_size", "chunk", "datasets", "files")
        }
        out["fingerprint"] = hashlib.sha256(
            json.dumps(what, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        return out
    folders = (
        [root]
        if (root / "meta" / "info.json").is_file()
        else sorted(p for p in _listdir(root) if (p / "meta" / "info.json").is_file())
    )
    if not folders:
        out["fingerprint"] = None  # not built yet: the engine builds it at its first start
        return out
    h = hashlib.sha256()
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = path.relative_to(root).as_posix()
            top = path.relative_to(folder).parts[0]
            if top in ("meta", "data"):
                h.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
            elif top == "videos":
                with open(path, "rb") as f:
                    head = f.read(1 << 20)
                h.update(f"{rel}\0{path.stat().st_size}\0".encode() + hashlib.sha256(head).digest())
    out["fingerprint"] = h.hexdigest()
    out["datasets"] = [p.name for p in folders]
    return out


def _listdir(root: Path) -> list[Path]:
    try:
        return [p for p in root.iterdir() if p.is_dir()]
    except OSError:
        return []


def versions() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "torch": _version("torch") or "absent",
        "transformers": _version("transformers") or "absent",
    }


def identity(data_root: Path) -> dict[str, object]:
    return {
        "code": code_identity(),
        "data": data_identity(data_root),
        "versions": versions(),
        "host": platform.node(),
    }


def _git(*args: str) -> str:
    try:
        res = subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return res.stdout.strip() if res.returncode == 0 else ""


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""
