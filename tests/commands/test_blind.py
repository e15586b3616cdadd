"""Blinded monitoring from the command line: `[verdict] blind = true` and `--blind`.

A run folder frozen from a blind preset (demosonly_1gpu with `blind = true`) is read by
`fontaine-tui verdict`, `replay --plain` and `attach --plain` in real subprocesses: before the
endpoint no rule value, delta or label reaches the output; `--unblind WHY` shows it and
review.jsonl records who and why, which every later card shows; the final read is shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict import review
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.core.verdict.record import EXIT_CODES, PROVISIONAL_OFFSET
from tests.logs import records_upto, write_log

ROOT = Path(__file__).resolve().parents[2]
# what the rule reads at 750 (RIGONLY_LIKE, anchor 500): levels, delta, class; none may show
SECRETS = ("3.4623", "3.5000", "3.1000", "0.4000", "AMBIGUOUS", "HEALTHY", "DRIFT")


def blind_preset(folder: Path, blind: bool = True) -> Path:
    text = (ROOT / "presets" / "demosonly_1gpu.toml").read_text()
    if blind:
        text = text.replace("[verdict]\n", "[verdict]\nblind = true\n", 1)
    path = folder / "blind.toml"
    path.write_text(text)
    return path


def run_folder(tmp_path: Path, upto: int, blind: bool = True) -> Path:
    preset = load_preset(blind_preset(tmp_path, blind))
    root = tmp_path / "run"
    root.mkdir()
    freeze(RunFolder(root), preset, ["fontaine-tui", "launch", "blind"], "test-host")
    write_log(root / "train_log.jsonl", records_upto(upto))
    return root


def cli(
    tmp_path: Path, *args: str, who: str = "alice", **more: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FONTAINE_USER": who, "XDG_CONFIG_HOME": str(tmp_path / "cfg"), **more}
    env.pop("FONTAINE_NOTIFY", None)
    if "XDG_STATE_HOME" in more:  # the registry and the fleet cache, under tmp_path
        env.pop("FONTAINE_REGISTRY", None)
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_blind_run_hides_its_read_until_unblinded_and_says_who_peeked(tmp_path):
    root = run_folder(tmp_path, 750)
    hidden = cli(tmp_path, "verdict", str(root))
    assert hidden.returncode == 7, hidden.stderr
    assert "BLINDED" in hidden.stdout and "step 750 of 1000" in hidden.stdout
    assert "--unblind WHY" in hidden.stdout
    for secret in SECRETS:
        assert secret not in hidden.stdout + hidden.stderr, secret
    doc = json.loads(cli(tmp_path, "verdict", str(root), "-j").stdout)
    assert doc["schema"] == "fontaine-tui/blinded/1" and doc["blinded"] is True
    assert not any(s in json.dumps(doc) for s in SECRETS)
    assert not (root / "review.jsonl").exists()  # hiding records nothing

    # a reason with no words is refused in one line, nothing written
    for why in (" ", "\x1b", "x" * 501):
        empty = cli(tmp_path, "verdict", str(root), "--unblind", why)
        assert empty.returncode == 2 and len(empty.stderr.strip().splitlines()) == 1
        assert "expected why" in empty.stderr and not (root / "review.jsonl").exists()

    shown = cli(tmp_path, "verdict", str(root), "--unblind", "GPU budget review")
    assert shown.returncode == EXIT_CODES["AMBIGUOUS"] + PROVISIONAL_OFFSET, shown.stderr
    assert "delta = +0.4000" in shown.stdout and "BLINDED" not in shown.stdout.split("\n")[0]
    line = json.loads((root / "review.jsonl").read_text())
    assert (line["action"], line["who"], line["note"], line["read_step"]) == (
        "unblind",
        "alice",
        "GPU budget review",
        750,
    )
    assert (line["verdict"], line["delta"]) == ("BLINDED", None)  # the look, not the read
    assert review.verify(root / "review.jsonl").ok  # anchored to prereg.json, as every line
    assert "unblinded before the endpoint: review line 1" in shown.stdout

    # the next reader is blinded again, and sees that someone looked, when and why
    again = cli(tmp_path, "verdict", str(root), who="bob")
    assert again.returncode == 7
    assert "by alice at step 750: GPU budget review" in again.stdout
    assert not any(s in again.stdout for s in SECRETS)
    unblinded = json.loads(cli(tmp_path, "verdict", str(root), "--unblind", "audit", "-j").stdout)
    assert [(u["who"], u["why"]) for u in unblinded["review"]["unblinded"]] == [
        ("alice", "GPU budget review"),
        ("alice", "audit"),
    ]

    # an amendment declared after the look says so on every card
    amended = cli(tmp_path, "amend", str(root), "--scale-factor", "1.25", "--text", "half batch")
    assert amended.returncode in (0, 1), amended.stderr
    assert not any(s in amended.stdout + amended.stderr for s in SECRETS[:4])
    card = cli(tmp_path, "verdict", str(root), "--unblind", "after the amendment").stdout
    assert "(declared after alice unblinded the read at step 750, review line 1)" in card


def test_a_broken_trail_refuses_the_unblinding(tmp_path):
    root = run_folder(tmp_path, 750)
    assert cli(tmp_path, "verdict", str(root), "--unblind", "first").returncode != 7
    (root / "review.jsonl").write_text("")  # the trail cut: its head says it held a line
    before = (root / "review.jsonl").read_bytes()
    refused = cli(tmp_path, "verdict", str(root), "--unblind", "second")
    assert refused.returncode == 2 and "nothing was written" in refused.stderr
    assert (root / "review.jsonl").read_bytes() == before
    assert "Traceback" not in refused.stderr


def test_the_final_read_is_shown_without_unblinding(tmp_path):
    root = run_folder(tmp_path, 1000)
    final = cli(tmp_path, "verdict", str(root))
    assert final.returncode == EXIT_CODES["AMBIGUOUS"], final.stdout + final.stderr
    assert "BLINDED" not in final.stdout and "+0.6929" in final.stdout


def test_a_viewer_blinds_a_run_that_is_not(tmp_path):
    root = run_folder(tmp_path, 750, blind=False)
    plain = cli(tmp_path, "verdict", str(root))
    assert plain.returncode == EXIT_CODES["AMBIGUOUS"] + PROVISIONAL_OFFSET
    asked = cli(tmp_path, "verdict", str(root), "--blind")
    assert asked.returncode == 7 and not any(s in asked.stdout for s in SECRETS)
    # the viewer's own blind is lifted without a record: it is nobody else's
    lifted = cli(tmp_path, "verdict", str(root), "--blind", "--unblind", "mine")
    assert lifted.returncode == 14 and not (root / "review.jsonl").exists()
    idle = cli(tmp_path, "verdict", str(root), "--unblind", "nothing hidden")
    assert "the read is not blinded; nothing recorded" in idle.stderr


def test_a_blind_run_is_sealed_only_with_a_recorded_look(tmp_path):
    root = run_folder(tmp_path, 750)
    bundle = tmp_path / "b.zip"
    refused = cli(tmp_path, "seal", str(root), "-o", str(bundle))
    assert refused.returncode == 2 and "the read is blinded until the endpoint" in refused.stderr
    assert not bundle.exists() and not (root / "review.jsonl").exists()
    sealed = cli(tmp_path, "seal", str(root), "-o", str(bundle), "--unblind", "archive it")
    assert sealed.returncode == 0, sealed.stderr
    assert json.loads((root / "review.jsonl").read_text())["note"] == "archive it"
    assert cli(tmp_path, "verify", str(bundle)).returncode == 0


@pytest.mark.parametrize("command", ["replay", "attach"])
def test_plain_paths_hide_probe_values_and_reads_until_the_endpoint(tmp_path, command):
    root = run_folder(tmp_path, 750)
    extra = ["--quiet-end", "1"] if command == "attach" else []
    out = cli(tmp_path, command, str(root), "--plain", *extra)
    assert out.returncode in (0, 7), out.stderr
    assert "probe step 750: values hidden (blinded)" in out.stdout
    assert "verdict: BLINDED (PROVISIONAL, step 750 of 1000" in out.stdout
    # every line but the train lines (their losses may share digits with the read by chance)
    said = "\n".join(x for x in out.stdout.splitlines() if not x.startswith("step "))
    assert not any(s in said for s in SECRETS), said
    assert "step 750/1000  loss" in out.stdout  # health stays: the train losses


def test_a_viewer_blind_replay_shows_the_final_read_only(tmp_path):
    root = run_folder(tmp_path, 1000, blind=False)
    full = cli(tmp_path, "replay", str(root), "--plain", "--blind")
    assert full.returncode == EXIT_CODES["AMBIGUOUS"], full.stderr  # the final read's code
    assert "probe step 750: values hidden (blinded)" in full.stdout
    reads = [x for x in full.stdout.splitlines() if x.startswith("verdict: ")]
    assert len(reads) == 4 and all("BLINDED" in x for x in reads[:-1])
    assert reads[-1].startswith("verdict: AMBIGUOUS (final, step 1000 of 1000, delta +0.6929)")
    assert "probe step 1000: eval_chunk_mae 3.7929" in full.stdout


TRAINER = """import json, os, sys, time
out = os.environ["FONTAINE_OUTPUT_DIR"]
with open(os.path.join(out, "metrics.jsonl"), "a") as fh:
    for s in range(1, 41):
        rec = {"step": s, "loss": 2.0 - s / 40}
        if s % 10 == 0:
            rec["eval_loss"] = 1.8 - s / 100 + (0.777 if s == 30 else 0)
        fh.write(json.dumps(rec) + "\\n")
        fh.flush()
        time.sleep(0.01)
        if s == 30:
            sys.exit(3)
