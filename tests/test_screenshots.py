"""Every committed screenshot (screenshots/*.svg, shown in the README and the docs) is what the
code draws now: each is made again by screenshots/make.py into a temporary folder and compared
with the committed file. A change that alters a screen fails here until the images are made
again (`python screenshots/make.py`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "screenshots"
spec = importlib.util.spec_from_file_location("screenshots_make", HERE / "make.py")
assert spec is not None and spec.loader is not None
make = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make)


def test_every_committed_image_is_made_by_the_script():
    assert sorted(p.name for p in HERE.glob("*.svg")) == sorted(make.ALL)


@pytest.mark.parametrize("name", make.ALL)
def test_a_committed_screenshot_is_what_the_code_draws(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # make.py moves about; the test's folder comes back after
    made = make.one(name, tmp_path)
    committed = (HERE / name).read_text()
    assert made.read_text() == committed, (
        f"screenshots/{name} differs from what the code draws now: "
        f"run `python screenshots/make.py` and look at the new image"
    )
