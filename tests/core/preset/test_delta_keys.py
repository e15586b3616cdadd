"""`[verdict] delta_keys`: a key added after the first presets, checked, and hashed only when set;
a declared delta in the ledger changes no read and leaves a scale amendment in force."""

from __future__ import annotations

import math

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.record import Amendment
from fontaine_tui.core.preset.validate import preset_from_canonical
from fontaine_tui.core.verdict.amendments import check_amendments
from tests.core.launch.conftest import PRESETS


def _with(tmp_path, line: str):
    text = (PRESETS / "smoke.toml").read_text()
    text = text.replace('reference = "demosonly"', f'reference = "demosonly"\n{line}')
    path = tmp_path / "keys.toml"
    path.write_text(text)
    return path


def test_a_preset_without_delta_keys_keeps_its_hash_and_a_typed_in_reference_is_refused(tmp_path):
    plain = load_preset(str(PRESETS / "smoke.toml"))
    assert "delta_keys" not in plain.canonical["verdict"]
    assert plain.verdict.delta_keys is None
    path = _with(tmp_path, "delta_keys = []")  # typed in comparators: no banked one to hold to
    with pytest.raises(
        InputError, match=r"delta_keys: the reference comparator 'demosonly' is typed in"
    ):
        load_preset(str(path))


@pytest.mark.parametrize(
    "line, why",
    [
        ('delta_keys = "platform.nproc"', "expected an array of keys"),
        ('delta_keys = ["recipe.lrr"]', "'recipe.lrr' is not a compared key"),
        ('delta_keys = ["platform.num_workers"]', "never compared: platform.num_workers"),
    ],
)
def test_bad_delta_keys_are_one_line(tmp_path, line, why):
    with pytest.raises(InputError, match=why):
        load_preset(str(_with(tmp_path, line)))


def test_a_declared_delta_changes_no_read(tmp_path):
    preset = load_preset(str(PRESETS / "smoke.toml"))
    delta = Amendment(2, "delta", 0, "base@ab", math.nan, 0, 1, "", delta=("recipe.lr", "1", "2"))
    checks = check_amendments([delta, *preset.amendments], preset)
    assert [c.status for c in checks] == ["declared", "applied"]  # the scale still applies
    assert checks[0].reason == "recipe.lr: ours 1, theirs 2 (base@ab), declared at launch"
    again = preset_from_canonical(preset.canonical, "x")
    assert again.sha256 == preset.sha256


def test_a_differing_value_is_shown_with_its_credential_masked():
    from fontaine_tui.core.preset.delta import differences

    theirs = {"recipe": {"init": ""}, "platform": {}}
    found = dict(
        (key, (ours, them))
        for key, ours, them in differences(
            {"init": "https://me:pw@hub.example.org/ckpt"}, {}, theirs
        )
    )
    assert found["recipe.init"] == ('"https://me:***@hub.example.org/ckpt"', '""')
