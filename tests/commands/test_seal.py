"""`fontaine-tui seal` and `verify` through the command line, on the recorded demo run.

The run carries an amendment (declared with `fontaine-tui amend`) and a review chain. A real
webhook on 127.0.0.1 receives prereg.json's sha256 at launch and the bundle's digest at seal.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.notify import delivery
from fontaine_tui.core.preset.checks import canonical_bytes
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.run.launcher import EngineProcess
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.seal.bundle import pack
from fontaine_tui.core.verdict import review
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.model import seal as sealing
from fontaine_tui.model.judge import judge
from fontaine_tui.model.plain import babysit

DEMO = Path(__file__).parents[2] / "fontaine_tui" / "demo" / "run"
FAKE = str(Path(__file__).parents[1] / "core" / "launch" / "fake_engine.py")
ROOT = str(Path(__file__).parents[2])


def cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The installed command line, this checkout's fontaine_tui imported."""
    base = {**os.environ, "PYTHONPATH": ROOT, "FONTAINE_NOTIFY": ""}
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **(env or {})},
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """The demo run with one amendment declared and one review action."""
    root = tmp_path_factory.mktemp("seal") / "run"
    shutil.copytree(DEMO, root)
    amend = cli("amend", str(root), "--extend-to", "350", "--text", "a slow warm-up")
    assert amend.returncode == 1, amend.stderr  # recorded, refused: declared after the data
    review.append(root / "review.jsonl", "accept", judge(str(root)).verdict, "looked at it")
    return root


