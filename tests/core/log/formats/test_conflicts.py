"""Two values for one step, from every reader: written by the real libraries (json, csv,
Lightning's CSVLogger, transformers' TrainerState, torch's SummaryWriter, MLflow), the
verdict at that step is UNDECIDABLE naming both values, never the last one written. Rows
that cannot be read are counted and said, never a traceback."""

from __future__ import annotations

import csv
import json
import sqlite3

import pytest

from fontaine_tui.cli import main
from tests.core.log.formats.conftest import EVAL, foreign_preset, loss

DRIFTED = 4.5  # an endpoint value far past the drift bound: SAME-DRIFT if it were read alone


def _verdict(folder, preset, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["verdict", str(folder), "--preset", str(preset), "--json"])
    out = capsys.readouterr()
    assert out.err == "", out.err
    return code, json.loads(out.out)


def _undecidable_naming(doc: dict, *values: float) -> None:
    assert doc["verdict"] == "UNDECIDABLE", doc["reason"]
    assert doc["provisional"] is False
    for v in values:
        assert repr(v) in doc["reason"], doc["reason"]


# -- JSONL ---------------------------------------------------------------------------------


def _jsonl(path, extra: list[str] = (), evals=EVAL, split: bool = False, eval_first: bool = False):
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for step in range(1, 81):
        lines.append(json.dumps({"step": step, "loss": loss(step)}))
        if step in evals:
            lines.insert(
                len(lines) - eval_first,
                json.dumps(
                    {"step": step, "split": "eval", "mae": evals[step]}
                    if split
                    else {"step": step, "eval/mae": evals[step]}
                ),
            )
    path.write_text("\n".join([*lines, *extra]) + "\n")
    return path


JSONL = 'kind = "jsonl"'


def test_jsonl_two_lines_for_the_endpoint(tmp_path, capsys):
    _jsonl(tmp_path / "run" / "log.jsonl", [json.dumps({"step": 80, "eval/mae": DRIFTED})])
    preset = foreign_preset(tmp_path, JSONL, metric="eval/mae")
    code, doc = _verdict(tmp_path / "run", preset, capsys)
    _undecidable_naming(doc, EVAL[80], DRIFTED)
    assert code == 6


def test_jsonl_a_key_written_twice_in_one_line(tmp_path, capsys):
    line = json.dumps({"step": 80, "eval/mae": EVAL[80]})[:-1] + f', "eval/mae": {DRIFTED}}}'
    evals = {s: v for s, v in EVAL.items() if s != 80}
    _jsonl(tmp_path / "run" / "log.jsonl", [line], evals)
    _, doc = _verdict(tmp_path / "run", foreign_preset(tmp_path, JSONL, metric="eval/mae"), capsys)
    _undecidable_naming(doc, EVAL[80], DRIFTED)


def test_jsonl_nan_big_integers_and_deep_nesting(tmp_path, capsys):
    # json.dumps writes NaN by default: the endpoint probe is read, and it is not a number
    evals = {s: v for s, v in EVAL.items() if s != 80}
    deep = '{"step": 79, "x": ' + "[" * 3000 + "]" * 3000 + "}"
    extra = [
        json.dumps({"step": 80, "eval/mae": float("nan")}),
        '{"step": 80, "big": 123456789012345678901234567890}',
        deep,
    ]
    _jsonl(tmp_path / "run" / "log.jsonl", extra, evals)
    _, doc = _verdict(tmp_path / "run", foreign_preset(tmp_path, JSONL, metric="eval/mae"), capsys)
    assert doc["verdict"] == "UNDECIDABLE" and "nan" in doc["reason"], doc["reason"]
    assert doc["log"]["malformed"] == 1  # the line nested too deep: counted, said
    assert any("nested too deep" in n for n in doc["log"]["notices"]), doc["log"]["notices"]


def test_jsonl_a_dropped_endpoint_line_never_lets_a_later_step_decide(tmp_path, capsys):
    evals = {s: v for s, v in EVAL.items() if s != 80}
    extra = ['{"step": 80, "eval/mae": 2.0', json.dumps({"step": 90, "eval/mae": 2.6})]
    _jsonl(tmp_path / "run" / "log.jsonl", extra, evals)
    _, doc = _verdict(tmp_path / "run", foreign_preset(tmp_path, JSONL, metric="eval/mae"), capsys)
    assert doc["verdict"] == "UNDECIDABLE" and not doc["provisional"]
    assert "no probe at the endpoint (step 80)" in doc["reason"]


