"""The package as a user gets it: the wheel built from this checkout, installed (not editable)
into a fresh venv, and run from an empty folder that is not the checkout. It must find its
presets, say its version and launch the smoke preset on its installed engine to the verdict.

The venv sees this interpreter's site-packages (torch and the rest are not installed again;
also when this interpreter is itself a venv),
so the test checks that what runs is the venv's copy: fontaine_tui and fontaine_engine import
from the venv, and no child has PYTHONPATH. The wheel is built from a copy of the files a
build reads, so nothing is written into the checkout."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fontaine_tui import __version__
from fontaine_tui.core.verdict.record import EXIT_CODES

pytestmark = [pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
# what a build reads (pyproject.toml, setup.py); the checkout's fontaine_engine/ is not here:
# the wheel's engine comes from engine/ alone
SOURCES = (
    "pyproject.toml",
    "setup.py",
    "README.md",
    "LICENSE",
    "fontaine_tui",
    "engine",
    "presets",
)


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "FONTAINE_PRESETS", "FONTAINE_NOTIFY")
    }
    return {**env, "PYTHONUNBUFFERED": "1", **extra}


def _run(
    argv: list[str | Path], cwd: Path, timeout: float = 120, **extra: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=_env(**extra),
        text=True,
        capture_output=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(the wheel, the venv's bin folder, an empty folder to run in)."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    for name in SOURCES:
        path = REPO / name
        if not path.exists():  # the wheel's checks say what it lacks
            continue
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(path, src / name)
    built = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--no-cache-dir",
            "-w",
            root / "dist",
            src,
        ],
        cwd=root,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = (root / "dist").glob("*.whl")
    venv = root / "venv"
    made = _run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], cwd=root
    )
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    if sys.prefix != sys.base_prefix:
        # this interpreter is itself a venv: --system-site-packages gave the new one the base
        # interpreter's packages, not this venv's (torch, the console's dependencies). Its
        # folders are added by path, so its .pth files (this checkout's editable install) are
        # not read: what runs is still the wheel's copy
        import site

        inner = _run([python, "-c", "import site; print(site.getsitepackages()[0])"], cwd=root)
        assert inner.returncode == 0, inner.stderr
        (Path(inner.stdout.strip()) / "_outer_venv.pth").write_text(
            "".join(f"{d}\n" for d in site.getsitepackages())
        )
    # this interpreter's pip, into the venv; its dependencies are the system site-packages'
    got = _run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--no-index",
            "--no-deps",
            "--ignore-installed",
            "--no-cache-dir",
            "--disable-pip-version-check",
            wheel,
        ],
        cwd=root,
        timeout=300,
    )
    assert got.returncode == 0, got.stdout + got.stderr
    work = root / "elsewhere"
    work.mkdir()
    return wheel, venv / "bin", work


def test_the_wheel_holds_its_two_packages_and_the_license(installed) -> None:
    wheel, _, _ = installed
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"fontaine_tui", "fontaine_engine", f"fontaine_tui-{__version__}.dist-info"}
    shipped = {Path(n).name for n in names if n.startswith("fontaine_tui/presets/")}
    assert shipped == {p.name for p in (REPO / "presets").glob("*.toml")}
    assert f"fontaine_tui-{__version__}.dist-info/licenses/LICENSE" in names
    assert f"Version: {__version__}\n" in meta and "License: MIT\n" in meta
    assert "Project-URL: Homepage, https://github.com/fontaine-tui/fontaine-tui\n" in meta


def test_the_installed_copy_runs_from_the_venv(installed) -> None:
    _, bin_, work = installed
    venv = bin_.parent.resolve()
    where = _run(
        [
            bin_ / "python",
            "-c",
            "import fontaine_tui, fontaine_engine.identity as i; "
            "print(fontaine_tui.__file__); print(i.__file__)",
        ],
        cwd=work,
    )
    assert where.returncode == 0, where.stderr
    for line in where.stdout.splitlines():
        assert Path(line).resolve().is_relative_to(venv), line
    version = _run([bin_ / "fontaine-tui", "--version"], cwd=work)
    assert (version.returncode, version.stdout) == (0, f"fontaine-tui {__version__}\n")
    # the engine under its installed name, outside any git checkout: its code is the version
    ident = _run([bin_ / "python", "-m", "fontaine_engine", "identity"], cwd=work)
    assert ident.returncode == 0, ident.stderr
    assert json.loads(ident.stdout)["code"]["version"] == __version__
    usage = _run([bin_ / "fontaine-engine", "--help"], cwd=work)
    assert usage.returncode == 0 and "{train,parity,identity,score}" in usage.stdout


def test_presets_are_found_from_any_folder(installed) -> None:
    _, bin_, work = installed
    listed = _run([bin_ / "fontaine-tui", "presets"], cwd=work)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    names = {line.split()[0] for line in listed.stdout.splitlines() if line.strip()}
    assert names == {p.stem for p in (REPO / "presets").glob("*.toml")}
    assert f"({bin_.parent.resolve()}/lib/" in listed.stdout  # the venv's own copy


@pytest.mark.engine
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_launch_smoke_runs_the_installed_engine_to_its_verdict(installed) -> None:
    _, bin_, work = installed
    run = work / "run"
    done = _run(
        [bin_ / "fontaine-tui", "launch", "smoke", "--plain", "--output-dir", run, "--poll", "0.5"],
        cwd=work,
        timeout=300,
        XDG_CONFIG_HOME=str(work / "config"),
        FONTAINE_REGISTRY=str(work / "state" / "babysit.toml"),
        FONTAINE_BANK=str(work / "bank"),
    )
    assert "Traceback" not in done.stderr, done.stderr
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["read_step"] == 40 and verdict["provisional"] is False
    assert done.returncode == EXIT_CODES[verdict["verdict"]], done.stdout + done.stderr
    assert "engine finished at step 40" in done.stdout, done.stdout
    argv = json.loads((run / "prereg.json").read_text())["argv"]
    assert Path(argv[0]).parent == bin_ and argv[1:3] == ["-m", "fontaine_engine"], argv
