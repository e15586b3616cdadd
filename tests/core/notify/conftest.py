from __future__ import annotations

import pytest

from tests.core.notify.server import Silent


@pytest.fixture
def silent():
    sock = Silent()
    yield sock
    sock.close()


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    """The user's config.toml and FONTAINE_NOTIFY never reach a test."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
    return tmp_path / "config" / "fontaine-tui" / "config.toml"
