"""The left-envelope warning: the latest probe's read outside the envelope of a group of
banked comparators at the same step."""

from __future__ import annotations

from fontaine_tui.cli import main
from fontaine_tui.core.log.read import load_lines
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.watch import alert_book, alerts
from tests.core.launch.conftest import without_amendments
from tests.logs import dumps, records, records_upto, write_log


def preset_with_group(tmp_path):
    for name, probes in (
        ("a", {250: (3.4, 3.6), 500: (3.1, 3.2), 750: (3.5, 3.3), 1000: (3.8, 3.4)}),
        ("b", {250: (3.4, 3.6), 500: (3.0, 3.2), 1000: (4.0, 3.4)}),
    ):
        write_log(tmp_path / name / "train_log.jsonl", records(probes=probes))
        assert main(["bank", "add", str(tmp_path / name), "--as", f"run_{name}"]) == 0
    path = without_amendments(tmp_path)
    path.write_text(
        path.read_text().replace(
            "[gates]",
            '[comparators.run_a]\nbank = "run_a"\n'
            'group = "drifting"\n\n[comparators.run_b]\n'
            'bank = "run_b"\ngroup = "drifting"\n\n[gates]',
        )
    )
    return load_preset(path)


def warnings_at(preset, delta_750: float) -> list[alerts.RunWarning]:
    probes = {250: (3.4, 3.6), 500: (3.1, 3.2), 750: (3.1 + delta_750, 3.3)}
    store = load_lines([b"".join(dumps(r).encode() + b"\n" for r in records_upto(760, probes))])
    ctx = alert_book.context_for(store, preset)
    return [
        w
        for w in alerts.run_rules(store, None, preset.gates, 0.0, None, ctx)
        if w.rule == "left-envelope"
    ]


def test_leaving_the_envelope_warns_and_inside_it_does_not(tmp_path):
    preset = preset_with_group(tmp_path)
    # at 750 the envelope is [+0.40, +0.50]: run_a measured +0.40, run_b interpolated +0.50
    [w] = warnings_at(preset, 0.2)
    assert w.severity == "warn"
    assert w.message == (
        "the run left the drifting envelope (2 runs) at step 750: delta "
        "+0.2000 is below [+0.4000, +0.5000]"
    )
    assert warnings_at(preset, 0.45) == []
    [above] = warnings_at(preset, 0.7)
    assert "is above [+0.4000, +0.5000]" in above.message
    # without banked groups there is nothing to leave
    plain = load_preset(without_amendments(tmp_path))
    store = load_lines([b"".join(dumps(r).encode() + b"\n" for r in records_upto(760))])
    ctx = alert_book.context_for(store, plain)
    assert not [
        w
        for w in alerts.run_rules(store, None, plain.gates, 0.0, None, ctx)
        if w.rule == "left-envelope"
    ]
