"""A rotation caught compressing leaves `train_log.jsonl.1` and `train_log.jsonl.1.gz` side by
side: the plain file is read when the .gz holds a prefix of it (the compression was cut
short). A .gz that holds anything else is other evidence, never dropped: it is read too, and
a probe it gives another value is a conflict that the verdict names."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from fontaine_tui.cli import main
from fontaine_tui.core.runfolder import LOG, rotated_segments
from tests.logs import dumps, records

HEALTHY = {500: (1.0, 0.9), 1000: (1.05, 0.8)}


def _text(recs: list[dict]) -> bytes:
    return "".join(dumps(r) + "\n" for r in recs).encode()


def _verdict(folder: Path, capsys) -> tuple[int, dict]:
    code = main(["verdict", str(folder), "--preset", "demosonly_1gpu", "--json"])
    return code, json.loads(capsys.readouterr().out)


def _folder(tmp_path: Path, gz: bytes) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    recs = records(HEALTHY)
    (folder / (LOG + ".1")).write_bytes(_text(recs))
    (folder / (LOG + ".1.gz")).write_bytes(gzip.compress(gz))
    (folder / LOG).write_bytes(b"")
    return folder


def test_a_gz_cut_short_is_a_prefix_and_the_plain_file_is_read(tmp_path: Path, capsys) -> None:
    whole = _text(records(HEALTHY))
    folder = _folder(tmp_path, whole[: len(whole) // 2])
    assert rotated_segments(folder / LOG) == [folder / (LOG + ".1")]
    code, doc = _verdict(folder, capsys)
    (folder / (LOG + ".1.gz")).unlink()
    assert (code, doc["verdict"]) == _verdict(folder, capsys)[:1] + (doc["verdict"],)
    assert doc["log"]["conflicts"] == 0
    assert [g["name"] for g in doc["log"]["segments"]] == [LOG + ".1", LOG]


def test_a_gz_that_differs_from_the_plain_file_is_read_and_its_conflict_named(
    tmp_path: Path, capsys
) -> None:
    recs = records(HEALTHY)
    other = [
        dict(r, eval_chunk_mae=9.9) if r.get("step") == 1000 and r["kind"] == "eval" else r
        for r in recs
    ]
    assert other != recs
    folder = _folder(tmp_path, _text(other))
    code, doc = _verdict(folder, capsys)
    assert doc["verdict"] == "UNDECIDABLE", doc["verdict"]
    assert doc["log"]["conflicts"] >= 1
    assert "9.9" in json.dumps(doc["reasons"] if "reasons" in doc else doc), doc
    assert [g["name"] for g in doc["log"]["segments"]] == [LOG + ".1.gz", LOG + ".1", LOG]
