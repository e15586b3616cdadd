"""Rule shapes beyond the reference one: any numeric field or dotted path as the metric,
higher-is-better, a level read, absolute bounds; each read on fixture logs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.read import load_lines
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.verdict.rules import compute_verdict
from fontaine_tui.core.verdict.text import render
from tests.logs import RIGONLY_LIKE, T0, dumps, probe, records, write_log

DATA = Path(__file__).parents[2] / "data" / "presets"
SHIPPED = {  # the canonical hash a prereg.json froze: a new preset key must not move it
    # (demosonly_1gpu moved once, on purpose: recipe.init and recipe.datasets set to the
    # document's "same init" and demos-only data)
    "demosonly_1gpu": "cdddd9927f7f6be9a1633526e4b0ab40d2d1b070f91c2051bb1d03630b3e62aa",
    "smoke": "7b90f466640b18c5fa3cd577f4145e0bd1480b56817ebadef41291ab6b935aaf",
}


def success_log(rates: dict[int, float | None]) -> list[dict]:
    recs = [r for r in records() if r["kind"] != "eval"]
    for step, rate in rates.items():
        p = probe(step, 1000.0 + step, 3.0, 3.0)
        if rate is not None:
            p["success_rate"] = rate
        recs.append(p)
    return recs


def read(preset, recs, at=None):
    store = load_lines([b"".join(dumps(r).encode() + b"\n" for r in recs)])
    return compute_verdict(store, preset, at)


@pytest.mark.parametrize(
    "rate, label",
    [
        (0.85, "HEALTHY"),
        (0.80, "HEALTHY"),
        (0.62, "AMBIGUOUS"),
        (0.50, "SAME-DRIFT"),
        (0.10, "SAME-DRIFT"),
    ],
)
def test_higher_is_better_level_read_with_absolute_bounds(rate, label):
    preset = load_preset(DATA / "success_level.toml")
    v = read(preset, success_log({250: 0.2, 500: 0.5, 750: 0.7, 1000: rate}))
    assert (v.verdict, v.provisional, v.read_step, v.delta) == (label, False, 1000, rate)
    doc = v.to_json()
    assert doc["level"] == rate and doc["delta"] is None
    assert (doc["read"], doc["direction"]) == ("level", "higher")
    assert doc["rules"]["raw"] == {
        "healthy_min": 0.8,
        "drift_max": 0.5,
        "level": rate,
        "label": label,
    }
    words = {"HEALTHY": "PASS", "SAME-DRIFT": "FAIL", "AMBIGUOUS": "BORDERLINE"}[label]
    assert (doc["verdict"], doc["label"]) == (label, words)  # the class stays the contract
    assert v.exit_code == {"HEALTHY": 0, "SAME-DRIFT": 3, "AMBIGUOUS": 4}[label]
    text = render(v)
    assert "healthy if >=" in text and "drift if <=" in text and "the level read" in text
    assert f"VERDICT: {words}  [final]" in text
    assert (
        v.interpretation
        == {
            "PASS": "The policy meets the bar: ship the checkpoint.",
            "FAIL": "The policy fails the bar: the recipe change did not help.",
            "BORDERLINE": "",
        }[words]
    )


def test_a_level_read_before_the_endpoint_is_provisional():
    preset = load_preset(DATA / "success_level.toml")
    going = [
        r
        for r in success_log({250: 0.2, 500: 0.5, 750: 0.9})
        if r["step"] <= 760 and r.get("event") != "end"
    ]  # the run is still going
    v = read(preset, going)
    assert (v.verdict, v.provisional, v.read_step) == ("HEALTHY", True, 750)
    assert v.exit_code == 10
    ended = read(preset, success_log({250: 0.2, 500: 0.5, 750: 0.9}))
    assert (ended.verdict, ended.provisional) == ("UNDECIDABLE", False)


def test_a_metric_the_log_never_has_is_undecidable_naming_the_field(demosonly, tmp_path):
    """`metric = "success_rate"` on a log without it: UNDECIDABLE, never an AttributeError."""
    preset = load_preset(DATA / "success_level.toml")
    v = read(preset, records(probes=RIGONLY_LIKE))
    assert v.verdict == "UNDECIDABLE"
    assert v.reason == (
        "success_rate at step 1000 is absent (no such field in the record), not a finite number"
    )
    text = (DATA / "rig_delta.toml").read_text().replace('"breakdown.rig"', '"success_rate"')
    (tmp_path / "p.toml").write_text(text)
    v = read(load_preset(tmp_path / "p.toml"), records(probes=RIGONLY_LIKE))
    assert v.verdict == "UNDECIDABLE" and "success_rate at step 500 is absent" in v.reason


def test_a_dotted_path_reads_a_nested_field():
    preset = load_preset(DATA / "rig_delta.toml")
    v = read(preset, records(probes=RIGONLY_LIKE))
    expected = (RIGONLY_LIKE[1000][0] - RIGONLY_LIKE[500][0]) * 1.1  # tests.logs: rig = 1.1 x
    assert v.metric == "breakdown.rig" and v.verdict == "SAME-DRIFT"
    assert v.delta == pytest.approx(expected) and v.to_json()["delta"] == pytest.approx(expected)
    assert (v.to_json()["read"], v.to_json()["direction"]) == ("delta", "lower")
    recs = records(probes=RIGONLY_LIKE)
    for r in recs:
        if r["kind"] == "eval" and r["step"] == 1000:
            r["breakdown"]["rig"] = True
    v = read(preset, recs)
    assert v.verdict == "UNDECIDABLE"
    assert v.reason == "breakdown.rig at step 1000 is true (a boolean), not a finite number"


def test_verdict_cli_reads_the_new_shapes(tmp_path, capsys):
    log = write_log(
        tmp_path / "run" / "train_log.jsonl", success_log({250: 0.2, 500: 0.5, 750: 0.7, 1000: 0.3})
    )
    code = main(["verdict", str(log), "--preset", str(DATA / "success_level.toml"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 3 and doc["verdict"] == "SAME-DRIFT" and doc["level"] == 0.3
    main(["verdict", str(log), "--preset", str(DATA / "success_level.toml")])
    assert "VERDICT: FAIL  [final]" in capsys.readouterr().out


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            ('direction = "higher"', 'direction = "sideways"'),
            "verdict.direction: expected one of lower, higher, got 'sideways'",
        ),
        (
            ('read = "level"', 'read = "mean"'),
            "verdict.read: expected one of delta, level, got 'mean'",
        ),
        (
            ("drift_max = 0.50", "drift_min = 0.50"),
            "verdict.drift_min: not a bound when higher is better (expected healthy_min and drift_max)",
        ),
        (
            ("drift_max = 0.50", ""),
            "verdict.drift_max: missing; expected a number (with higher "
            "better, the bounds are healthy_min and drift_max)",
        ),
        (
            ("drift_max = 0.50", "drift_max = 0.90"),
            "verdict.healthy_min: expected a healthy bound above drift_max 0.9, got 0.8",
        ),
        (
            ('metric = "success_rate"', 'metric = "success rate!"'),
            "verdict.metric: expected a field of the eval record or a dotted path into it (like "
            "eval_chunk_mae or breakdown.rig), or a source's key (like eval/chunk_mae), got "
            "'success rate!'",
        ),
        (
            ('read = "level"', 'read = "delta"'),
            "verdict.anchor_step: expected an integer >= 1, got 0",
        ),
        (
            ("drift_max = 0.50", "drift_max = 0.50\ndrift_fraction = 0.5"),
            "verdict.reference: missing; drift_fraction is a fraction of a comparator's delta",
        ),
        (
            ('AMBIGUOUS = "BORDERLINE"', 'AMBIGUOUS = "PASS"'),
            "labels: expected each label once, got 'PASS' twice",
        ),
        (
            ('AMBIGUOUS = "BORDERLINE"', 'MAYBE = "BORDERLINE"'),
            "labels.MAYBE: unknown class (expected one of: HEALTHY, SAME-DRIFT, AMBIGUOUS,",
        ),
        (
            ('PASS = "The policy', 'GOOD = "The policy'),
            "interpretation.GOOD: unknown key (expected one of: PASS, FAIL, BORDERLINE,",
        ),
        (
            ('PASS = "The policy', 'HEALTHY = "Named twice."\nPASS = "The policy'),
            "interpretation.PASS: expected each class once, got HEALTHY under both its name "
            "and its label",
        ),
    ],
)
def test_a_bad_rule_shape_is_one_line_naming_the_key(tmp_path, edit, message):
    text = (DATA / "success_level.toml").read_text()
    assert edit[0] in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(edit[0], edit[1]))
    with pytest.raises(InputError) as err:
        load_preset(path)
    assert str(err.value).startswith(f"{path}: {message}")
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(path), "--preset", str(path)],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_new_keys_leave_the_shipped_presets_hash_as_frozen(name):
    assert load_preset(name).sha256 == SHIPPED[name]


LONG = {**RIGONLY_LIKE, 1250: (3.9000, 3.4500), 1500: (4.0000, 3.5000)}


def test_scale_then_extend_then_a_late_extend_refused():
    preset = load_preset(DATA / "scale_then_extend.toml")
    recs = records(probes=LONG, steps=1500)
    at_1000 = read(preset, recs, 1000)
    assert [(c.id, c.kind, c.status) for c in at_1000.amendments] == [
        (1, "scale", "applied"),
        (2, "extend", "applied"),
        (3, "extend", "refused"),
    ]
    late = at_1000.amendments[2]
    assert late.first_affected_step == 1500
    assert late.reason == (
        "declared after step 1500 was seen; an extend must be declared "
        "before step 1500 (the endpoint in force)"
    )
    assert "the endpoint moves from 1000 to 1500" in at_1000.amendments[1].reason
    # the old endpoint's read is no longer final
    assert (at_1000.endpoint_step, at_1000.provisional) == (1500, True)
    assert (at_1000.verdict, round(at_1000.delta, 4)) == ("AMBIGUOUS", 0.6929)  # as before
    final = read(preset, recs)
    assert (final.read_step, final.provisional, final.endpoint_step) == (1500, False, 1500)
    assert final.delta == pytest.approx(4.0 - 3.1)
    assert final.scaled is not None and final.scale is not None


def test_the_amend_timeline_scale_then_extend_then_too_late(tmp_path, capsys):
    from fontaine_tui.core.runfolder import RunFolder
    from fontaine_tui.core.verdict.prereg import freeze
    from tests.core.launch.conftest import without_amendments

    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    freeze(folder, load_preset(without_amendments(tmp_path)), ["engine"], "h", now=1.8e9)
    recs = records(probes=LONG, steps=1500)

    def log_upto(step: int) -> None:
        # the log's own clock starts now: each record is logged after the declarations before it
        now = time.time()
        write_log(
            folder.log,
            [
                {**r, "time": r["time"] - T0 + now}
                for r in recs
                if r["step"] <= step and r.get("event") != "end"
            ],
        )

    log_upto(260)  # the step-250 probe is in
    assert main(["amend", str(folder.root), "--scale-from-step", "250"]) == 0
    log_upto(800)
    assert main(["amend", str(folder.root), "--extend-to", "1500"]) == 0
    log_upto(1500)
    assert main(["amend", str(folder.root), "--extend-to", "2000"]) == 1
    out = capsys.readouterr().out
    assert (
        "refused: declared after step 1500 was seen; an extend must be declared before "
        "step 1500 (the endpoint in force)" in out
    )
    code = main(["verdict", str(folder.root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert [(a["kind"], a["status"]) for a in doc["amendments"]] == [
        ("scale", "applied"),
        ("extend", "applied"),
        ("extend", "refused"),
    ]
    assert (doc["read_step"], doc["endpoint_step"], doc["provisional"]) == (1500, 1500, False)
    assert (code, doc["verdict"]) == (4, "AMBIGUOUS")


def test_a_per_dataset_secondary_rule_corroborates_the_primary(tmp_path):
    preset = load_preset(DATA / "rig_secondary.toml")
    recs = records(probes=RIGONLY_LIKE)
    v = read(preset, recs)
    assert (v.verdict, round(v.delta, 4)) == ("AMBIGUOUS", 0.6929)  # the primary decides
    [rig] = v.secondary
    assert (rig.name, rig.label) == ("rig", "SAME-DRIFT")
    assert rig.rule is not None and rig.rule.value == pytest.approx(0.6929 * 1.1)
    doc = v.to_json()
    assert doc["combine"] == "primary" and doc["rules"]["secondary"][0]["label"] == "SAME-DRIFT"
    assert doc["datasets"] == pytest.approx({"demos": 0.6929 * 0.9, "rig": 0.6929 * 1.1})
    assert "secondary rule rig" in render(v)
    # combine = "all": the rules must agree, and here they do not
    path = tmp_path / "all.toml"
    path.write_text(
        (DATA / "rig_secondary.toml")
        .read_text()
        .replace("drift_min = 1.0158\n", 'drift_min = 1.0158\ncombine = "all"\n')
    )
    v = read(load_preset(path), recs)
    assert (v.verdict, v.primary_label) == ("AMBIGUOUS", "AMBIGUOUS")
    assert v.reason.startswith("the rules disagree (primary AMBIGUOUS, rig SAME-DRIFT)")
    # and where they agree, the label stands
    path.write_text(path.read_text().replace("drift_min = 0.60", "drift_min = 0.90"))
    v = read(load_preset(path), recs)
    assert v.verdict == "AMBIGUOUS" and v.reason.endswith("all 2 rules agree")


def test_every_dataset_delta_is_in_verdict_json_without_a_secondary_rule(demosonly):
    v = read(demosonly, records(probes=RIGONLY_LIKE))
    assert v.to_json()["rules"]["secondary"] == []
    assert set(v.to_json()["datasets"]) == {"demos", "rig"}


def test_a_read_against_typed_in_comparators_only_says_so(demosonly):
    """The shipped reference preset's comparators are numbers from the document (8xA100,
    another model): its interpretation is printed with the caveat that nothing here
    measured them."""
    text = render(read(demosonly, records(probes=RIGONLY_LIKE)))
    interpretation, caveat = text.split("\n")[-2:]
    assert interpretation.startswith("interpretation: ")
    assert caveat.startswith(
        "caveat: every comparator is a number typed into the preset, none a run banked on this host"
    )


def test_scaled_mode_keeps_the_comparators_in_their_own_units(demosonly):
    from fontaine_tui.core.charts.probes import probes_chart
    from fontaine_tui.core.log.read import load_lines
    from fontaine_tui.core.run.evidence import seen_reads
    from fontaine_tui.core.verdict.rules import verdict_series

    store = load_lines(
        [
            b"".join(
                dumps(r).encode() + b"\n"
                for r in records(
                    probes={
                        250: (12.5087, 12.4202),
                        500: (12.0, 12.1),
                        750: (12.6, 12.2),
                        1000: (13.2, 12.3),
                    }
                )
            )
        ]
    )
    series = seen_reads(store, verdict_series(store, demosonly), hidden=False)
    latest = compute_verdict(store, demosonly)
    assert latest.scale is not None and latest.scale.value == pytest.approx(12.5087 / 3.4623)
    spec = probes_chart(series, demosonly, latest, scaled=True)
    marks = {m.label: m.y for m in spec.marks}
    assert marks["demosonly +2.0317, raw units @ endpoint"] == 2.0317  # not x 3.613
    assert [h.y for h in spec.hlines] == pytest.approx(
        [0.30 * latest.scale.value, 1.0158 * latest.scale.value]
    )
    raw = probes_chart(series, demosonly, latest, scaled=False)
    assert "demosonly +2.0317 @ endpoint" in {m.label for m in raw.marks}
