"""A sealed bundle: a run's files in one deterministic zip, with MANIFEST.json.

MANIFEST.json lists each file's sha256 and the bundle's digest: the sha256 of the manifest's
canonical JSON without its `digest` key. The zip is deterministic (entries sorted, a fixed
time and mode, the same compression), so sealing the same files twice gives the same bytes.
Each entry is compressed apart, so a changed byte is found in the entry that holds it.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import json_loads

SCHEMA = "fontaine-tui/seal/1"
MANIFEST = "MANIFEST.json"
EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold
MOST = 1 << 30  # bytes unpacked from one bundle, all entries together


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(doc: Mapping[str, object]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def digest_of(manifest: Mapping[str, object]) -> str:
    """The bundle's digest: the sha256 of the manifest's canonical JSON, less `digest`."""
    return sha256(_canonical({k: v for k, v in manifest.items() if k != "digest"}))


def manifest(files: Mapping[str, bytes], run: str, evidence: str) -> dict[str, object]:
    """The manifest of `files`: each one's sha256, what the evidence is, and the digest."""
    doc: dict[str, object] = {
        "schema": SCHEMA,
        "run": run,
        "files": {name: sha256(files[name]) for name in sorted(files)},
        "evidence": evidence,
    }
    doc["digest"] = digest_of(doc)
    return doc


def _entry(name: str, stored: bool) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.create_system = 3  # unix: the mode below is read as one
    info.external_attr = 0o100644 << 16  # a plain file, rw-r--r--
    info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    return info


def pack(files: Mapping[str, bytes], run: str, evidence: str) -> tuple[bytes, str]:
    """The bundle's bytes and its digest.

    MANIFEST.json comes first and is stored uncompressed, so the head of the file says what it
    is; the other entries follow in sorted order.
    """
    doc = manifest(files, run, evidence)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr(_entry(MANIFEST, True), json.dumps(doc, indent=2, sort_keys=True) + "\n")
        for name in sorted(files):
            zf.writestr(_entry(name, False), files[name], compresslevel=9)
    return out.getvalue(), str(doc["digest"])


def is_bundle(head: bytes) -> bool:
    """Whether a file's first bytes are a bundle's (its stored manifest names the schema)."""
    return head.startswith(b"PK\x03\x04") and SCHEMA.encode() in head


@dataclass(frozen=True, slots=True)
class Bundle:
    """A bundle's files (the manifest apart), its manifest and its digest, all checked."""

    files: dict[str, bytes]
    manifest: dict[str, object]
    digest: str


def _safe(name: str) -> bool:
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and all(p not in ("", ".", "..") for p in parts)


def _read_entries(data: bytes, origin: str) -> dict[str, bytes]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise InputError(f"{origin}: expected a sealed bundle (a zip): {exc}") from None
    out: dict[str, bytes] = {}
    total = 0
    with zf:
        for info in zf.infolist():
            name = info.filename
            if not _safe(name) or info.is_dir() or name in out:
                raise InputError(f"{origin}: {name!r}: expected one plain file name per entry")
            total += info.file_size
            if total > MOST:
                raise InputError(f"{origin}: {name}: over {MOST} bytes unpacked; refused")
            out[name] = _read_entry(zf, info, origin)
    _refuse_file_as_folder(out, origin)
    return out


def _read_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, origin: str) -> bytes:
    """One entry's bytes, read back whole: InputError where the zip cannot give them."""
    name = info.filename
    try:
        with zf.open(info) as fh:
            body = fh.read(info.file_size + 1)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
        raise InputError(f"{origin}: {name}: damaged in the bundle ({exc})") from None
    if len(body) != info.file_size:
        raise InputError(f"{origin}: {name}: its size differs from the zip's record")
    return body


def _refuse_file_as_folder(entries: dict[str, bytes], origin: str) -> None:
    """Refuse a name that is a file and another entry's folder: no folder can unpack both."""
    for name in sorted(entries):
        parts = name.split("/")
        for i in range(1, len(parts)):
            if (folder := "/".join(parts[:i])) in entries:
                raise InputError(
                    f"{origin}: {folder!r}: a file in the bundle and the folder of {name!r}; "
                    "expected each name to be one or the other"
                )


def unpack(data: bytes, origin: str) -> Bundle:
    """A bundle's entries checked against its manifest.

    Raises InputError naming the first broken file or key: an entry the zip cannot read back,
    a name that is a file and another entry's folder (no folder can unpack both), the
    manifest's digest, a file whose sha256 differs from the manifest's, a file missing
    from the bundle or from the manifest.
    """
    entries = _read_entries(data, origin)
    doc = _manifest(entries.pop(MANIFEST, None), origin)
    _refuse_unlisted(entries, doc["files"], origin)
    return Bundle(entries, doc, str(doc["digest"]))


def _manifest(raw: bytes | None, origin: str) -> dict:
    """The bundle's manifest, its schema, list of files and digest checked."""
    if raw is None:
        raise InputError(f"{origin}: {MANIFEST}: missing (not a sealed bundle)")
    try:
        doc = json_loads(raw)
    except ValueError:
        raise InputError(f"{origin}: {MANIFEST}: expected JSON") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(f"{origin}: {MANIFEST}: schema: expected {SCHEMA!r}")
    listed = doc.get("files")
    if not isinstance(listed, dict):
        raise InputError(f"{origin}: {MANIFEST}: files: expected an object of sha256s")
    if doc.get("digest") != digest_of(doc):
        raise InputError(
            f"{origin}: {MANIFEST}: digest: expected {digest_of(doc)} "
            f"(the sha256 of the manifest), the manifest says {doc.get('digest')}"
        )
    return doc


def _refuse_unlisted(entries: dict[str, bytes], listed: dict, origin: str) -> None:
    """Refuse the first file (by name) the bundle and its manifest do not agree on.

    One missing from the bundle or from the manifest, or whose sha256 differs."""
    for name in sorted(set(listed) | set(entries)):
        if name not in entries:
            raise InputError(f"{origin}: {name}: listed in {MANIFEST} but not in the bundle")
        if name not in listed:
            raise InputError(f"{origin}: {name}: in the bundle but not listed in {MANIFEST}")
        if sha256(entries[name]) != listed[name]:
            raise InputError(
                f"{origin}: {name}: sha256 {sha256(entries[name])} differs from "
                f"{MANIFEST}'s {listed[name]}"
            )
