"""`bank list` with an edited entry says what is there and why it is not listed, rather than
"nothing banked"."""

from __future__ import annotations

from pathlib import Path

from fontaine_tui.cli import main
from fontaine_tui.core.bank import store as bank
from tests.logs import records, write_log


def test_an_edited_entry_is_named_with_why(tmp_path: Path, bank_path: Path, capsys) -> None:
    write_log(tmp_path / "a" / "train_log.jsonl", records())
    assert main(["bank", "add", str(tmp_path / "a"), "--as", "ref"]) == 0
    version = bank_path / "ref" / f"{bank.get('ref').sha256}.json"
    version.write_text(version.read_text().replace('"note":""', '"note":"x"'))
    capsys.readouterr()
    assert main(["bank", "list"]) == 0
    out = capsys.readouterr().out
    assert "nothing banked" not in out
    assert out.startswith(f"nothing usable banked in {bank_path}\n"), out
    assert "ref" in out and "not listed (a preset naming it is refused)" in out
    assert "does not match its sha256 (edited)" in out
    (bank_path / "ref" / "CURRENT").unlink()
    assert main(["bank", "list"]) == 0
    assert "CURRENT is missing" in capsys.readouterr().out


def test_an_empty_bank_still_says_nothing_banked(bank_path: Path, capsys) -> None:
    assert main(["bank", "list"]) == 0
    assert capsys.readouterr().out == f"nothing banked in {bank_path}\n"
