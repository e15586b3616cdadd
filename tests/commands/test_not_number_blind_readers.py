"""A blinded run read from printed lines, an MLflow store, a trackio store or a W&B run file whose
rule metric is not a number at the latest probe.

As tests/commands/test_not_number_blind.py for JSON lines: a run folder frozen from a blind
preset (anchor 40, endpoint 80) cut at step 60, its eval value at 60 text (`n/a`): printed by the
trainer, logged by trackio's own storage, framed by wandb's own protobuf classes, or written by
MLflow itself (its SQLite store, the row then changed to text, as a store written by something
else holds it). A read there is UNDECIDABLE, so before the endpoint a notice naming the key, the
step or the value names the class of the hidden read. Read by `verdict`, `inspect` (not printed
lines: it takes no patterns), `replay --plain` and `attach --plain` in real subprocesses: while
the read is hidden each counts the value and names none of them; without the blind they name
it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.core.verdict.record import EXIT_CODES, PROVISIONAL_OFFSET
from tests.commands.test_blind import cli
from tests.core.log.formats.conftest import EVAL, foreign_preset, loss

KINDS = ["lines", "mlflow", "trackio", "wandb"]
HIDDEN_COUNT = "1 eval value(s) not a number: keys, steps and values hidden (blinded)"
UNDECIDABLE_NOW = EXIT_CODES["UNDECIDABLE"] + PROVISIONAL_OFFSET  # the read at 60, not blinded
LINES = r"""kind = "lines"
eval = ["mae"]
patterns = ['step:(?P<step>\S+) loss:(?P<loss>\S+)', 'step:(?P<step>\S+) mae:(?P<mae>\S+)']"""
TOLD = {  # the words naming it without the blind
    "lines": "mae at step 60: a string ('n/a')",
    "mlflow": "eval/mae at step 60: a string ('n/a')",
    "trackio": "eval/mae at step 60: a string ('n/a')",
    "wandb": "eval/mae at step 60: 'n/a'",
}


def _printed(root: Path) -> None:
    lines = []
    for step in range(1, 61):
        lines.append(f"step:{step} loss:{loss(step):.4f}")
        if step in EVAL:
            lines.append(f"step:{step} mae:{'n/a' if step == 60 else f'{EVAL[step]:.3f}'}")
    (root / "engine.out.log").write_text("\n".join(lines) + "\n")


def _mlflow(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("sqlalchemy")
    monkeypatch.chdir(root)
    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    with mlflow.start_run(run_name="r"):
        for step in range(1, 61):
            mlflow.log_metric("train/loss", loss(step), step=step)
            if step in EVAL:
                mlflow.log_metric("eval/mae", EVAL[step], step=step)
    con = sqlite3.connect(root / "mlflow.db")
    con.execute("UPDATE metrics SET value = 'n/a' WHERE key = 'eval/mae' AND step = 60")
    con.commit()
    con.close()


def _trackio(root: Path) -> None:
    """Through trackio's own storage (what trackio.log's sender thread calls), as logged."""
    sqlite_storage = pytest.importorskip("trackio.sqlite_storage")
    rows = []
    for step in range(1, 61):
        rows.append(({"train/loss": loss(step)}, step))
        if step in EVAL:
            rows.append(({"eval/mae": "n/a" if step == 60 else EVAL[step]}, step))
    was = sqlite_storage.TRACKIO_DIR
    sqlite_storage.TRACKIO_DIR = root
    try:
        sqlite_storage.SQLiteStorage.bulk_log(
            "blind", "only", [m for m, _ in rows], steps=[s for _, s in rows]
        )
    finally:
        sqlite_storage.TRACKIO_DIR = was


def _wandb(root: Path) -> None:
    """The records by wandb's own protobuf classes, framed as wandb frames them (a live run)."""
    pytest.importorskip("wandb")
    from tests.core.log.formats.wandbkit import frame, history, run_record

    records = [run_record("blind1")]
    for step in range(1, 61):
        values: dict[str, object] = {"train/loss": loss(step)}
        if step in EVAL:
            values["eval/mae"] = '"n/a"' if step == 60 else EVAL[step]
        records.append(history(step, values))
    run = root / "wandb" / "offline-run-20260101_000000-blind1" / "run-blind1.wandb"
    run.parent.mkdir(parents=True)
    run.write_bytes(frame(records))


