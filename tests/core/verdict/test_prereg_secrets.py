"""prereg.json never holds a credential (core/secrets.py): a preset carrying one is refused
before anything is written, and the provenance observed at launch is written masked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze, read_prereg

TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
HEX = "0123456789abcdef0123456789abcdef01234567"
TAIL = (
    '[source]\nkind = "hf_trainer"\n[verdict]\nmetric = "eval_loss"\nanchor_step = 10\n'
    "endpoint_step = 20\nhealthy_max = 0.0\ndrift_min = 0.2\n"
)


def preset_at(tmp_path: Path, question: str):
    path = tmp_path / "own.toml"
    path.write_text(
        f'[run]\nname = "own"\noutput_dir = "runs/own"\nquestion = "{question}"\n{TAIL}'
    )
    return load_preset(path)


def test_a_preset_holding_a_token_is_never_frozen(tmp_path):
    preset = preset_at(tmp_path, "asked with \\u0068" + TOKEN[1:])  # a TOML escape
    folder = RunFolder(tmp_path / "runs" / "own")
    folder.root.mkdir(parents=True)
    with pytest.raises(InputError) as info:
        freeze(folder, preset, ["python", "t.py"], "h", now=1.8e9)
    text = str(info.value)
    assert "run.question" in text and "credential" in text and "\n" not in text, text
    assert TOKEN[3:] not in text
    assert not folder.prereg.exists()


def test_the_provenance_is_frozen_with_its_tokens_masked(tmp_path):
    preset = preset_at(tmp_path, "Does it train?")
    folder = RunFolder(tmp_path / "runs" / "own")
    folder.root.mkdir(parents=True)
    provenance = {
        "command": {"argv": ["python", "t.py", "--hub", TOKEN], "env": {"A": "1"}},
        "code": {"git_commit": HEX, "dirty": False},
        "data": {"url": "https://me:pw@data.example.org/set?lang=en"},
    }
    freeze(folder, preset, ["python", "t.py"], "h", now=1.8e9, provenance=provenance)
    raw = folder.prereg.read_text()
    assert TOKEN[3:] not in raw and ":pw@" not in raw, raw
    frozen = json.loads(raw)["provenance"]
    assert frozen["command"]["argv"] == ["python", "t.py", "--hub", "***"]
    assert frozen["code"] == {"git_commit": HEX, "dirty": False}  # a commit is not a key
    assert frozen["data"]["url"] == "https://me:***@data.example.org/set?lang=en"
    assert read_prereg(folder).preset_sha256 == preset.sha256
