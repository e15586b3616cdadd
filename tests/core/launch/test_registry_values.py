"""Values read from babysit.toml are checked for type and range: a bad one is one line naming
the file and the key, exit 2, and the file is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from fontaine_tui import cli
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.runs.registry import Registry


def _write(path: Path, extra: str, host: str | None = None) -> str:
    host_line = f'host = "{host or hostname()}"\n' if "host =" not in extra else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f'[[runs]]\nname = "a"\nrun_dir = "/tmp/nowhere-a"\n{host_line}{extra}\n'
    path.write_text(text)
    return text


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("host = 5", "host"),
        ("pid = 12345678901234567", "pid"),
        ("pid = -3", "pid"),
        ('pid = "12"', "pid"),
        ("pid = true", "pid"),
        ("pid_started = nan", "pid_started"),
        ('pid_started = "yesterday"', "pid_started"),
        ("last_step = -1", "last_step"),
        ("exit_code = 99999999999", "exit_code"),
        ("poll_cadence_s = inf", "poll_cadence_s"),
        ("status = 3", "status"),
        ("job = [1]", "job"),
    ],
)
def test_a_bad_value_is_one_line_naming_file_and_key(
    registry_path: Path, capsys: pytest.CaptureFixture[str], extra: str, key: str
) -> None:
    text = _write(registry_path, extra)
    with pytest.raises(InputError, match=rf"runs\[0\]\.{key}: expected"):
        Registry().entries()
    for argv in (["runs"], ["runs", "--update"], ["stop", "/tmp/nowhere-a", "--yes"]):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert str(registry_path) in err and f"runs[0].{key}" in err, err
    assert registry_path.read_text() == text


def test_good_values_still_read(registry_path: Path) -> None:
    _write(registry_path, "pid = 4194304\npid_started = 0\nexit_code = -9\nlast_step = 40")
    [e] = Registry().entries()
    assert (e.pid, e.pid_started, e.exit_code, e.last_step) == (4194304, 0.0, -9, 40)
    assert isinstance(e.pid_started, float)
