"""Frozen pre-registration, bounds-changed detection, and the amendment ledger."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from fontaine_tui import cli
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.launch import guards
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.ledger import declare_amendment, max_step_seen, read_amendments
from fontaine_tui.core.verdict.prereg import SCHEMA, compare, freeze, parse_utc, read_prereg
from fontaine_tui.core.verdict.rules import compute_verdict
from tests.core.launch.conftest import preset_variant, without_amendments
from tests.logs import RIGONLY_LIKE, T0, records

T = 1_800_000_000.25


def write_log(folder: RunFolder, upto: int, steps: int = 1000) -> None:
    """The log cut at `upto`, its own clock starting now: each record is logged after the
    declarations made before this call."""
    now = time.time()
    recs = [
        {**r, "time": r["time"] - T0 + now}
        for r in records(RIGONLY_LIKE, steps=steps)
        if r["step"] <= upto and not (r["kind"] == "event" and r["event"] == "end")
    ]
    folder.log.write_text("".join(json.dumps(r) + "\n" for r in recs))


def launched(tmp_path: Path, preset_path: str | Path = "demosonly_1gpu") -> RunFolder:
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    freeze(
        folder, load_preset(preset_path), ["python", "-m", "fontaine_engine", "train"], "h", now=T
    )
    return folder


def test_freeze_writes_the_contract_and_reads_back(tmp_path: Path) -> None:
    preset = load_preset("demosonly_1gpu")
    folder = launched(tmp_path)
    doc = json.loads(folder.prereg.read_text())
    assert set(doc) == {
        "schema",
        "preset_name",
        "preset_path",
        "preset",
        "preset_sha256",
        "argv",
        "launched_at",
        "host",
        "version",
    }
    assert doc["schema"] == SCHEMA and doc["preset_name"] == "demosonly_1gpu"
    assert doc["preset_sha256"] == preset.sha256
    assert doc["launched_at"] == "2027-01-15T08:00:00.250000Z"
    assert parse_utc(doc["launched_at"]) == T
    assert [p.name for p in folder.root.iterdir()] == ["prereg.json"]  # no temp file left
    pr = read_prereg(folder)
    assert pr.argv == ("python", "-m", "fontaine_engine", "train") and pr.launched_ts == T
    assert compare(pr, preset) is None
    assert pr.frozen_preset().sha256 == preset.sha256


def test_changed_bounds_are_named(tmp_path: Path) -> None:
    folder = launched(tmp_path)
    pr = read_prereg(folder)
    moved = load_preset(preset_variant(tmp_path, "demosonly_1gpu", healthy_max="0.25"))
    change = compare(pr, moved)
    assert change is not None and change.sections == ("verdict",) and change.math_changed
    assert change.message.startswith("bounds changed after launch: [verdict] differ")
    knobs = load_preset(preset_variant(tmp_path, "demosonly_1gpu", name="k", num_workers="4"))
    change = compare(pr, knobs)
    assert change.sections == ("platform",) and not change.math_changed


def test_resume_refuses_changed_math_and_allows_changed_knobs(tmp_path: Path) -> None:
    folder = launched(tmp_path)
    moved = load_preset(preset_variant(tmp_path, "demosonly_1gpu", steps="2000"))
    [f] = guards.check_folder(moved, folder, resume=True)
    assert f.level == "refuse" and "bounds changed after launch: [recipe]" in f.message
    knobs = load_preset(preset_variant(tmp_path, "demosonly_1gpu", name="k", num_workers="4"))
    found = guards.check_folder(knobs, folder, resume=True)
    assert [x.level for x in found] == ["warn", "warn"]  # knobs changed; no checkpoint yet
    assert guards.refusal(found) is None


def test_fresh_launch_refuses_a_launched_folder(tmp_path: Path) -> None:
    folder = launched(tmp_path)
    [f] = guards.check_folder(load_preset("demosonly_1gpu"), folder, resume=False)
    assert f.level == "refuse" and "already holds a launched run (prereg.json)" in f.message
    ckpts = RunFolder(tmp_path / "ckpts")
    (ckpts.checkpoints / "step-000020").mkdir(parents=True)
    [f] = guards.check_folder(load_preset("demosonly_1gpu"), ckpts, resume=False)
    assert f.level == "refuse" and "already holds a launched run (checkpoints)" in f.message
    other = RunFolder(tmp_path / "other")
    other.root.mkdir()
    other.log.write_text("")
    [f] = guards.check_folder(load_preset("demosonly_1gpu"), other, resume=True)
    assert f.level == "refuse" and "was not launched by fontaine-tui" in f.message


def test_tampered_prereg_is_refused(tmp_path: Path) -> None:
    folder = launched(tmp_path)
    doc = json.loads(folder.prereg.read_text())
    doc["preset"]["verdict"]["healthy_max"] = 0.5
    folder.prereg.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="prereg.json was edited"):
        read_prereg(folder)
    folder.prereg.write_text("{not json")
    with pytest.raises(InputError, match="expected a JSON prereg"):
        read_prereg(folder)


# -- amendments ------------------------------------------------------------------------------


def test_amendment_after_step_500_is_refused_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = launched(tmp_path, without_amendments(tmp_path))
    write_log(folder, upto=510)
    code = cli.main(
        ["amend", str(folder.root), "--scale-from-step", "250", "--comparator", "demosonly"]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "last step seen 510" in out
    assert (
        "refused: declared after step 510 was seen; a scale amendment must be declared "
        "before step 500 (the anchor probe)"
    ) in out
    [a] = read_amendments(folder)  # recorded anyway: the ledger is an honest record
    assert (a.source, a.declared_after_step, a.from_step, a.comparator) == (
        "ledger",
        510,
        250,
        "demosonly",
    )
    store = load_log(folder.log)
    v = compute_verdict(store, folder_preset(folder), amendments=read_amendments(folder))
    assert v.scaled is None and v.amendments[0].status == "refused"


def folder_preset(folder: RunFolder):
    return read_prereg(folder).frozen_preset()


@pytest.mark.parametrize(("seen", "status"), [(499, "applied"), (500, "refused")])
def test_scale_amendment_around_the_anchor(tmp_path: Path, seen: int, status: str) -> None:
    folder = launched(tmp_path, without_amendments(tmp_path))
    write_log(folder, upto=seen)
    assert max_step_seen(folder.log) == seen
    preset = folder_preset(folder)
    a = declare_amendment(
        folder, from_step=250, comparator="demosonly", last_step_seen=seen, preset=preset
    )
    assert a.declared_after_step == seen and a.declared_before_step == seen + 1
    write_log(folder, upto=1000)
    v = compute_verdict(load_log(folder.log), preset, amendments=read_amendments(folder))
    assert v.amendments[0].status == status
    assert (v.scale is not None) == (status == "applied")


def test_fixed_factor_form_and_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = launched(tmp_path, without_amendments(tmp_path))
    write_log(folder, upto=300)
    assert cli.main(["amend", str(folder.root), "--scale-factor", "3.613"]) == 0
    out = capsys.readouterr().out
    assert "amendment 1 (fixed factor 3.613)" in out and "applied" in out
    # a second scale amendment is recorded and refused: one is already in force
    assert cli.main(["amend", str(folder.root), "--scale-factor", "2"]) == 1
    assert "refused: a scale amendment is already in force" in capsys.readouterr().out
    lines = [json.loads(x) for x in folder.amendments.read_text().splitlines()]
    assert [x["id"] for x in lines] == [1, 2]
    assert lines[0]["rule"] == {"kind": "scale", "factor": 3.613}
    assert lines[0]["last_step_seen"] == 300 and lines[0]["declared_at"].endswith("Z")


def test_preset_amendment_ids_are_not_reused(tmp_path: Path) -> None:
    folder = launched(tmp_path)  # demosonly_1gpu carries amendment 1
    a = declare_amendment(folder, factor=2.0, last_step_seen=0, preset=folder_preset(folder))
    assert a.id == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scale-factor", "-1"], "expected a positive factor"),
        (["--scale-from-step", "250", "--comparator", "nosuch"], "expected a comparator name"),
        (["--scale-from-step", "100", "--comparator", "demosonly"], "expected a probe step"),
        (["--scale-from-step", "500", "--comparator", "demosonly"], "level_step = 500"),
        ([], "expected --scale-factor F"),
        (["--scale-factor", "2", "--scale-from-step", "250"], "not both"),
    ],
)
def test_bad_amendments_are_one_line_exit_2_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    folder = launched(tmp_path, without_amendments(tmp_path))
    assert cli.main(["amend", str(folder.root), *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err
    assert not folder.amendments.exists()


def test_amend_needs_a_launched_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["amend", str(tmp_path / "nope"), "--scale-factor", "2"]) == 2
    assert cli.main(["amend", str(tmp_path), "--scale-factor", "2"]) == 2
    assert "no prereg.json" in capsys.readouterr().err


def test_ledger_tolerates_a_torn_last_line_and_names_a_bad_one(tmp_path: Path) -> None:
    folder = launched(tmp_path)
    declare_amendment(folder, factor=2.0, last_step_seen=3, preset=folder_preset(folder))
    with open(folder.amendments, "ab") as fh:
        fh.write(b'{"id": 9, "rule"')
    assert len(read_amendments(folder)) == 1
    folder.amendments.write_text('{"id": 1}\n')
    with pytest.raises(
        InputError,
        match=r"amendments.jsonl:1: no hash \(not written by "
        r"`fontaine-tui amend`, or edited\); amendments from line 1 on",
    ):
        read_amendments(folder)


def test_max_step_seen_counts_steps_a_resume_replayed(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    recs = [r for r in records(RIGONLY_LIKE, steps=40) if r["step"] <= 35]
    recs.append({"kind": "event", "step": 20, "time": 0, "event": "resume", "detail": ""})
    recs += [
        r for r in records(RIGONLY_LIKE, steps=40) if r["kind"] == "train" and 20 < r["step"] <= 25
    ]
    folder.log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert load_log(folder.log).last_step == 25
    assert max_step_seen(folder.log) == 35


@pytest.mark.parametrize("rotation", ["copytruncate", "rename", "rename-gz"])
def test_amend_counts_the_steps_of_rotated_segments(
    tmp_path: Path, capsys, demosonly, rotation
) -> None:
    # a finished run whose log was rotated: an extend declared now comes after the endpoint
    from tests.logs import write_log as write_records

    main = cli.main
    folder = RunFolder(tmp_path)
    write_records(folder.log, probes=RIGONLY_LIKE)
    freeze(folder, demosonly, ["python", "-m", "fontaine_engine", "train"], "host")
    assert main(["verdict", str(tmp_path)]) == 4  # AMBIGUOUS, final
    data = folder.log.read_bytes()
    if rotation == "copytruncate":
        (tmp_path / "train_log.jsonl.1").write_bytes(data)
        folder.log.write_bytes(b"")
    elif rotation == "rename":  # logrotate's create: a new, empty live file
        folder.log.rename(tmp_path / "train_log.jsonl.1")
        folder.log.write_bytes(b"")
    else:
        with gzip.open(tmp_path / "train_log.jsonl.1.gz", "wb") as fh:
            fh.write(data)
        folder.log.write_bytes(b"")
    capsys.readouterr()
    assert main(["amend", str(tmp_path), "--extend-to", "1250"]) == 1
    out = capsys.readouterr().out
    assert "last step seen 1000" in out and "refused" in out, out
    assert main(["verdict", str(tmp_path)]) == 4  # still final: the extend did not apply