@pytest.mark.parametrize("eval_first", [False, True])
def test_jsonl_probe_lines_told_by_a_field_in_any_order(tmp_path, capsys, eval_first):
    # eval_first: each eval line before the train line of its step
    _jsonl(tmp_path / "run" / "log.jsonl", split=True, eval_first=eval_first)
    source = JSONL + '\nprobe_field = "split"\nprobe_value = "eval"'
    code, doc = _verdict(tmp_path / "run", foreign_preset(tmp_path, source, metric="mae"), capsys)
    assert doc["delta"] == pytest.approx(EVAL[80] - EVAL[40])
    assert (code, doc["verdict"]) == (4, "AMBIGUOUS")


# -- CSV -----------------------------------------------------------------------------------


def _lightning(tmp_path):
    pytest.importorskip("lightning")
    from lightning.pytorch.loggers import CSVLogger

    logger = CSVLogger(str(tmp_path), name="lit")
    for step in range(1, 81):
        logger.log_metrics({"train_loss": loss(step)}, step=step)
        if step in EVAL:
            logger.log_metrics({"val_mae": EVAL[step]}, step=step)
    logger.finalize("success")
    return tmp_path / "lit" / "version_0" / "metrics.csv"


CSV = 'kind = "csv"\npath = "lit"'


def test_csv_two_rows_for_the_endpoint(tmp_path, capsys):
    path = _lightning(tmp_path)
    header = next(csv.reader(open(path)))
    with open(path, "a", newline="") as f:
        csv.writer(f).writerow(
            [DRIFTED if k == "val_mae" else 80 if k == "step" else "" for k in header]
        )
    _, doc = _verdict(tmp_path, foreign_preset(tmp_path, CSV, metric="val_mae"), capsys)
    _undecidable_naming(doc, EVAL[80], DRIFTED)


def test_csv_a_fractional_step_is_never_rounded_onto_the_endpoint(tmp_path, capsys):
    path = _lightning(tmp_path)
    text = path.read_text()
    header = next(csv.reader([text.splitlines()[0]]))
    rows = [
        [DRIFTED if k == "val_mae" else "80.9" if k == "step" else "" for k in header],
        ["inf" if k == "step" else "" for k in header],
        ["1e30" if k == "step" else "" for k in header],
    ]
    with open(path, "a", newline="") as f:
        csv.writer(f).writerows(rows)
    code, doc = _verdict(tmp_path, foreign_preset(tmp_path, CSV, metric="val_mae"), capsys)
    assert (code, doc["verdict"]) == (4, "AMBIGUOUS")  # the step-80 row that is one
    assert doc["log"]["malformed"] == 3
    assert any("80.9" in n and "whole number" in n for n in doc["log"]["notices"])


def test_csv_a_column_named_twice_and_a_bom(tmp_path, capsys):
    folder = tmp_path / "lit"
    folder.mkdir()
    with open(folder / "metrics.csv", "w", newline="", encoding="utf-8-sig") as f:
        w = csv.writer(f)
        w.writerow(["step", "val_mae", "train_loss", "val_mae"])
        for step in range(1, 81):
            w.writerow([step, "", loss(step), ""])
            if step in EVAL:
                w.writerow([step, EVAL[step], "", DRIFTED if step == 80 else EVAL[step]])
    _, doc = _verdict(tmp_path, foreign_preset(tmp_path, CSV, metric="val_mae"), capsys)
    _undecidable_naming(doc, EVAL[80], DRIFTED)


# -- trainer_state.json ----------------------------------------------------------------------


def _state(path, history):
    pytest.importorskip("transformers")
    from transformers import TrainerState

    path.parent.mkdir(parents=True, exist_ok=True)
    TrainerState(global_step=80, max_steps=80, log_history=history).save_to_json(str(path))
    return path


def _history(evals=EVAL):
    out = []
    for step in range(5, 81, 5):
        out.append({"loss": loss(step), "learning_rate": 1e-3, "step": step, "epoch": 1.0})
        if step in evals:
            out.append({"eval_mae": evals[step], "step": step, "epoch": 1.0})
    return out


HF = 'kind = "hf_trainer"'


def test_trainer_state_a_duplicated_endpoint_and_a_step_going_back(tmp_path, capsys):
    history = [*_history(), {"eval_mae": DRIFTED, "step": 80}, {"loss": 9.0, "step": 10}]
    _state(tmp_path / "hf" / "trainer_state.json", history)
    _, doc = _verdict(tmp_path / "hf", foreign_preset(tmp_path, HF, metric="eval_mae"), capsys)
    _undecidable_naming(doc, EVAL[80], DRIFTED)
    notices = " ".join(doc["log"]["notices"])
    assert "going back in steps" in notices and "loss at step 10" in notices, notices


