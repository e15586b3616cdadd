"""A blinded run of another trainer whose rule metric is not a number at the latest probe.

A run folder frozen from a blind preset that reads another trainer's JSON lines (`eval/mae`,
anchor 40, endpoint 80), cut at step 60, whose probe at 60 logged `eval/mae` as `true` (kept as
what it is) or as NaN. A read there is UNDECIDABLE: before the endpoint, a notice naming the
step and the value, or a count of NaN or non-number values per probe field, names the class of
the hidden read. Read by `verdict`, `inspect`, `replay --plain` and `attach --plain` in real
subprocesses: while the read is hidden they count the values that are not numbers and name no
key, step or value, as the conflicting probes are counted; without the blind they name them."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.core.verdict.record import EXIT_CODES, PROVISIONAL_OFFSET
from tests.commands.test_blind import cli
from tests.commands.test_json_schemas import check
from tests.core.log.formats.conftest import EVAL, foreign_preset, loss

TOLD = "eval/mae at step 60: true (a boolean)"  # the notice's words without the blind
HIDDEN_COUNT = "1 eval value(s) not a number: keys, steps and values hidden (blinded)"
UNDECIDABLE_NOW = EXIT_CODES["UNDECIDABLE"] + PROVISIONAL_OFFSET  # the read at 60, not blinded


def blind_foreign_run(tmp_path: Path, at_60: object = True, blind: bool = True) -> Path:
    """A run folder frozen from a blind preset reading log.jsonl, its probe at 60 `at_60`."""
    preset = foreign_preset(tmp_path, 'kind = "jsonl"', metric="eval/mae")
    if blind:
        preset.write_text(preset.read_text().replace("[verdict]\n", "[verdict]\nblind = true\n"))
    root = tmp_path / "run"
    root.mkdir()
    freeze(RunFolder(root), load_preset(str(preset)), ["fontaine-tui", "launch"], "test-host")
    lines = []
    for step in range(1, 61):
        lines.append(json.dumps({"step": step, "loss": loss(step)}))
        if step in EVAL:
            value = at_60 if step == 60 else EVAL[step]
            lines.append(json.dumps({"step": step, "eval/mae": value, "eval/other": 1.5}))
    (root / "log.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _leaks(text: str) -> list[str]:
    """What of the hidden read's class the text says: the value, its step, UNDECIDABLE."""
    said = [w for w in ("true (a boolean)", "at step 60", "UNDECIDABLE") if w in text]
    return said + re.findall(r"eval/mae\s+eval\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+", text)


def test_verdict_counts_a_value_not_a_number_naming_no_step_while_hidden(tmp_path):
    root = blind_foreign_run(tmp_path)
    card = cli(tmp_path, "verdict", str(root))
    assert card.returncode == 7, card.stdout + card.stderr
    assert f"note: {HIDDEN_COUNT} until the endpoint" in card.stdout, card.stdout
    assert not _leaks(card.stdout + card.stderr), card.stdout
    doc = cli(tmp_path, "verdict", str(root), "-j")
    assert doc.returncode == 7 and not _leaks(doc.stdout), doc.stdout
    assert not (root / "review.jsonl").exists()  # nothing recorded


def test_verdict_names_it_without_the_blind(tmp_path):
    root = blind_foreign_run(tmp_path, blind=False)
    card = cli(tmp_path, "verdict", str(root))
    assert card.returncode == UNDECIDABLE_NOW, card.stdout + card.stderr
    assert TOLD in card.stdout and "a rule reading one is UNDECIDABLE there" in card.stdout
    notices = json.loads(cli(tmp_path, "verdict", str(root), "-j").stdout)["log"]["notices"]
    assert any(TOLD in n for n in notices), notices