@pytest.fixture(scope="module")
def bundle(run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("out") / "r.seal.zip"
    done = cli("seal", str(run), "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out


def entries(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_sealing_twice_gives_the_same_bytes_and_verify_passes(run, bundle, tmp_path):
    again = tmp_path / "again.zip"
    assert cli("seal", str(run), "-o", str(again)).returncode == 0
    assert again.read_bytes() == bundle.read_bytes()
    names = sorted(entries(bundle))
    assert names == [
        "MANIFEST.json",
        "amendments.jsonl",
        "amendments.jsonl.head",
        "evidence/train_log.jsonl",
        "prereg.json",
        "provenance.json",
        "review.jsonl",
        "review.jsonl.head",
        "verdict.json",
    ]
    done = cli("verify", str(bundle))
    assert done.returncode == 0, done.stderr
    assert "recomputed from the bundled evidence, the same" in done.stdout
    verdict = json.loads(entries(bundle)["verdict.json"])
    assert verdict == judge(str(run)).verdict.to_json()  # as `verdict --json` says it
    assert verdict["amendments"][0]["status"] == "refused"


def _flip(path: Path, member: str, out: Path) -> None:
    """Copy the bundle with one byte flipped in the middle of `member`'s stored data."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + info.compress_size // 2] ^= 0x01
    out.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "member", ["verdict.json", "amendments.jsonl", "evidence/train_log.jsonl", "prereg.json"]
)
def test_one_flipped_byte_is_named_by_its_file(bundle, tmp_path, member):
    broken = tmp_path / "broken.zip"
    _flip(bundle, member, broken)
    done = cli("verify", str(broken))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and f": {member}: " in done.stderr, done.stderr


def _repacked(bundle: Path, out: Path, changed: dict[str, bytes]) -> str:
    """The bundle's files with some replaced, sealed again with a fresh, consistent manifest."""
    files = entries(bundle)
    manifest = json.loads(files.pop("MANIFEST.json"))
    files.update(changed)
    data, digest = pack(files, manifest["run"], manifest["evidence"])
    out.write_bytes(data)
    return digest


def test_a_regenerated_bundle_is_caught_by_its_content(bundle, tmp_path, capsys):
    files = entries(bundle)
    verdict = json.loads(files["verdict.json"])
    verdict["verdict"] = verdict["label"] = "SAME-DRIFT"
    forged = tmp_path / "forged.zip"
    _repacked(bundle, forged, {"verdict.json": json.dumps(verdict).encode()})
    assert main(["verify", str(forged)]) == 2
    err = capsys.readouterr().err
    assert "verdict.json: key label: the bundled verdict differs" in err
    lines = files["amendments.jsonl"].decode().splitlines()
    first = json.loads(lines[0])
    first["rule"]["text"] = "a reason found later"
    edited = "\n".join([json.dumps(first), *lines[1:]]) + "\n"
    _repacked(bundle, forged, {"amendments.jsonl": edited.encode()})
    assert main(["verify", str(forged)]) == 2
    assert "amendments.jsonl:1: its content does not match its hash" in capsys.readouterr().err
    log = files["evidence/train_log.jsonl"]
    at = log.rfind(b'"eval_chunk_mae":') + len(b'"eval_chunk_mae":')  # the endpoint's probe
    log = log[:at] + b"9" + log[at:]
    _repacked(bundle, forged, {"evidence/train_log.jsonl": log})
    assert main(["verify", str(forged)]) == 2
    assert ": verdict.json: key " in capsys.readouterr().err


def test_an_edited_manifest_is_named_by_its_digest(bundle, tmp_path, capsys):
    files = entries(bundle)
    manifest = json.loads(files["MANIFEST.json"])
    manifest["files"]["verdict.json"] = hashlib.sha256(b"another").hexdigest()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, body in files.items():
            zf.writestr(name, json.dumps(manifest) if name == "MANIFEST.json" else body)
    (tmp_path / "m.zip").write_bytes(out.getvalue())
    assert main(["verify", str(tmp_path / "m.zip")]) == 2
    assert ": MANIFEST.json: digest: expected " in capsys.readouterr().err


def test_without_the_evidence_verify_covers_the_chain_and_hashes(run, tmp_path, monkeypatch):
    monkeypatch.setattr(sealing, "EVIDENCE_MAX", 1000)
    out = tmp_path / "small.zip"
    assert main(["seal", str(run), "-o", str(out)]) == 0
    assert not [n for n in entries(out) if n.startswith("evidence/")]
    done = cli("verify", str(out))
    assert done.returncode == 0, done.stderr
    assert "evidence: none in the bundle; verify covered the hashes, the chains" in done.stdout


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_report_is_the_bundle_as_a_preregistration(run, tmp_path, fmt):
    out = tmp_path / f"report.{fmt}"
    done = cli("seal", str(run), "--report", fmt, "-o", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    for heading in ("Question", "Hypotheses (bounds)", "Design", "Analysis (the rule)"):
        assert heading in text
    assert "Does the action error climb after step 150" in text
    assert "healthy_max: 0.3" in text and "recipe model_size" in text
    assert "after step 300 was seen, first affecting step 300; refused" in text
    verdict = json.loads(entries_of_seal(run, tmp_path)["verdict.json"])
    assert f"verdict {verdict['verdict']}" in text


def entries_of_seal(run: Path, tmp_path: Path) -> dict[str, bytes]:
    out = tmp_path / "for-report.zip"
    assert main(["seal", str(run), "-o", str(out)]) == 0
    return entries(out)


def test_the_digests_reach_the_channel_at_launch_and_at_seal(hook, tmp_path, monkeypatch):
    """A launch (a stand-in engine to its end) posts prereg.json's sha256; seal its digest."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(delivery, "Policy", functools.partial(delivery.Policy, tries=1))
    monkeypatch.setenv("FONTAINE_NOTIFY", hook.url("/hook"))
    (tmp_path / "run").mkdir()
    folder = RunFolder(tmp_path / "run")
    preset = load_preset("smoke")
    prereg = freeze(folder, preset, ["x"], "h")
    engine = EngineProcess.start([sys.executable, FAKE, str(folder.root), "finish"], folder)
    Registry().upsert(Entry("smoke", str(folder.root), "h", pid=engine.pid))
    try:
        babysit(preset, folder, engine, Registry(), "h", prereg, 0.2, False)
    finally:
        if engine.poll() is None:
            engine.stop(grace_int=10)
    launched = json.loads(hook.requests[0].body)
    assert launched["title"] == "smoke: launched"
    frozen = hashlib.sha256(folder.prereg.read_bytes()).hexdigest()
    assert f"prereg.json sha256 {frozen}" in launched["text"]
    before = len(hook.requests)
    out = tmp_path / "smoke.seal.zip"
    done = cli("seal", str(folder.root), "-o", str(out), env={"FONTAINE_NOTIFY": hook.url("/h")})
    assert done.returncode == 0, done.stderr
    digest = done.stdout.split("digest: ")[1].strip()
    sealed = json.loads(hook.requests[before].body)
    assert sealed["title"] == "smoke: sealed" and f"digest {digest}" in sealed["text"]
    manifest = entries(out)["MANIFEST.json"]
    assert json.loads(manifest)["digest"] == digest
    assert hashlib.sha256(entries(out)["prereg.json"]).hexdigest() == frozen
    assert cli("verify", str(out)).returncode == 0


def test_an_evidence_file_standing_in_for_a_record_is_refused(bundle, tmp_path, capsys):
    """evidence/prereg.json would be read, beside the real prereg.json, when recomputing."""
    files = entries(bundle)
    shadow = json.loads(files["prereg.json"])
    shadow["preset"]["verdict"]["healthy_max"] = -5.0
    forged = tmp_path / "shadow.zip"
    _repacked(bundle, forged, {"evidence/prereg.json": json.dumps(shadow).encode()})
    assert main(["verify", str(forged)]) == 2
    err = capsys.readouterr().err
    assert "evidence/prereg.json: an evidence file named as the bundle's own prereg.json" in err


def test_a_verdict_read_with_other_bounds_is_refused_without_evidence(bundle, tmp_path, capsys):
    files = entries(bundle)
    verdict = json.loads(files["verdict.json"])
    verdict["preset"]["sha256"] = "0" * 64
    verdict["verdict"] = verdict["label"] = "SAME-DRIFT"
    changed = {"verdict.json": json.dumps(verdict).encode()}
    changed.update({n: b"" for n in files if n.startswith("evidence/")})
    kept = {n: b for n, b in files.items() if not n.startswith("evidence/")}
    kept.pop("MANIFEST.json")
    kept.update({"verdict.json": changed["verdict.json"]})
    data, _ = pack(kept, "r", "carried: train_log.jsonl; verify recomputes the verdict from it")
    forged = tmp_path / "bare.zip"
    forged.write_bytes(data)
    assert main(["verify", str(forged)]) == 2
    assert "verdict.json: key preset.sha256: read with preset 000000000000" in (
        capsys.readouterr().err
    )


def _verify_section() -> str:
    page = (Path(ROOT) / "docs" / "sealing.md").read_text()
    return page.split("## What verify checks", 1)[1].split("\n## ", 1)[0]


def test_verify_checks_in_the_order_the_docs_list(bundle, tmp_path, capsys):
    """A bundle broken at three of verify's steps at once (its manifest consistent): the
    verdict read with other bounds, an evidence file standing in for prereg.json, a cut review
    chain. Verify names the first, and the next once that one is mended, in the order
    docs/sealing.md numbers them."""
    files = entries(bundle)
    verdict = json.loads(files["verdict.json"])
    verdict["preset"]["sha256"] = "0" * 64
    broken = {
        "verdict.json": json.dumps(verdict).encode(),
        "evidence/prereg.json": files["prereg.json"],
        "review.jsonl": b"",
    }
    mended = {"verdict.json": files["verdict.json"]}
    stages = [  # what is mended, and the first break verify names then
        ({}, "verdict.json: key preset.sha256: read with preset 000000000000"),
        (mended, "evidence/prereg.json: an evidence file named as the bundle's own prereg.json"),
        ({**mended, "evidence/prereg.json": None}, "review.jsonl: "),
    ]
    for i, (mend, first) in enumerate(stages):
        changed = {**broken, **mend}
        forged = tmp_path / f"broken{i}.zip"
        _repacked(bundle, forged, {n: b for n, b in changed.items() if b is not None})
        assert main(["verify", str(forged)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{forged}: {first}" in err, (first, err)
    steps = re.split(r"\n(?=\d+\. )", _verify_section())[1:]  # the numbered items
    where = [
        next((n for n, step in enumerate(steps) if key in step), -1)
        for key in ("`preset.sha256`", "`evidence/prereg.json`", "the review chain")
    ]
    assert -1 not in where and where == sorted(where) and len(set(where)) == 3, (where, steps)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b'"deep": ' + b"[" * 5000 + b"]" * 5000 + b", ", "nested too deep: more than 64 levels"),
        (b'"cut": ', "not JSON"),
    ],
)
def test_a_verdict_json_that_cannot_be_read_says_why(bundle, tmp_path, body, said):
    """verdict.json nested 5,000 deep (or not JSON) inside a consistent bundle: the reason."""
    text = entries(bundle)["verdict.json"]
    forged = tmp_path / "deep.zip"
    _repacked(bundle, forged, {"verdict.json": text.replace(b"{", b"{" + body, 1)})
    done = cli("verify", str(forged))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{forged}: verdict.json: {said}" in lines[0], lines
    assert "naming its preset" not in lines[0]


def test_seal_writes_over_no_zip_that_only_begins_with_a_bundle(run, bundle, tmp_path):
    mine = tmp_path / "myarchive.zip"
    with zipfile.ZipFile(mine, "w", zipfile.ZIP_STORED) as zf:
        zf.write(bundle, "r.seal.zip")
        zf.writestr("my_thesis.txt", "irreplaceable" * 100)
    before = mine.read_bytes()
    done = cli("seal", str(run), "-o", str(mine))
    assert done.returncode == 2, done.stdout
    assert "exists and is not a sealed bundle" in done.stderr
    assert mine.read_bytes() == before


def test_a_run_name_is_made_a_plain_file_name(tmp_path):
    odd = tmp_path / "odd"
    shutil.copytree(DEMO, odd)
    prereg = json.loads((odd / "prereg.json").read_text())
    prereg["preset"]["run"]["name"] = "../../evilname"
    prereg["preset_sha256"] = hashlib.sha256(canonical_bytes(prereg["preset"])).hexdigest()
    (odd / "prereg.json").write_text(json.dumps(prereg))
    done = cli("seal", str(odd))
    assert done.returncode == 0, done.stderr
    assert "sealed: " + str(odd / "_.._evilname.seal.zip") in done.stdout
    assert not (tmp_path.parent / "evilname.seal.zip").exists()
    assert not list(tmp_path.glob("evilname*"))


def test_a_run_whose_review_trail_is_cut_is_not_sealed(run, tmp_path):
    cut = tmp_path / "cut"
    shutil.copytree(run, cut)
    assert cli("verdict", str(cut), "--json").returncode in (0, 3, 4, 5, 6)  # records the trail
    (cut / "review.jsonl").write_text("")
    done = cli("seal", str(cut), "-o", str(tmp_path / "cut.zip"))
    assert done.returncode == 2, done.stdout
    assert "is not sealed" in done.stderr
    assert not (tmp_path / "cut.zip").exists()


@pytest.mark.parametrize("name", ["x", "x/", "x.seal.zip/", "r.seal.zip/x"])
def test_verify_of_a_name_that_is_not_one_bundle_is_one_line(bundle, tmp_path, capsys, name):
    """A folder beside its bundle (`x` and `x.seal.zip`), a name read as a folder: one line."""
    (tmp_path / "x").mkdir()
    shutil.copy(bundle, tmp_path / "x.seal.zip")
    shutil.copy(bundle, tmp_path / "r.seal.zip")
    assert main(["verify", f"{tmp_path}/{name}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err, err


def test_verify_of_the_run_folder_names_the_bundle_seal_wrote_there(run, tmp_path, capsys):
    """The folder `seal RUN` wrote into given to verify: it names the bundle to give."""
    folder = tmp_path / "r7"
    shutil.copytree(run, folder)
    assert main(["seal", str(folder)]) == 0
    capsys.readouterr()
    assert main(["verify", str(folder)]) == 2
    err = capsys.readouterr().err
    (written,) = folder.glob("*.seal.zip")
    assert err.count("\n") == 1 and "not a bundle" in err and written.name in err, err


def _seal_section() -> str:
    page = (Path(ROOT) / "docs" / "sealing.md").read_text()
    return page.split("## What seal does", 1)[1].split("\n## ", 1)[0]


def test_seal_refuses_in_the_order_the_docs_list(tmp_path):
    """A blinded run before its endpoint, broken at four of seal's steps at once: its review
    trail cut, its log a link to a file outside the run folder, the read hidden, and -o naming
    a file that is no bundle. Seal names the first, and the next once that one is mended, in
    the order docs/sealing.md numbers them, and writes nothing."""
    from tests.commands.test_blind import run_folder

    root = run_folder(tmp_path, 750)
    log, outside = root / "train_log.jsonl", tmp_path / "elsewhere.jsonl"
    log.rename(outside)
    log.symlink_to(outside)
    (root / "review.jsonl").write_text('{"cut": 1}\n')
    mine = tmp_path / "mine.zip"
    mine.write_bytes(b"my own file")

    def unlinked() -> None:
        log.unlink()
        shutil.copy(outside, log)

    steps = [  # what is mended first, what is asked, and the one line seal says then
        (None, (), "review.jsonl"),
        ((root / "review.jsonl").unlink, (), "a symbolic link to a file outside the run folder"),
        (unlinked, (), "the read is blinded until the endpoint"),
        (None, ("--unblind", "the audit"), f"{mine}: "),
    ]
    for mend, more, first in steps:
        if mend is not None:
            mend()
        done = cli("seal", str(root), "-o", str(mine), *more, env={"FONTAINE_USER": "alice"})
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and first in lines[0], (first, lines)
        assert mine.read_bytes() == b"my own file"
    numbered = [" ".join(s.split()) for s in re.split(r"\n(?=\d+\. )", _seal_section())[1:]]
    where = [
        next((n for n, step in enumerate(numbered) if key in step), -1)
        for key in ("trail does not hold", "links outside", "blinded before", "over an")
    ]
    assert -1 not in where and where == sorted(where) and len(set(where)) == 4, (where, numbered)