def blind_run(tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch, blind: bool = True):
    """A run folder frozen from a (blind) preset reading `kind`, its eval value at 60 text."""
    source = LINES if kind == "lines" else f'kind = "{kind}"'
    preset = foreign_preset(tmp_path, source, metric="mae" if kind == "lines" else "eval/mae")
    if blind:
        preset.write_text(preset.read_text().replace("[verdict]\n", "[verdict]\nblind = true\n"))
    root = tmp_path / "run"
    root.mkdir()
    freeze(RunFolder(root), load_preset(str(preset)), ["fontaine-tui", "launch"], "test-host")
    if kind == "lines":
        _printed(root)
    elif kind == "mlflow":
        _mlflow(root, monkeypatch)
    elif kind == "trackio":
        _trackio(root)
    else:
        _wandb(root)
    return root


def _leaks(text: str) -> list[str]:
    """What of the hidden read's class the text says: the value, its step, UNDECIDABLE."""
    return [w for w in ("n/a", "mae at step 60", "step 60 eval/mae", "UNDECIDABLE") if w in text]


@pytest.mark.parametrize("kind", KINDS)
def test_every_surface_counts_it_naming_nothing_while_hidden(tmp_path, kind, monkeypatch):
    root = blind_run(tmp_path, kind, monkeypatch)
    card = cli(tmp_path, "verdict", str(root))
    assert card.returncode == 7, card.stdout + card.stderr
    assert f"note: {HIDDEN_COUNT} until the endpoint" in card.stdout, card.stdout
    assert not _leaks(card.stdout + card.stderr), card.stdout
    doc = cli(tmp_path, "verdict", str(root), "-j")
    assert doc.returncode == 7 and not _leaks(doc.stdout), doc.stdout
    if kind != "lines":  # inspect takes no patterns: printed lines hold no key for it
        shown = cli(tmp_path, "inspect", str(root))
        assert shown.returncode == 0, shown.stderr
        assert f"{HIDDEN_COUNT} until the endpoint" in shown.stdout, shown.stdout
        assert not _leaks(shown.stdout + shown.stderr), shown.stdout
        notices = json.loads(cli(tmp_path, "inspect", str(root), "-j").stdout)["notices"]
        assert f"{HIDDEN_COUNT} until the endpoint" in notices, notices
        assert not _leaks(str(notices)), notices
    for command, extra in (("replay", []), ("attach", ["--quiet-end", "1"])):
        out = cli(tmp_path, command, str(root), "--plain", *extra)
        assert out.returncode == 7, out.stdout + out.stderr
        assert f"-- {HIDDEN_COUNT} until the endpoint" in out.stdout, out.stdout
        assert not _leaks(out.stdout + out.stderr), out.stdout


@pytest.mark.parametrize("kind", KINDS)
def test_every_surface_names_it_without_the_blind(tmp_path, kind, monkeypatch):
    root = blind_run(tmp_path, kind, monkeypatch, blind=False)
    card = cli(tmp_path, "verdict", str(root))
    ended = kind == "mlflow"  # MLflow's run says FINISHED at 60: the read is final there
    code = EXIT_CODES["UNDECIDABLE"] if ended else UNDECIDABLE_NOW
    assert card.returncode == code, card.stdout + card.stderr
    assert TOLD[kind] in card.stdout and "UNDECIDABLE there" in card.stdout, card.stdout
    if kind != "lines":
        notices = json.loads(cli(tmp_path, "inspect", str(root), "-j").stdout)["notices"]
        assert any(TOLD[kind] in n for n in notices), notices
    out = cli(tmp_path, "replay", str(root), "--plain")
    assert TOLD[kind] in out.stdout, out.stdout
