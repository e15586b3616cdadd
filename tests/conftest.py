"""Fixtures for every test: its own babysit registry (the user's is never touched), a real
sshd on 127.0.0.1 (throwaway keys, one per session) and the demosonly_1gpu preset with and
without its amendment."""

from __future__ import annotations

from pathlib import Path

import pytest

from fontaine_tui.core.verdict.presets import load_preset
from tests.sshd_helper import Sshd, find_sshd

PRESETS = Path(__file__).resolve().parents[1] / "presets"


@pytest.fixture(autouse=True)
def registry_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own registry; the user's is never touched."""
    path = tmp_path / "state" / "babysit.toml"
    monkeypatch.setenv("FONTAINE_REGISTRY", str(path))
    return path


@pytest.fixture(autouse=True)
def bank_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own comparator bank; the user's is never touched."""
    path = tmp_path / "bank"
    monkeypatch.setenv("FONTAINE_BANK", str(path))
    return path


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    if find_sshd() is None:
        pytest.skip("sshd not found (install openssh-server)")
    server = Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()
@pytest.fixture
def preset():
    """demosonly_1gpu, by name as a user gives it."""
    return load_preset("demosonly_1gpu")


@pytest.fixture
def demosonly():
    return load_preset(PRESETS / "demosonly_1gpu.toml")


@pytest.fixture
def raw_only(tmp_path):
    """demosonly_1gpu without its amendment: the kit's raw rule alone."""
    text = (PRESETS / "demosonly_1gpu.toml").read_text()
    head, _, tail = text.partition("[[amendments]]")
    tail = tail[tail.index("[gates]"):]
    path = tmp_path / "raw_only.toml"
    path.write_text(head + tail)
    return load_preset(path)
