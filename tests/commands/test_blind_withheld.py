"""A blinded read that is not PROVISIONAL and still not final, on every surface.

The evidence gate (core/run/evidence.py's `withheld`) holds a blinded read hidden when the
amendment ledger does not hold (a dropped amendment may have moved the endpoint later) and when
the run ended before its endpoint without a locked decision; a watcher names the broken ledger;
and `verdict` refuses, before any read, a folder whose review trail does not hold and whose
prereg.json (which says whether the run is blinded) is gone. Real run folders
(core/verdict/prereg.freeze, tests/logs.py), real subprocesses."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.commands.test_blind import ROOT, SECRETS, cli, run_folder
from tests.commands.test_json_schemas import check
from tests.logs import T0, records_upto, write_log

# the endpoint read (step 1000) a broken ledger would make final: its level, delta, class
FINAL = ("3.7929", "0.6929", "AMBIGUOUS", "HEALTHY", "DRIFT")
LEDGER_BREAK = "amendments.jsonl:1: its content does not match its hash (edited)"


def extended(tmp_path: Path) -> Path:
    """A blinded run amended at step 750 to end at 1500, its log at 1000, its ledger edited."""
    root = run_folder(tmp_path, 750)
    amend = cli(tmp_path, "amend", str(root), "--extend-to", "1500", "--text", "more steps")
    assert amend.returncode == 0, amend.stdout + amend.stderr
    # the steps after 750 logged after the declaration, by the log's own clock
    now = time.time() + 5
    grown = [
        dict(r, time=now + r["step"] / 100) if r["step"] > 750 else r
        for r in records_upto(1000, steps=1500)
    ]
    write_log(root / "train_log.jsonl", grown)
    held = cli(tmp_path, "verdict", str(root))
    assert held.returncode == 7 and "step 1000 of 1500" in held.stdout, held.stdout
    ledger = root / "amendments.jsonl"
    ledger.write_bytes(ledger.read_bytes().replace(b"more steps", b"more stepz"))
    return root


def said(out: str) -> str:
    """Every line but the train lines (their losses may share digits with the read)."""
    return "\n".join(x for x in out.splitlines() if not x.startswith("step "))


@pytest.mark.parametrize(
    "command",
    [("replay", "--plain"), ("attach", "--plain", "--until-end", "--quiet-end", "1")],
)
def test_a_broken_ledger_keeps_the_plain_reports_blinded(tmp_path, command):
    root = extended(tmp_path)
    out = cli(tmp_path, command[0], str(root), *command[1:])
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr
    assert "probe step 1000: values hidden (blinded)" in out.stdout
    assert "the amendment ledger does not hold" in out.stdout
    text = said(out.stdout) + out.stderr
    assert not any(s in text for s in FINAL), text
    assert LEDGER_BREAK in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_broken_ledger_keeps_babysit_blinded_and_names_the_break(tmp_path):
    root = extended(tmp_path)
    out = cli(tmp_path, "babysit", str(root), "--once", XDG_STATE_HOME=str(tmp_path / "state"))
    assert LEDGER_BREAK in out.stdout, out.stdout + out.stderr
    assert not any(s in out.stdout + out.stderr for s in FINAL)
    poll = json.loads((root / "babysit.jsonl").read_text().splitlines()[-1])
    assert poll["verdict"] == "BLINDED" and "ledger does not hold" in poll["headline"], poll
    assert any(w["rule"] == "ledger" and LEDGER_BREAK in w["message"] for w in poll["warnings"])
    assert not any(s in json.dumps(poll) for s in FINAL)


def crashed(tmp_path: Path) -> Path:
    """A blinded run whose log ends (crashed) at step 750 of its 1000."""
    root = run_folder(tmp_path, 750)
    end = {"kind": "event", "step": 750, "time": T0 + 400, "event": "end", "detail": "crashed"}
    write_log(root / "train_log.jsonl", [*records_upto(750), end])
    return root


# the probes' levels up to step 750 (tests/logs.py's RIGONLY_LIKE) and the read's classes
PROBES = ("3.4623", "3.6862", "3.1", "3.25", "3.5", "3.3")


def test_a_run_ended_before_its_endpoint_stays_hidden_on_every_surface(tmp_path):
    root = crashed(tmp_path)
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "FONTAINE_BANK": str(tmp_path / "bank")}

    card = cli(tmp_path, "verdict", str(root), **env)
    assert card.returncode == 7, card.stdout + card.stderr
    assert "the run ended at step 750, before its endpoint (step 1000)" in card.stdout
    assert "UNDECIDABLE" not in card.stdout and not any(s in card.stdout for s in SECRETS)
    doc = json.loads(cli(tmp_path, "verdict", str(root), "-j", **env).stdout)
    assert doc["blinded"] is True and doc["provisional"] is False and doc["withheld"]
    check(doc, "blinded-1")  # docs/schemas/blinded-1.schema.json

    got = cli(tmp_path, "get", str(root), "-m", "eval_chunk_mae", **env)
    assert got.returncode == 7 and got.stdout == "", got.stdout
    assert "the run ended at step 750" in got.stderr

    replay = cli(tmp_path, "replay", str(root), "--plain", **env)
    assert replay.returncode == 7, replay.stderr
    assert "verdict: BLINDED (the run ended at step 750" in replay.stdout

    attach = cli(tmp_path, "attach", str(root), "--plain", "--quiet-end", "1", **env)
    assert attach.returncode == 7, attach.stderr
    rows = [json.loads(x) for x in cli(tmp_path, "runs", "-j", **env).stdout.splitlines() if x]
    [row] = [r for r in rows if r.get("run_dir") == str(root)]
    assert row["probe_value"] is None and row["reading"] is None, row
    assert "BLINDED" in row["read"], row

    bank = cli(tmp_path, "bank", "add", str(root), "--as", "x", "--even-if-conflicting", **env)
    assert bank.returncode == 2 and "nothing was banked" in bank.stderr, bank.stderr
    shown = cli(tmp_path, "bank", "show", "x", "-j", **env)
    assert shown.returncode == 2 and not any(f"{p}" in shown.stdout for p in PROBES)

    # a recorded look unblinds it, as before the endpoint: then bank add keeps it
    look = cli(tmp_path, "verdict", str(root), "--unblind", "the run crashed", **env)
    assert look.returncode == 6 and "UNDECIDABLE" in look.stdout, look.stdout + look.stderr
    banked = cli(tmp_path, "bank", "add", str(root), "--as", "x", "--even-if-conflicting", **env)
    assert banked.returncode == 0, banked.stderr


def test_a_run_resumed_to_its_endpoint_shows_its_final_read(tmp_path):
    root = crashed(tmp_path)
    start = {"kind": "event", "step": 750, "time": T0 + 500, "event": "start", "detail": "resume"}
    later = [dict(r, time=r["time"] + 500) for r in records_upto(1000) if r["step"] > 750]
    with (root / "train_log.jsonl").open("a") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in [start, *later]))
    final = cli(tmp_path, "verdict", str(root))
    assert final.returncode == 4 and "+0.6929" in final.stdout, final.stdout + final.stderr


def test_a_folder_without_its_prereg_and_a_broken_trail_refuses_before_the_read(tmp_path):
    root = run_folder(tmp_path, 750)
    (root / "prereg.json").unlink()  # the trail's head (kept from launch) no longer follows
    preset = tmp_path / "preset.toml"  # a preset that does not blind
    preset.write_text((ROOT / "presets" / "demosonly_1gpu.toml").read_text())
    for extra in ((), ("-j",)):
        out = cli(tmp_path, "verdict", str(root), "-p", str(preset), *extra)
        assert out.returncode == 2 and out.stdout == "", out.stdout
        [line] = out.stderr.strip().splitlines()
        assert "review.jsonl" in line and "prereg.json" in line and "nothing is shown" in line


def test_a_ledger_the_runs_list_cannot_read_gives_no_read(tmp_path):
    root = extended(tmp_path)
    ledger = root / "amendments.jsonl"
    ledger.unlink()
    ledger.mkdir()  # not a file: the ledger cannot be read at all
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    attach = cli(tmp_path, "attach", str(root), "--plain", "--quiet-end", "1", **env)
    assert attach.returncode == 2 and not any(s in said(attach.stdout) for s in FINAL)
    rows = [json.loads(x) for x in cli(tmp_path, "runs", "-j", **env).stdout.splitlines() if x]
    [row] = [r for r in rows if r.get("run_dir") == str(root)]
    assert row["probe_value"] is None and row["reading"] is None, json.dumps(row)
    assert row["read"] == "" and "ledger not read" in row["note"], json.dumps(row)
