"""TOML nested 100,000 deep (arrays, inline tables, dotted keys, table headers) in a preset,
the registry or config.toml: one line naming the file, exit 2, quickly, never a traceback."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fontaine_tui import cli
from fontaine_tui.core import tomlfile

N = 100_000
DEEP = {
    "array": "x = " + "[" * N + "]" * N + "\n",
    "inline": "x = " + "{a = " * N + "1" + "}" * N + "\n",
    "dotted": "a" + ".a" * N + " = 1\n",
    "header": "[a" + ".a" * N + "]\nx = 1\n",
}


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_deep_toml_is_refused_quickly(kind: str) -> None:
    start = time.monotonic()
    with pytest.raises(tomlfile.TOMLDecodeError, match="nested more than 100 levels"):
        tomlfile.loads(DEEP[kind])
    assert time.monotonic() - start < 5


def test_what_is_inside_strings_and_comments_is_not_nesting() -> None:
    text = (
        's = "'
        + "[" * 500
        + '"\n# '
        + "{" * 500
        + "\nm = '''\n"
        + "a." * 500
        + "'''\nf = [1.5, 2.5]\nd = 1979-05-27T07:32:00.999\n"
    )
    doc = tomlfile.loads(text)
    assert doc["s"] == "[" * 500 and doc["f"] == [1.5, 2.5]
    ok = "x = " + "[" * 100 + "]" * 100 + "\n" + "a" + ".a" * 98 + " = 1\n"
    assert tomlfile.loads(ok)["x"]


def _one_line(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err[:2000]
    assert str(path) in err and "nested more than 100 levels" in err, err
    return err


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_deep_preset_registry_and_config_are_one_line(
    tmp_path: Path,
    registry_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    preset = tmp_path / "deep.toml"
    preset.write_text(DEEP[kind])
    assert cli.main(["presets", "show", str(preset)]) == 2
    _one_line(capsys, preset)
    registry_path.parent.mkdir(parents=True)
    registry_path.write_text(DEEP[kind])
    assert cli.main(["runs"]) == 2
    _one_line(capsys, registry_path)
    registry_path.unlink()
    config = tmp_path / "xdg" / "fontaine-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(DEEP[kind])
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
    assert cli.main(["notify", "test"]) == 2
    _one_line(capsys, config)
