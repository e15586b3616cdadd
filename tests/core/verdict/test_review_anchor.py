"""The review trail starts from prereg.json, a trail removed with its head is named through the
verdict.json that recorded it, a broken trail is never extended, and `verdict` (text and
--json, through the real command line) shows the break beside an unchanged verdict and exits 2."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.seal import export
from fontaine_tui.core.verdict import review
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.core.verdict.rules import compute_verdict
from tests.core.launch.conftest import without_amendments
from tests.logs import RIGONLY_LIKE, write_log

ROOT = Path(__file__).parents[3]


def head_path(chain: Path) -> Path:
    return chain.with_name(chain.name + ".head")


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    return load_preset(without_amendments(tmp_path_factory.mktemp("preset")))


@pytest.fixture(scope="module")
def verdict(tmp_path_factory, preset):
    log = write_log(tmp_path_factory.mktemp("v") / "train_log.jsonl", probes=RIGONLY_LIKE)
    return compute_verdict(load_log(log), preset)


def _run(tmp_path: Path, preset, verdict, reviews: int = 3, prereg: bool = True) -> RunFolder:
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir(parents=True)
    if prereg:
        freeze(folder, preset, ["engine"], "h", now=1_800_000_000)
    write_log(folder.log, probes=RIGONLY_LIKE)
    for i in range(reviews):
        review.append(folder.review, ("accept", "flag", "note")[i % 3], verdict, note=f"{i}")
    return folder


def _zeros_trail(tmp_path: Path, preset, verdict) -> RunFolder:
    """A run folder whose trail starts from zeros: one written where there was no prereg.json."""
    elsewhere = _run(tmp_path / "elsewhere", preset, verdict, prereg=False)
    folder = _run(tmp_path, preset, verdict, reviews=0)
    for name in ("review.jsonl", "review.jsonl.head"):
        shutil.copy(elsewhere.root / name, folder.root / name)
    assert json.loads(folder.review.read_bytes().splitlines()[0])["prev"] == review.GENESIS
    return folder


def _cli(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(folder), *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


# -- the chain's anchor and its checks ------------------------------------------------------


def test_the_first_review_follows_prereg_json(tmp_path, preset, verdict):
    folder = _run(tmp_path, preset, verdict)
    first = json.loads(folder.review.read_bytes().splitlines()[0])
    assert first["prev"] == hashlib.sha256(folder.prereg.read_bytes()).hexdigest()
    assert review.verify(folder.review) == review.ChainCheck(3)
    state = review.state(folder.root)
    last = folder.review.read_bytes().splitlines()[-1]
    assert state == review.ReviewState(3, hashlib.sha256(last).hexdigest())


def test_a_trail_from_zeros_beside_prereg_is_named(tmp_path, preset, verdict):
    folder = _zeros_trail(tmp_path, preset, verdict)
    state = review.state(folder.root)
    assert not state.intact
    assert state.broken.startswith("review.jsonl line 1: starts from no prereg.json (zeros)")


def test_a_changed_prereg_breaks_the_trail(tmp_path, preset, verdict):
    folder = _run(tmp_path, preset, verdict)
    folder.prereg.write_bytes(folder.prereg.read_bytes() + b" ")
    assert "line 1: does not follow prereg.json" in review.state(folder.root).broken


def test_a_broken_trail_is_never_extended(tmp_path, preset, verdict):
    folder = _run(tmp_path, preset, verdict)
    lines = folder.review.read_bytes().splitlines(keepends=True)
    folder.review.write_bytes(b"".join(lines[:2]))  # the last review removed
    before = (folder.review.read_bytes(), head_path(folder.review).read_bytes())
    with pytest.raises(InputError, match="holds 2 line.* but 3 were recorded.*nothing was written"):
        review.append(folder.review, "accept", verdict)
    assert (folder.review.read_bytes(), head_path(folder.review).read_bytes()) == before


def test_a_trail_removed_with_its_head_is_named_by_verdict_json(tmp_path, preset, verdict):
    folder = _run(tmp_path, preset, verdict)
    export.write_verdict(folder.verdict, verdict)
    recorded = json.loads(folder.verdict.read_text())["review"]
    assert recorded["lines"] == 3 and recorded["intact"] is True
    folder.review.unlink()
    head_path(folder.review).unlink()
    state = review.state(folder.root)
    assert "holds 0 line(s) but 3 were recorded in" in state.broken
    assert "verdict.json" in state.broken
    # a verdict.json written now keeps the head it must be held to: the break stays named
    export.write_verdict(folder.verdict, verdict)
    again = json.loads(folder.verdict.read_text())["review"]
    assert (again["lines"], again["head"], again["intact"]) == (3, recorded["head"], False)
    assert "3 were recorded" in review.state(folder.root).broken
    with pytest.raises(InputError, match="nothing was written"):
        review.append(folder.review, "accept", verdict)
    assert not folder.review.exists()


def test_an_edited_review_record_in_verdict_json_is_named(tmp_path, preset, verdict):
    folder = _run(tmp_path, preset, verdict)
    export.write_verdict(folder.verdict, verdict)
    doc = json.loads(folder.verdict.read_text())
    doc["review"]["lines"] = "three"
    folder.verdict.write_text(json.dumps(doc, indent=2))
    assert "verdict.json: review: expected" in review.state(folder.root).broken


# -- `fontaine-tui verdict`, through the real command line --------------------------------


def _cut_tail(folder: RunFolder) -> None:
    folder.review.write_bytes(b"".join(folder.review.read_bytes().splitlines(keepends=True)[:2]))


def _deleted(folder: RunFolder) -> None:
    folder.review.unlink()
    head_path(folder.review).unlink()


@pytest.mark.parametrize(
    "case, why",
    [
        ("tail cut", "review.jsonl: holds 2 line(s) but 3 were recorded in"),
        ("deleted", "verdict.json (its last line(s) removed"),
        ("zeros", "review.jsonl line 1: starts from no prereg.json (zeros)"),
    ],
)
def test_verdict_names_a_broken_trail_and_exits_2(tmp_path, preset, verdict, case, why):
    if case == "zeros":
        folder = _zeros_trail(tmp_path, preset, verdict)
    else:
        folder = _run(tmp_path, preset, verdict)
        export.write_verdict(folder.verdict, verdict)  # what records the trail's head
        (_cut_tail if case == "tail cut" else _deleted)(folder)
    res = _cli(folder.root)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert res.stderr.count("\n") == 1 and why in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    # the verdict is still the evidence's, with the break beside it
    assert f"VERDICT: {verdict.label} " in res.stdout
    shown = [line for line in res.stdout.splitlines() if line.startswith("REVIEW TRAIL BROKEN: ")]
    assert len(shown) == 1 and why in shown[0], res.stdout
    js = _cli(folder.root, "--json")
    assert js.returncode == 2 and why in js.stderr
    doc = json.loads(js.stdout)
    assert doc["verdict"] == verdict.verdict
    assert doc["review"]["intact"] is False and why in doc["review"]["broken"]


def test_verdict_shows_an_intact_trail_and_keeps_its_exit_code(tmp_path, preset, verdict):
    folder = _run(tmp_path, preset, verdict)
    res = _cli(folder.root)
    assert res.returncode == verdict.exit_code != 2, res.stderr
    assert "review: 3 line(s), chain intact" in res.stdout
    js = _cli(folder.root, "--json")
    doc = json.loads(js.stdout)
    assert js.returncode == verdict.exit_code
    assert doc["review"]["lines"] == 3 and doc["review"]["intact"] is True