def test_trainer_state_with_nan_as_transformers_writes_it(tmp_path, capsys):
    history = _history()
    history.insert(3, {"loss": float("nan"), "step": 12, "epoch": 1.0})  # a diverged step
    path = _state(tmp_path / "hf" / "trainer_state.json", history)
    assert "NaN" in path.read_text()
    code, doc = _verdict(tmp_path / "hf", foreign_preset(tmp_path, HF, metric="eval_mae"), capsys)
    assert (code, doc["verdict"]) == (4, "AMBIGUOUS")
    assert doc["delta"] == pytest.approx(EVAL[80] - EVAL[40])


def test_trainer_state_a_key_written_twice(tmp_path, capsys):
    path = _state(tmp_path / "hf" / "trainer_state.json", _history())
    text = path.read_text()
    at = text.index(f'"eval_mae": {EVAL[80]!r}')
    path.write_text(text[:at] + f'"eval_mae": {DRIFTED!r},\n      ' + text[at:])
    _, doc = _verdict(tmp_path / "hf", foreign_preset(tmp_path, HF, metric="eval_mae"), capsys)
    _undecidable_naming(doc, EVAL[80], DRIFTED)


# -- TensorBoard -----------------------------------------------------------------------------


def _writer(folder, **kw):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(str(folder), **kw)


def _tb_run(w, upto: int = 80, evals=EVAL):
    for step in range(1, upto + 1):
        w.add_scalar("train/loss", loss(step), step)
        if step in evals:
            w.add_scalar("eval/chunk_mae", evals[step], step)


TB = 'kind = "tensorboard"'


@pytest.mark.parametrize("files", [1, 2])
def test_tensorboard_two_events_for_one_step_and_tag(tmp_path, capsys, files):
    pytest.importorskip("torch")
    folder = tmp_path / "tb"
    w = _writer(folder)
    _tb_run(w)
    if files == 2:  # the script started again into the same folder, without a purge
        w.close()
        w = _writer(folder)
    w.add_scalar("eval/chunk_mae", DRIFTED, 80)
    w.close()
    _, doc = _verdict(folder, foreign_preset(tmp_path, TB), capsys)
    # float32 in event files: the values as stored
    _undecidable_naming(doc, float(__import__("numpy").float32(EVAL[80])), DRIFTED)


def test_tensorboard_a_purged_restart_reads_the_new_timeline(tmp_path, capsys):
    pytest.importorskip("torch")
    folder = tmp_path / "tb"
    w = _writer(folder)
    _tb_run(w, upto=75, evals={s: DRIFTED if s >= 60 else v for s, v in EVAL.items()})
    w.close()
    w = _writer(folder, purge_step=51)  # a restart from the step-50 checkpoint
    for step in range(51, 81):
        w.add_scalar("train/loss", loss(step), step)
        if step in EVAL:
            w.add_scalar("eval/chunk_mae", EVAL[step], step)
    w.close()
    code, doc = _verdict(folder, foreign_preset(tmp_path, TB), capsys)
    assert (code, doc["verdict"]) == (4, "AMBIGUOUS"), doc["reason"]
    assert doc["log"]["resumes"] == 1 and doc["log"]["conflicts"] == 0


# -- MLflow ----------------------------------------------------------------------------------


def _mlflow(folder, monkeypatch, second: float | None = DRIFTED):
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("sqlalchemy")
    monkeypatch.chdir(folder)
    mlflow.set_tracking_uri(f"sqlite:///{folder / 'mlflow.db'}")
    with mlflow.start_run(run_name="r"):
        for step in range(1, 81):
            mlflow.log_metric("train/loss", loss(step), step=step)
            if step in EVAL:
                mlflow.log_metric("eval/chunk_mae", EVAL[step], step=step)
        if second is not None:
            mlflow.log_metric("eval/chunk_mae", second, step=80)
    return folder / "mlflow.db"


def test_mlflow_two_rows_for_the_endpoint(tmp_path, capsys, monkeypatch):
    _mlflow(tmp_path, monkeypatch)
    _, doc = _verdict(tmp_path, foreign_preset(tmp_path, 'kind = "mlflow"'), capsys)
    _undecidable_naming(doc, EVAL[80], DRIFTED)


