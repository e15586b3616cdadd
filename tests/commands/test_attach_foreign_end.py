"""`attach --plain --until-end` on another trainer's run ends by itself, a real subprocess
following a real writer: an MLflow run at its status (FINISHED: an "end" event; FAILED: an
"error" event), a JSONL run at its final read, a CSV run at --quiet-end; each with the
verdict's exit code (as `fontaine-tui verdict`) and a line saying why it ended."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.core.follow.foreign_writers import close, writer

pytest.importorskip("mlflow")
pytest.importorskip("sqlalchemy")

ROOT = Path(__file__).parents[2]


def _preset(path: Path, kind: str, metric: str = "eval/chunk_mae", endpoint: int = 7) -> Path:
    path.write_text(f'''[run]
name = "live"
question = "Does the eval error fall after step 3?"

[source]
kind = "{kind}"

[verdict]
metric = "{metric}"
anchor_step = 3
endpoint_step = {endpoint}
healthy_max = 0.5
drift_min = 1.0
''')
    return path


def _attach(folder: Path, preset: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "attach",
            str(folder),
            "--plain",
            "--until-end",
            "--preset",
            str(preset),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def _verdict(folder: Path, preset: Path) -> int:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(folder), "--preset", str(preset)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    ).returncode


def _csv_writer(path: Path) -> None:
    """metrics.csv rewritten whole at each step (Lightning's way), 4 steps, never reaching
    the endpoint (9): only the quiet ends the follow."""
    rows = []
    for s in range(1, 5):
        rows.append(f"{s},{1.0 / s},{3.0 - 0.01 * s if s >= 3 else ''}")
        tmp = path.with_suffix(".tmp")
        tmp.write_text("step,train_loss,val_mae\n" + "\n".join(rows) + "\n")
        os.replace(tmp, path)
        time.sleep(0.3)


def test_attach_until_end_ends_by_itself_on_every_kind(tmp_path):
    runs = {name: tmp_path / name for name in ("finished", "failed", "jsonl", "csv")}
    for folder in runs.values():
        folder.mkdir()
    presets = {
        "finished": _preset(tmp_path / "m.toml", "mlflow"),
        "failed": _preset(tmp_path / "m.toml", "mlflow"),
        "jsonl": _preset(tmp_path / "j.toml", "jsonl"),
        "csv": _preset(tmp_path / "c.toml", "csv", "val_mae", endpoint=9),
    }
    started = time.monotonic()
    attached = {
        name: _attach(runs[name], presets[name], *(["--quiet-end", "1.5"] if name == "csv" else []))
        for name in runs
    }
    # FINISHED at step 5, before the endpoint (7): only the run's end can end the follow
    writers = {
        "finished": writer("mlflow_file", 5, 0.3),
        "failed": writer("mlflow_sqlite", 7, 0.3, fail_at=4),
        "jsonl": writer("jsonl", 7, 0.3),
    }
    for name, proc in writers.items():
        assert proc.stdin is not None
        proc.stdin.write(f"{runs[name]}\n")
        proc.stdin.flush()
    csv = threading.Thread(target=_csv_writer, args=(runs["csv"] / "metrics.csv",))
    csv.start()
    out = {}
    try:
        for name, proc in attached.items():
            stdout, stderr = proc.communicate(timeout=max(5.0, 120 - (time.monotonic() - started)))
            out[name] = (proc.returncode, stdout, stderr)
    finally:
        for proc in attached.values():
            if proc.poll() is None:
                proc.kill()
        csv.join()
        for proc in writers.values():
            assert close(proc) == 0

    for name, (code, stdout, stderr) in out.items():
        lines = stdout.splitlines()
        assert code == _verdict(runs[name], presets[name]), (name, stdout, stderr)
        assert lines[-1].startswith("verdict: "), (name, stdout)
        why = lines[-2]
        if name == "finished":
            assert why == "ended: the run's end event at step 5: MLflow run status FINISHED"
            assert lines[-1].startswith("verdict: UNDECIDABLE (final, step 7 of 7")
        elif name == "failed":
            assert why == "ended: the run's error event at step 4: MLflow run status FAILED"
        elif name == "jsonl":
            assert why == "ended: the final read (step 7, the endpoint in force)"
            assert "probe step 7: eval/chunk_mae 2.9300" in stdout
        else:
            assert why == "ended: no new data for 1.5 s (--quiet-end)"
            assert "probe step 3: val_mae 2.9700" in stdout
    assert out["finished"][0] == 6  # UNDECIDABLE, final
    assert out["jsonl"][0] == 0  # HEALTHY, final
    assert out["csv"][0] >= 10  # provisional: the endpoint was never reached


def test_attach_until_end_ends_at_the_engine_logs_error_event(tmp_path):
    """The engine's own log ending with an `error` event (a failed run) ends the follow with
    exit 1, as `launch --plain` exits on a failed run; before, only `end` did."""
    from tests.commands.test_attach_replay import freeze
    from tests.logs import dumps, records_upto

    run = tmp_path / "run"
    freeze(run)
    recs = records_upto(300)
    recs.append(
        {
            "kind": "event",
            "step": 300,
            "time": recs[-1]["time"] + 1,
            "event": "error",
            "detail": "FloatingPointError: loss is nan",
        }
    )
    (run / "train_log.jsonl").write_text("".join(dumps(r) + "\n" for r in recs))
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "attach", str(run), "--plain", "--until-end"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert res.returncode == 1, res.stderr
    # a log this old is judged on its own clock while attach catches up on it: no stall is
    # said (and cleared) on the way
    said = res.stdout.splitlines()
    assert not [ln for ln in said if "stall" in ln], res.stdout[-1500:]
    said = [ln for ln in said if not ln.startswith(("WARN ", "CLEAR "))]
    assert said[-1] == "event error at step 300: FloatingPointError: loss is nan"
