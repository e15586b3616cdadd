"""A sealed bundle read back (core/seal/bundle.py): a name that is a file and a folder too.

Every bundle here is packed by `pack`, as `seal` packs one, with a manifest that holds; only
its names are hostile. `verify` unpacks a bundle into a folder to recompute its verdict, and a
name that is both a file and the folder of another entry cannot be unpacked: it is refused in
one line, never a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.seal.bundle import pack, unpack
from fontaine_tui.model.seal import seal

DEMO = Path(__file__).parents[3] / "fontaine_tui" / "demo" / "run"


@pytest.fixture(scope="module")
def sealed(tmp_path_factory) -> dict[str, bytes]:
    """The demo run's bundle, as `seal` makes it: its files by name (the manifest apart)."""
    root = tmp_path_factory.mktemp("bundle") / "run"
    shutil.copytree(DEMO, root)
    return unpack(seal(str(root)).data, "the bundle").files


@pytest.mark.parametrize(
    "extra",
    [
        {"evidence/a": b"x", "evidence/a/b": b"y"},
        {"evidence/train_log.jsonl/x": b"y"},
        {"prereg.json/x": b"y"},
        {"evidence/dir/x/y": b"y", "evidence/dir/x": b"z"},
    ],
    ids=["evidence file and folder", "the log a folder", "a record a folder", "deeper"],
)
def test_a_name_both_a_file_and_a_folder_is_one_line(sealed, tmp_path, capsys, extra) -> None:
    data, _ = pack({**sealed, **extra}, "r", "carried: train_log.jsonl")
    path = tmp_path / "both.seal.zip"
    path.write_bytes(data)
    with pytest.raises(InputError, match="a file in the bundle and the folder of "):
        unpack(data, str(path))
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err, err
    assert "a file in the bundle and the folder of " in err, err