"""


def test_a_launched_blind_run_that_ends_early_leaves_its_read_nowhere(tmp_path):
    """launch --plain of a [command] trainer that dies at step 30 of 40: no verdict.json, and
    `runs` and `babysit` say BLINDED where they would show the read."""
    (tmp_path / "trainer.py").write_text(TRAINER)
    (tmp_path / "blind.toml").write_text(f'''[run]
name = "blindcmd"
output_dir = "runs/blindcmd"
[command]
argv = ["{sys.executable}", "trainer.py"]
[source]
kind = "jsonl"
[verdict]
blind = true
metric = "eval_loss"
anchor_step = 20
endpoint_step = 40
healthy_max = 0.0
drift_min = 0.2
''')

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return cli(tmp_path, *args, XDG_STATE_HOME=str(tmp_path / "state"))

    out = run("launch", "blind.toml", "--plain", "--poll", "0.5")
    said = out.stdout + out.stderr
    assert out.returncode == 1, said[-2000:]
    assert "verdict.json not written: the read is blinded until the endpoint" in said
    assert not (tmp_path / "runs" / "blindcmd" / "verdict.json").exists()
    secrets = ("2.277", "0.677", "SAME-DRIFT", "HEALTHY", "AMBIGUOUS")
    assert not any(s in said for s in secrets), said[-2000:]
    rows = [json.loads(x) for x in run("runs", "-j").stdout.splitlines() if x.strip()]
    row = next(r for r in rows if r.get("name") == "blindcmd")
    assert row["read"] == "PROVISIONAL BLINDED" and row.get("probe_value") is None, row
    sitter = run("babysit", "runs/blindcmd", "--once")
    assert "verdict BLINDED" in sitter.stdout, sitter.stdout + sitter.stderr
    assert not any(s in sitter.stdout + sitter.stderr for s in secrets)


def test_a_review_trail_removed_whole_is_seen(tmp_path):
    # a blinded run's trail is kept from launch (its head, 0 lines, written with prereg.json):
    # a look, then the trail and its head removed, never reads as a run nobody looked at
    root = run_folder(tmp_path, 750)
    head = root / "review.jsonl.head"
    assert json.loads(head.read_text())["lines"] == 0 and review.verify(root / "review.jsonl").ok
    assert cli(tmp_path, "verdict", str(root), "--unblind", "GPU budget").returncode != 7
    (root / "review.jsonl").unlink()
    head.unlink()
    gone = cli(tmp_path, "verdict", str(root))
    assert gone.returncode == 2 and "BLINDED" in gone.stdout, gone.stderr
    said = gone.stderr.strip().splitlines()
    assert len(said) == 1 and "review.jsonl.head" in said[0] and "blinded" in said[0], said
    again = cli(tmp_path, "verdict", str(root), "--unblind", "again")
    assert again.returncode == 2 and "nothing was written" in again.stderr
    assert not (root / "review.jsonl").exists()  # a trail that does not hold is not extended


def test_a_trail_copied_from_another_run_shows_none_of_its_looks(tmp_path):
    # another blinded run's trail (one look, by mallory at step 750) copied into this run's
    # folder, with its head: its chain follows the other run's prereg.json, not this one's, so
    # its look is not this run's, and the refusal says the trail is another run's
    (tmp_path / "other").mkdir()
    other = run_folder(tmp_path / "other", 750)
    assert cli(tmp_path, "verdict", str(other), "--unblind", "a look", who="mallory").returncode
    root = run_folder(tmp_path, 750)
    for name in ("review.jsonl", "review.jsonl.head"):
        (root / name).write_bytes((other / name).read_bytes())
    for extra in ((), ("-j",)):
        read = cli(tmp_path, "verdict", str(root), *extra)
        assert read.returncode == 2 and "BLINDED" in read.stdout.upper(), read.stderr
        assert "mallory" not in read.stdout and "unblinded before" not in read.stdout
        said = read.stderr.strip().splitlines()
        assert len(said) == 1 and "review.jsonl line 1" in said[0], said
        assert "another run" in said[0] and "mallory" not in said[0], said
    state = review.state(root)
    assert not state.intact and state.unblinded == ()