def test_inspect_counts_it_naming_no_step_while_hidden(tmp_path):
    root = blind_foreign_run(tmp_path)
    shown = cli(tmp_path, "inspect", str(root))
    assert shown.returncode == 0, shown.stderr
    assert f"unread   {HIDDEN_COUNT} until the endpoint" in shown.stdout, shown.stdout
    assert "true (a boolean)" not in shown.stdout and "UNDECIDABLE" not in shown.stdout
    notices = json.loads(cli(tmp_path, "inspect", str(root), "-j").stdout)["notices"]
    assert notices == [f"{HIDDEN_COUNT} until the endpoint"], notices
    opened = tmp_path / "open"
    opened.mkdir()
    told = json.loads(
        cli(opened, "inspect", str(blind_foreign_run(opened, blind=False)), "-j").stdout
    )
    assert any(TOLD in n for n in told["notices"]), told["notices"]


@pytest.mark.parametrize("at_60", [True, math.nan], ids=["boolean", "nan"])
def test_inspect_says_no_probe_field_s_nan_or_non_number_count_while_hidden(tmp_path, at_60):
    root = blind_foreign_run(tmp_path, at_60)
    shown = cli(tmp_path, "inspect", str(root))
    assert shown.returncode == 0, shown.stderr
    assert not _leaks(shown.stdout + shown.stderr), shown.stdout
    rows = {line.split()[0]: line for line in shown.stdout.splitlines() if line.startswith("eval/")}
    assert "hidden (blinded)" in rows["eval/mae"] and "hidden (blinded)" in rows["eval/other"]
    assert re.search(r"loss\s+loss\s+1\s+60\s+60\s+0\s+0", shown.stdout)  # health stays
    if at_60 is True:
        assert f"{HIDDEN_COUNT} until the endpoint" in shown.stdout
    doc = json.loads(cli(tmp_path, "inspect", str(root), "-j").stdout)
    keys = {k["key"]: k for k in doc["keys"]}
    for key in ("eval/mae", "eval/other"):
        assert [keys[key][f] for f in ("first", "last", "count", "nan", "not_number")] == [None] * 5
    assert keys["loss"]["count"] == 60 and doc["probes"]["last"] == 60
    assert not _leaks(json.dumps(doc)), doc["notices"]
    check(doc, "inspect-1")  # a hidden field's nulls are the schema's


@pytest.mark.parametrize("at_60", [True, math.nan], ids=["boolean", "nan"])
def test_inspect_counts_each_field_without_the_blind(tmp_path, at_60):
    root = blind_foreign_run(tmp_path, at_60, blind=False)
    doc = json.loads(cli(tmp_path, "inspect", str(root), "-j").stdout)
    mae = next(k for k in doc["keys"] if k["key"] == "eval/mae")
    nan, odd = (0, 1) if at_60 is True else (1, 0)
    assert (mae["count"], mae["nan"], mae["not_number"]) == (6, nan, odd), mae
    assert (at_60 is not True) or any(TOLD in n for n in doc["notices"]), doc["notices"]


@pytest.mark.parametrize("command", ["replay", "attach"])
def test_plain_paths_count_it_naming_no_step_while_hidden(tmp_path, command):
    root = blind_foreign_run(tmp_path)
    extra = ["--quiet-end", "1"] if command == "attach" else []
    out = cli(tmp_path, command, str(root), "--plain", *extra)
    assert out.returncode == 7, out.stdout + out.stderr
    assert "probe step 60: values hidden (blinded)" in out.stdout
    assert f"-- {HIDDEN_COUNT} until the endpoint" in out.stdout, out.stdout
    assert not _leaks(out.stdout + out.stderr), out.stdout


@pytest.mark.parametrize("command", ["replay", "attach"])
def test_plain_paths_name_it_without_the_blind(tmp_path, command):
    root = blind_foreign_run(tmp_path, blind=False)
    extra = ["--quiet-end", "1"] if command == "attach" else []
    out = cli(tmp_path, command, str(root), "--plain", *extra)
    assert out.returncode == UNDECIDABLE_NOW, out.stdout + out.stderr
    assert TOLD in out.stdout, out.stdout
