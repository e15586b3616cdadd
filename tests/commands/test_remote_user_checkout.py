"""The non-root login of the remote tests imports this checkout from a copy in its own home,
so the suite passes wherever the checkout sits, also in a folder only its owner may enter
(`mktemp -d` makes one): nothing it runs names the checkout's path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.remote_user import CHECKOUT

pytestmark = pytest.mark.ssh


def test_the_login_imports_the_checkout_from_its_home(remote) -> None:
    # as over ssh: without the PYTHONPATH the tests may run under (su keeps it)
    res = remote.run_as(
        "env",
        "-u",
        "PYTHONPATH",
        str(remote.python),
        "-c",
        "import fontaine_engine, fontaine_tui, sys; print(fontaine_tui.__file__); "
        "print(fontaine_engine.__file__); print(sys.path)",
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert res.returncode == 0, res.stderr
    ours, engine, path = res.stdout.splitlines()
    copy = remote.home / "checkout"
    assert Path(ours) == copy / "fontaine_tui" / "__init__.py"
    assert Path(engine) == copy / "fontaine_engine" / "__init__.py"
    assert str(CHECKOUT) not in path  # the checkout's own folder is never on its path
    same = subprocess.run(
        [
            "diff",
            "-rq",
            "-x",
            "__pycache__",
            str(CHECKOUT / "fontaine_tui"),
            str(copy / "fontaine_tui"),
        ],
        capture_output=True,
        text=True,
    )
    assert same.returncode == 0, same.stdout  # the code under test, not another install's
