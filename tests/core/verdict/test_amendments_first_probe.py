"""A level read's scale amendment first affects the first probe the log shows.

A level read has no anchor: a scale amendment counts only if declared before the run's first
probe. That probe is the first one seen in the log, not a step computed from eval_every: a
[source] preset that states no cadence probes where its trainer does (its recipe's eval_every
is only a default, here the endpoint), and `probe_at_start` probes at step 0. `amend` says
refused, and `verdict` reads without the scale."""

from __future__ import annotations

import json

from fontaine_tui.cli import main
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.core.launch.conftest import without_amendments
from tests.logs import T0, probe, records, write_log


def _amend_and_read(folder: RunFolder, capsys) -> tuple[int, str, dict]:
    capsys.readouterr()
    code = main(["amend", str(folder.root), "--scale-factor", "1.25", "--text", "late"])
    said = capsys.readouterr().out
    assert main(["verdict", str(folder.root), "--json"]) in (0, 3, 4, 5, 6, 10, 13, 14, 15, 16)
    return code, said, json.loads(capsys.readouterr().out)


def _refused_at(code: int, said: str, doc: dict, seen: int, first: int) -> None:
    why = (
        f"declared after step {seen} was seen; a scale amendment must be declared before "
        f"step {first} (the first probe)"
    )
    assert code == 1 and f"refused: {why}" in said, said
    [check] = doc["amendments"]
    assert (check["status"], check["reason"]) == ("refused", why), check
    assert doc["scale"] is None, doc["scale"]


def test_a_source_preset_s_first_probe_is_the_first_the_log_shows(tmp_path, capsys):
    preset_path = tmp_path / "level.toml"
    preset_path.write_text("""[run]
name = "level"
output_dir = "run"

[source]
kind = "jsonl"

[verdict]
metric = "eval/loss"
read = "level"
endpoint_step = 300
healthy_max = 1.9
drift_min = 3.0
""")
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    freeze(folder, load_preset(preset_path), ["trainer"], "h", now=T0)
    lines = []
    for step in range(1, 201):  # probes every 20 steps, 10 seen before the amendment
        lines.append(json.dumps({"step": step, "train/loss": 1.0 / step}))
        if step % 20 == 0:
            lines.append(json.dumps({"step": step, "eval/loss": 2.0}))
    (folder.root / "log.jsonl").write_text("\n".join(lines) + "\n")
    code, said, doc = _amend_and_read(folder, capsys)
    _refused_at(code, said, doc, 200, 20)
    assert (doc["verdict"], doc["provisional"]) == ("AMBIGUOUS", True)  # the raw rule alone


def test_probe_at_start_s_first_probe_is_step_0(tmp_path, capsys):
    path = without_amendments(tmp_path)
    text = path.read_text()
    text = text.replace("[recipe]\n", "[recipe]\nprobe_at_start = true\n", 1)
    text = text.replace("[verdict]\n", '[verdict]\nread = "level"\n', 1)
    path.write_text(text)
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    freeze(folder, load_preset(path), ["engine"], "h", now=T0)
    recs = [r for r in records(probes={250: (3.4, 3.6)}) if r["step"] <= 100]
    recs.insert(2, probe(0, T0, 3.5, 3.7))  # the probe at step 0, before any update
    write_log(folder.log, recs)
    code, said, doc = _amend_and_read(folder, capsys)
    _refused_at(code, said, doc, 100, 0)


def test_declared_before_the_first_probe_it_applies(tmp_path, capsys):
    """The same [source] run, amended before its first probe: the scale is in force."""
    preset_path = tmp_path / "level.toml"
    preset_path.write_text("""[run]
name = "level"
output_dir = "run"

[source]
kind = "jsonl"

[verdict]
metric = "eval/loss"
read = "level"
endpoint_step = 300
healthy_max = 1.9
drift_min = 3.0
""")
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    freeze(folder, load_preset(preset_path), ["trainer"], "h", now=T0)
    log = folder.root / "log.jsonl"
    log.write_text("".join(json.dumps({"step": s, "train/loss": 1.0}) + "\n" for s in (1, 2)))
    capsys.readouterr()
    assert main(["amend", str(folder.root), "--scale-factor", "1.25"]) == 0
    assert "applied: declared after step 2 was seen, before step" in capsys.readouterr().out
    with log.open("a") as f:
        f.write(json.dumps({"step": 20, "eval/loss": 2.0}) + "\n")
    main(["verdict", str(folder.root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    [check] = doc["amendments"]
    assert check["status"] == "applied", check
    assert check["reason"] == "declared after step 2 was seen, before step 20"
    assert doc["scale"]["value"] == 1.25
