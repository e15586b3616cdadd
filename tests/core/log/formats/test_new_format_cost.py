"""A new log format is one record: a TSV reader registered at test time, and nothing else.

The record (registry.py's `Format`) names the kind, its decoder (a CSV decoder reading tabs),
how a folder is told to hold it, its files and how it is followed. With it added to `FORMATS`
(and no other edit), a folder holding a tab-separated log written by Python's csv.writer is
detected, named alone by its file, accepted as a preset's [source] kind, read cold into a
store, shown by `inspect` with its keys and cadence, and followed live as it is rewritten.
Without the record none of that knows the kind."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats import registry, where
from fontaine_tui.core.log.formats.candidates import choose
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.grouper import FieldMap
from fontaine_tui.core.log.formats.inspect import inspect_run
from fontaine_tui.core.log.formats.locate import detect, file_kind, files, foreign_spec
from fontaine_tui.core.log.formats.rows import CsvDecoder
from fontaine_tui.core.log.formats.source import SourceSpec, read_spec
from fontaine_tui.core.log.store import RunStore
from tests.core.log.formats.conftest import EVAL, loss

TSV_NAME = "metrics.tsv"


class TsvDecoder(CsvDecoder):
    kind = "tsv"
    delimiter = "\t"


def _tsv_files(folder: Path, spec: SourceSpec, base: Path) -> list[Path]:
    if base.is_file():
        return [base]
    return [where.one(base, sorted(base.glob("*.tsv")), "*.tsv file")]


TSV = registry.Format(
    "tsv",
    _tsv_files,
    lambda spec: TsvDecoder(spec.fields),
    lambda folder: any(folder.glob("*.tsv")),
    expected=("a *.tsv file",),
    names=("*.tsv",),
    remote=TSV_NAME,
    follow=registry.REWRITTEN,
)


@pytest.fixture
def tsv_kind(monkeypatch):
    """The TSV format registered: one record added to the table, nothing else."""
    monkeypatch.setattr(registry, "FORMATS", (*registry.FORMATS, TSV))


def write_tsv(path: Path, last: int = 80) -> None:
    """A run's log as csv.writer writes it with tabs: every step's loss, eval every 10 steps."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh, delimiter="\t")
        w.writerow(["step", "train/loss", "eval/mae"])
        for step in range(1, last + 1):
            w.writerow([step, f"{loss(step):.6f}", f"{EVAL[step]:.4f}" if step in EVAL else ""])


@pytest.fixture
def tsv_run(tmp_path) -> Path:
    folder = tmp_path / "run"
    write_tsv(folder / TSV_NAME)
    return folder


def test_without_its_record_no_reader_knows_the_kind(tsv_run):
    with pytest.raises(InputError, match="no log this console reads"):
        detect(tsv_run)
    assert file_kind(TSV_NAME) == ""
    with pytest.raises(ValueError, match="expected one of"):
        read_spec({"kind": "tsv"})
    with pytest.raises(InputError, match="--kind: expected one of"):
        choose(tsv_run, "tsv")


def test_locate_detects_and_names_its_files(tsv_kind, tsv_run, tmp_path):
    assert detect(tsv_run) == "tsv"
    assert file_kind(TSV_NAME) == "tsv"
    assert read_spec({"kind": "tsv"}).kind == "tsv"
    assert foreign_spec(tsv_run, None, preset_named=True) == SourceSpec("tsv")
    assert files(tsv_run, SourceSpec("tsv")) == [tsv_run / TSV_NAME]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"wandb/, a trackio <project>\.db or a \*\.tsv file"):
        detect(empty)  # what detect looks for says the new kind too


def test_a_cold_read_takes_every_step_and_probe(tsv_kind, tsv_run):
    spec = SourceSpec("tsv", fields=FieldMap(eval=("eval/*",)))
    loaded = load_source(tsv_run, spec)
    assert loaded.kind == "tsv" and loaded.files == (tsv_run / TSV_NAME,)
    store = loaded.store
    assert list(store.steps) == list(range(1, 81))
    assert list(store.columns["loss"]) == pytest.approx([loss(s) for s in range(1, 81)], abs=1e-6)
    assert {s: p.fields["eval/mae"] for s, p in store.probes.items()} == pytest.approx(EVAL)
    assert store.notices == [] and store.conflicts == []


def test_inspect_lists_it_with_its_keys_and_cadence(tsv_kind, tsv_run):
    ins = inspect_run(tsv_run)
    doc = ins.to_json()
    assert doc["format"]["kind"] == "tsv"
    assert doc["format"]["files"] == [str(tsv_run / TSV_NAME)]
    assert [c["source"] for c in doc["candidates"]] == [['kind = "tsv"']]
    stats = {k["key"]: k for k in doc["keys"]}
    assert stats["eval/mae"]["role"] == "eval" and stats["eval/mae"]["count"] == 8
    assert stats["train/loss"]["count"] == 80
    assert doc["probes"]["every"] == 10 and doc["probes"]["first"] == 10
    assert doc["last_step"] == 80


async def test_it_is_followed_live_as_it_is_rewritten(tsv_kind, tmp_path):
    folder = tmp_path / "live"
    write_tsv(folder / TSV_NAME, last=10)
    run = ForeignRun(folder, SourceSpec("tsv", fields=FieldMap(eval=("eval/*",))), poll_s=0.05)
    store = RunStore()

    async def write():
        for last in (20, 30):
            await asyncio.sleep(0.3)
            write_tsv(folder / TSV_NAME, last=last)

    async def read():
        async for batch in run.follow():
            for rec in batch.records:
                store.add(rec)
            if len(store.steps) >= 30 and len(store.probes) >= 3:
                return

    writer = asyncio.create_task(write())
    try:
        await asyncio.wait_for(read(), 30)
    finally:
        await run.close()
        await writer
    assert list(store.steps) == list(range(1, 31))
    assert {s: p.fields["eval/mae"] for s, p in store.probes.items()} == pytest.approx(
        {s: EVAL[s] for s in (10, 20, 30)}
    )
    assert run.label.endswith("(tsv)") and not run.records_end
