"""How fast each hostile input of docs/limits.md is refused, through the real readers.

    python bench/limits.py [--repeat 3]

Each input is built in a temporary folder, then fed to the reader a command uses: a log line
and a ledger nested 5,000 deep (`fontaine-tui verdict` of a run folder holding them), a 1 MiB
.gz of a gigabyte of newlines as a rotated segment (the log read with its history, the
default 256 MiB bound), an MLflow store whose `metrics` is a view recursing for ever (the
MLflow reader), one whose `metrics.key` is a virtual generated column of 300 MB a row (the same
reader), an MLflow store another process holds under BEGIN EXCLUSIVE (the same
reader, refused after the SQLITE_BUSY_S wait), 250 MiB of bare CRs as a segment (read, each a
blank line), and the costly patterns (a [source] pattern, one slow on every line, and the metric filter). Prints
the best of `repeat` wall times for each; the target is 2 s each.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fontaine_tui.cli import main  # noqa: E402
from fontaine_tui.core.log.formats.mlflow import connect  # noqa: E402
from fontaine_tui.core.log.formats.printed import LinesDecoder, compile_patterns  # noqa: E402
from fontaine_tui.core.log.read import load_log  # noqa: E402
from fontaine_tui.core.preset.find import load_preset  # noqa: E402
from fontaine_tui.core.runfolder import RunFolder  # noqa: E402
from fontaine_tui.core.verdict.prereg import freeze  # noqa: E402
from fontaine_tui.model.metrics import matching  # noqa: E402
from tests.logs import records_upto, write_log  # noqa: E402

TARGET_S = 2.0
DEEP = "[" * 5000 + "]" * 5000
SLOW_LINE = b"step:1 loss:1.0 note:" + b"a" * 24 + b"\n"  # (a|aa)+b backtracks on it


def run_folder(where: Path) -> Path:
    root = where / "run"
    root.mkdir(parents=True)
    freeze(
        RunFolder(root),
        load_preset(ROOT / "presets" / "demosonly_1gpu.toml"),
        ["fontaine-tui", "launch", "x"],
        "bench",
    )
    write_log(root / "train_log.jsonl", records_upto(1000))
    return root


def verdict(root: Path) -> Callable[[], object]:
    def run() -> object:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return main(["verdict", str(root)])

    return run


def refused(call: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        try:
            call()
        except ValueError as exc:  # InputError, PatternError, FormatError: one line
            return str(exc)[:60]
        raise SystemExit(f"not refused: {call}")

    return run


# a second process holding a store under BEGIN EXCLUSIVE, as a writer mid-commit holds it
HOLD = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
time.sleep(600)
"""


def held(store: Path, stack: contextlib.ExitStack) -> None:
    """`store` held under BEGIN EXCLUSIVE by another process until `stack` closes."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(store)], stdout=subprocess.PIPE)
    stack.callback(proc.wait)
    stack.callback(proc.kill)
    assert proc.stdout is not None and proc.stdout.readline() == b"held\n"


def cases(where: Path, stack: contextlib.ExitStack) -> list[tuple[str, Callable[[], object]]]:
    deep_log = run_folder(where / "a")
    with (deep_log / "train_log.jsonl").open("a") as fh:
        fh.write('{"kind": "eval", "step": 1001, "x": ' + DEEP + "}\n")
    deep_ledger = run_folder(where / "b")
    (deep_ledger / "amendments.jsonl").write_text('{"x": ' + DEEP + "}\n")
    bomb = where / "c"
    bomb.mkdir()
    write_log(bomb / "train_log.jsonl", records_upto(100))
    with gzip.open(bomb / "train_log.jsonl.1.gz", "wb", compresslevel=9) as fh:
        for _ in range(1024):  # 1 GiB of newlines, about 1 MiB compressed
            fh.write(b"\n" * 2**20)
    crs = where / "d"
    crs.mkdir()
    write_log(crs / "train_log.jsonl", records_upto(100))
    with gzip.open(crs / "train_log.jsonl.1.gz", "wb", compresslevel=9) as fh:
        for _ in range(250):  # 250 MiB of bare CRs: each one a line a reader skips
            fh.write(b"\r" * 2**20)
    store = where / "mlflow.db"
    db = sqlite3.connect(store)
    db.executescript(
        "CREATE VIEW metrics AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)"
        " SELECT i AS step FROM n;"
    )
    db.close()
    generated = where / "generated" / "mlflow.db"
    generated.parent.mkdir()
    db = sqlite3.connect(generated)
    db.executescript(
        "CREATE TABLE metrics (k TEXT, key TEXT GENERATED ALWAYS AS "
        "(k || printf('%.*c', 300000000, ' ')) VIRTUAL, step INTEGER, run_uuid TEXT);"
    )
    db.executemany("INSERT INTO metrics (k, step, run_uuid) VALUES ('loss', ?, 'r')", [(1,)] * 40)
    db.commit()
    db.close()
    busy = where / "busy" / "mlflow.db"
    busy.parent.mkdir()
    sqlite3.connect(busy).executescript("CREATE TABLE metrics (step INTEGER);")
    held(busy, stack)
    slow = LinesDecoder(patterns=[r"step (?P<step>\d+) (?P<loss>(a|aa)+b)?"])
    return [
        ("JSON: a log line nested 5,000 deep (verdict)", verdict(deep_log)),
        ("JSON: amendments.jsonl nested 5,000 deep (verdict)", verdict(deep_ledger)),
        (
            "gzip: 1 GiB of newlines as a rotated segment",
            refused(lambda: load_log(bomb / "train_log.jsonl", history=True)),
        ),
        (
            "gzip: 250 MiB of bare CRs as a rotated segment (read, not refused)",
            lambda: load_log(crs / "train_log.jsonl", history=True),
        ),
        ("SQLite: `metrics` a view recursing for ever", refused(lambda: connect(store))),
        (
            "SQLite: `metrics.key` a generated column of 300 MB a row, 40 rows",
            refused(lambda: connect(generated)),
        ),
        ("SQLite: a store held under BEGIN EXCLUSIVE", refused(lambda: connect(busy))),
        (
            "pattern: ((a{1000}){1000}){1000} as a [source] pattern",
            refused(lambda: compile_patterns(["(?P<step>((a{1000}){1000}){1000})(?P<x>b)"])),
        ),
        (
            "pattern: (a|aa)+b on a printed line of 60 a's",
            refused(lambda: slow.feed(b"step 2 " + b"a" * 60 + b"\n")),
        ),
        (
            "pattern: (a|aa)+b just under its budget on each of 1,000 printed lines",
            refused(
                lambda: LinesDecoder(patterns=[r"note:(a|aa)+b(?P<step>\d+) (?P<x>\S+)"]).feed(
                    SLOW_LINE * 1000
                )
            ),
        ),
        (
            "pattern: (a|aa)+b as the metric filter, 200 names",
            refused(lambda: matching(["a" * 40] * 200, "(a|aa)+b")),
        ),
    ]


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        rows = cases(Path(tmp), stack)
        worst = 0.0
        for name, call in rows:
            best = float("inf")
            for _ in range(args.repeat):
                start = time.perf_counter()
                call()
                best = min(best, time.perf_counter() - start)
            worst = max(worst, best)
            print(f"{best:7.3f} s  {name}")
        print(f"slowest {worst:.3f} s (target {TARGET_S:g} s each): ", end="")
        print("met" if worst <= TARGET_S else "NOT met")


if __name__ == "__main__":
    main_()