def test_mlflow_rows_with_null_or_text_are_counted_not_raised(tmp_path, capsys, monkeypatch):
    db = _mlflow(tmp_path, monkeypatch, second=None)
    con = sqlite3.connect(db)
    run = con.execute("SELECT run_uuid FROM runs").fetchone()[0]
    con.execute("PRAGMA writable_schema = 1")  # MLflow's schema says NOT NULL: break it
    con.execute(
        "UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE name = 'metrics'"
    )
    con.commit()
    con.close()
    con = sqlite3.connect(db)
    for step, stamp, value in ((None, 1, 1.0), (81, None, 1.0), (82, 1, "high")):
        con.execute(
            "INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) "
            "VALUES ('eval/chunk_mae', ?, ?, ?, ?, 0)",
            (value, stamp, run, step),
        )
    con.commit()
    con.close()
    code, doc = _verdict(tmp_path, foreign_preset(tmp_path, 'kind = "mlflow"'), capsys)
    assert (code, doc["verdict"]) == (4, "AMBIGUOUS")  # the endpoint is clean
    assert doc["log"]["malformed"] == 1  # the NULL step
    notices = " ".join(doc["log"]["notices"])
    assert "None" in notices, notices
    # the eval key's text is kept as what it is, a probe's value (said through the gate)
    assert "eval/chunk_mae at step 82: a string ('high')" in notices, notices


def test_tensorboard_a_step_past_int64_and_an_overlong_varint(tmp_path, capsys):
    pytest.importorskip("torch")
    from fontaine_tui.core.log.formats.tfrecord import frame

    folder = tmp_path / "tb"
    w = _writer(folder)
    _tb_run(w)
    w.close()
    event = next(folder.iterdir())
    tag = b"eval/chunk_mae"
    value = b"\x0a" + bytes([len(tag)]) + tag + b"\x15" + b"\x00\x00\x90\x40"
    summary = b"\x2a" + bytes([len(value) + 2]) + b"\x0a" + bytes([len(value)]) + value
    wall = b"\x09" + b"\x00" * 8
    past = wall + b"\x10" + b"\xff" * 9 + b"\x01" + summary  # step 2^64 - 1
    overlong = wall + b"\x10" + b"\x80" * 11 + b"\x01" + summary
    with open(event, "ab") as f:
        f.write(frame(past) + frame(overlong))
    code, doc = _verdict(folder, foreign_preset(tmp_path, TB), capsys)
    assert (code, doc["verdict"]) == (4, "AMBIGUOUS")
    assert any("2 event record(s)" in n for n in doc["log"]["notices"]), doc["log"]["notices"]


def test_our_own_log_a_metric_written_twice_in_one_probe(tmp_path, capsys, demosonly):
    from tests.logs import records

    recs = records(probes={250: (3.4623, 3.6), 500: (3.0, 3.1), 1000: (3.1, 3.1)})
    lines = [json.dumps(r) for r in recs]
    i = next(k for k, r in enumerate(recs) if r["kind"] == "eval" and r["step"] == 1000)
    lines[i] = lines[i].replace(
        '"eval_chunk_mae": 3.1', f'"eval_chunk_mae": {DRIFTED}, "eval_chunk_mae": 3.1'
    )
    log = tmp_path / "train_log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["verdict", str(log), "--preset", "demosonly_1gpu", "--json"]) == 6
    doc = json.loads(capsys.readouterr().out)
    _undecidable_naming(doc, DRIFTED, 3.1)


def test_a_delta_on_a_bound_reads_the_same_from_float32_event_files(tmp_path, capsys):
    # one run written twice: trainer_state.json keeps doubles, event files float32
    pytest.importorskip("torch")
    evals = {s: 0.3 if s <= 40 else 1.3 for s in EVAL}  # delta exactly the drift bound 1.0
    w = _writer(tmp_path / "tb")
    _tb_run(w, evals=evals)
    w.close()
    history = [{"eval_chunk_mae": v, "step": s} for s, v in evals.items()]
    _state(tmp_path / "hf" / "trainer_state.json", history)
    docs = {}
    for kind, folder in (("tensorboard", "tb"), ("hf_trainer", "hf")):
        preset = foreign_preset(
            tmp_path,
            f'kind = "{kind}"',
            metric="eval/chunk_mae" if kind == "tensorboard" else "eval_chunk_mae",
        )
        code, docs[kind] = _verdict(tmp_path / folder, preset, capsys)
        assert (code, docs[kind]["verdict"]) == (3, "SAME-DRIFT"), (kind, docs[kind]["delta"])
    assert docs["tensorboard"]["delta"] != docs["hf_trainer"]["delta"]  # as each stored it
    assert docs["tensorboard"]["precision"]["stored_as"] == "float32"
    assert docs["hf_trainer"]["precision"] == {"bits": 53, "tolerance": 0.0, "stored_as": "float64"}
