"""Ways a hostile log was made to give a wrong final label, each now UNDECIDABLE, counted or
refused: a step written twice in one line, a probe going back after the end or laundered by a
resume or a TensorBoard restart, repeated protobuf fields, a key reached both nested and
dotted, integer CSV cells, MLflow's stored infinity, a precision wider than the bounds."""

from __future__ import annotations

import csv
import json
import math
import time

import pytest

from fontaine_tui.cli import main
from tests.core.log.formats.conftest import EVAL, foreign_preset, loss
from tests.core.log.formats.test_conflicts import DRIFTED, _undecidable_naming, _verdict
from tests.logs import RIGONLY_LIKE, T0, dumps, probe, records, records_upto


def _ours(tmp_path, lines: list[str], capsys) -> tuple[int, dict]:
    log = tmp_path / "train_log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    code = main(["verdict", str(log), "--preset", "demosonly_1gpu", "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_probe_line_with_its_step_written_twice_is_no_probe(tmp_path, capsys):
    lines = []
    for r in records_upto(999):  # the run is going; no endpoint probe yet
        line = dumps(r)
        if r.get("kind") == "eval" and r["step"] == 500:
            line = line[:-1] + ', "step": 1000}'
        lines.append(line)
    code, doc = _ours(tmp_path, lines, capsys)
    assert doc["read_step"] != 1000 and doc["provisional"], doc["reason"]
    assert doc["log"]["malformed"] == 1
    # the same in a foreign JSONL log
    run = tmp_path / "run"
    run.mkdir()
    lines = [json.dumps({"step": s, "loss": loss(s)}) for s in range(1, 70)]
    lines.insert(40, '{"step": 40, "eval/mae": 2.6}')  # right after step 40's train line
    lines.append('{"step": 70, "eval/mae": 2.6, "step": 80}')
    (run / "log.jsonl").write_text("\n".join(lines) + "\n")
    _, doc = _verdict(run, foreign_preset(tmp_path, 'kind = "jsonl"', metric="eval/mae"), capsys)
    assert doc["read_step"] != 80 and doc["provisional"], doc["reason"]
    assert doc["log"]["malformed"] == 1


def test_a_probe_going_back_after_the_end_is_not_applied(tmp_path, capsys):
    recs = [r for r in records() if not (r.get("kind") == "eval" and r["step"] == 500)]
    recs.append(probe(500, T0 + 700, 3.7, 3.25))  # the anchor, after the end event
    code, doc = _ours(tmp_path, [dumps(r) for r in recs], capsys)
    assert (code, doc["verdict"]) == (6, "UNDECIDABLE"), doc["reason"]
    assert doc["log"]["out_of_order"] == 1


@pytest.mark.parametrize("where", ["after the end", "mid-run"])
def test_a_resume_never_lets_a_probe_before_it_be_replaced(tmp_path, capsys, where):
    recs = records()
    extra = [probe(500, T0 + 900, 3.7, 3.25)]
    resume = {"kind": "event", "time": T0 + 800, "event": "resume", "detail": "again"}
    if where == "after the end":
        recs += [{**resume, "step": 1000}, *extra]
    else:
        at = next(i for i, r in enumerate(recs) if r["kind"] == "train" and r["step"] == 800)
        recs[at + 1 : at + 1] = [{**resume, "step": 800}, *extra]
    code, doc = _ours(tmp_path, [dumps(r) for r in recs], capsys)
    assert doc["verdict"] == "UNDECIDABLE" and "step 500" in doc["reason"], doc["reason"]


def _tb(folder, steps=82, **kw):
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(folder), **kw)
    for step in range(1, steps + 1):
        w.add_scalar("train/loss", loss(step), step)
        if step in EVAL:
            w.add_scalar("eval/chunk_mae", EVAL[step], step)
    return w


def test_a_tensorboard_restart_after_a_step_does_not_replace_it(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    folder = tmp_path / "tb"
    _tb(folder).close()
    time.sleep(1.1)  # another file name
    w = SummaryWriter(str(folder), purge_step=81)  # drops 81 on; step 80 stands
    w.add_scalar("eval/chunk_mae", DRIFTED, 80)
    w.add_scalar("train/loss", 1.0, 81)
    w.close()
    _, doc = _verdict(folder, foreign_preset(tmp_path, 'kind = "tensorboard"'), capsys)
    _undecidable_naming(doc, DRIFTED)


def _event(step: int, *summaries: bytes) -> bytes:
    import struct

    from fontaine_tui.core.log.formats.tfrecord import frame

    body = b"\x09" + struct.pack("<d", T0) + b"\x10" + bytes([step])
    return frame(body + b"".join(b"\x2a" + bytes([len(s)]) + s for s in summaries))


def _value(tag: bytes, *values: float) -> bytes:
    import struct

    v = b"\x0a" + bytes([len(tag)]) + tag + b"".join(b"\x15" + struct.pack("<f", x) for x in values)
    return b"\x0a" + bytes([len(v)]) + v


@pytest.mark.parametrize("restart", [False, True])
def test_repeated_protobuf_fields_read_the_same_on_both_paths(tmp_path, capsys, restart):
    folder = tmp_path / "tb"
    folder.mkdir()
    tag = b"eval/chunk_mae"
    data = b""
    for s in range(1, 82):
        data += _event(s, _value(b"train/loss", 1.0))
        if s == 40:
            data += _event(40, _value(tag, 2.6))
        if s == 80:  # two summaries in one event: merged, two values for the tag
            data += _event(80, _value(tag, 2.75), _value(tag, 4.0))
    if restart:  # a restart at step 0 drops nothing, and reads record by record
        import struct

        from fontaine_tui.core.log.formats.tfrecord import frame

        data = frame(b"\x09" + struct.pack("<d", T0) + b"\x10\x00" + b"\x3a\x02\x08\x01") + data
    (folder / "events.out.tfevents.1.host").write_bytes(data)
    _, doc = _verdict(folder, foreign_preset(tmp_path, 'kind = "tensorboard"'), capsys)
    _undecidable_naming(doc, 2.75, 4.0)


def test_a_key_reached_nested_and_dotted_is_two_values(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    lines = []
    for s in range(1, 81):
        lines.append(json.dumps({"step": s, "loss": loss(s)}))
        if s == 40:
            lines.append(json.dumps({"step": 40, "eval": {"mae": 2.6}}))
    lines.append(json.dumps({"step": 80, "eval": {"mae": 2.75}, "eval.mae": DRIFTED}))
    (run / "log.jsonl").write_text("\n".join(lines) + "\n")
    _, doc = _verdict(run, foreign_preset(tmp_path, 'kind = "jsonl"', metric="eval.mae"), capsys)
    _undecidable_naming(doc, 2.75, DRIFTED)
    # our own eval record: breakdown.rig nested and dotted is a malformed record
    recs = records(probes=RIGONLY_LIKE)
    lines = [dumps(r) for r in recs]
    at = next(i for i, r in enumerate(recs) if r["kind"] == "eval" and r["step"] == 1000)
    lines[at] = lines[at][:-1] + ', "breakdown.rig": 1.0}'
    code, doc = _ours(tmp_path, lines, capsys)
    assert doc["verdict"] == "UNDECIDABLE" and doc["log"]["malformed"] == 1


def test_integer_csv_cells_are_values(tmp_path, capsys):
    folder = tmp_path / "lit"
    folder.mkdir()
    with open(folder / "metrics.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "train_loss", "val_loss"])
        for step in range(10, 81, 10):
            w.writerow([step, 1.0, ""])
        w.writerows([[40, "", 2.0], [80, "", 2.1], [80, "", 5]])
    _, doc = _verdict(
        tmp_path, foreign_preset(tmp_path, 'kind = "csv"\npath = "lit"', metric="val_loss"), capsys
    )
    _undecidable_naming(doc, 2.1, 5.0)


def test_a_csv_the_reader_cannot_take_is_one_line(tmp_path, capsys):
    folder = tmp_path / "lit"
    folder.mkdir()
    (folder / "metrics.csv").write_bytes(b'step,val_loss\r40,2.0\r80,2.1\x00\r"x' * 3)
    capsys.readouterr()
    code = main(
        [
            "verdict",
            str(tmp_path),
            "--preset",
            str(foreign_preset(tmp_path, 'kind = "csv"\npath = "lit"', metric="val_loss")),
        ]
    )
    err = capsys.readouterr().err
    assert code in (2, 6) and "Traceback" not in err
    if code == 2:
        assert err.count("\n") == 1


def test_mlflow_sql_stores_an_infinity_as_the_largest_double(tmp_path, capsys, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("sqlalchemy")
    monkeypatch.chdir(tmp_path)
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    with mlflow.start_run():
        for step in range(10, 81, 10):
            mlflow.log_metric("train/loss", loss(step), step=step)
        mlflow.log_metric("eval/chunk_mae", 2.6, step=40)
        mlflow.log_metric("eval/chunk_mae", math.inf, step=80)
    _, doc = _verdict(tmp_path, foreign_preset(tmp_path, 'kind = "mlflow"'), capsys)
    assert doc["verdict"] == "UNDECIDABLE" and "inf" in doc["reason"], doc["reason"]


def test_a_precision_wider_than_the_bounds_reads_undecidable(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path / "tb"))
    for step in range(10, 81, 10):
        w.add_scalar("train/loss", 1.0, step)
    w.add_scalar("eval/chunk_mae", 10_000_000.0, 40)
    w.add_scalar("eval/chunk_mae", 10_000_001.0, 80)  # delta +1.0: a float32 holds ~7 digits
    w.close()
    _, doc = _verdict(tmp_path / "tb", foreign_preset(tmp_path, 'kind = "tensorboard"'), capsys)
    assert doc["verdict"] == "UNDECIDABLE" and "both bounds" in doc["reason"], doc["reason"]


def test_a_double_first_then_float32_tag_keeps_float32_precision(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path / "tb"))
    for step in range(10, 81, 10):
        w.add_scalar("train/loss", 1.0, step)
    w.add_scalar("eval/chunk_mae", 0.3, 40, new_style=True, double_precision=True)
    w.add_scalar("eval/chunk_mae", 1.3, 80)
    w.close()
    _, doc = _verdict(tmp_path / "tb", foreign_preset(tmp_path, 'kind = "tensorboard"'), capsys)
    assert doc["precision"]["stored_as"] == "float32"


def test_an_unfinished_mlflow_file_store_line_is_said(tmp_path, capsys, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    run = client.create_run(client.create_experiment("x"))
    client.log_batch(
        run.info.run_id,
        metrics=[
            *(Metric("train/loss", 1.0, 0, s) for s in range(10, 81, 10)),
            Metric("eval/chunk_mae", 2.6, 0, 40),
            Metric("eval/chunk_mae", 2.7, 0, 80),
        ],
    )
    [metrics] = tmp_path.glob(f"mlruns/*/{run.info.run_id}/metrics")
    with open(metrics / "eval" / "chunk_mae", "a") as f:
        f.write(f"{int(T0 * 1000)} {DRIFTED} 80")  # no newline
    _, doc = _verdict(tmp_path, foreign_preset(tmp_path, 'kind = "mlflow"'), capsys)
    assert doc["log"]["malformed"] == 1
    assert any("no newline" in n for n in doc["log"]["notices"]), doc["log"]["notices"]


def test_a_torn_last_line_of_our_log_is_said(tmp_path, capsys):
    lines = [dumps(r) for r in records(probes=RIGONLY_LIKE)]
    log = tmp_path / "train_log.jsonl"
    log.write_text("\n".join(lines) + "\n" + dumps(probe(1000, T0 + 900, 3.2, 3.2)))
    capsys.readouterr()
    main(["verdict", str(log), "--preset", "demosonly_1gpu", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert any("without its newline" in n for n in doc["log"]["notices"])


def test_trainer_state_eval_keys_in_the_summary_entry_are_read(tmp_path, capsys):
    pytest.importorskip("transformers")
    from transformers import TrainerState

    history = [{"loss": loss(s), "step": s} for s in range(10, 81, 10)]
    history += [
        {"eval_loss": 2.6, "step": 40},
        {"eval_loss": 2.7, "step": 80},
        {"step": 80, "train_runtime": 12.3, "train_loss": 1.0, "eval_loss": DRIFTED},
    ]
    (tmp_path / "hf").mkdir()
    TrainerState(log_history=history).save_to_json(str(tmp_path / "hf" / "trainer_state.json"))
    _, doc = _verdict(
        tmp_path / "hf", foreign_preset(tmp_path, 'kind = "hf_trainer"', metric="eval_loss"), capsys
    )
    _undecidable_naming(doc, 2.7, DRIFTED)


def test_a_zero_padded_segment_number_is_not_a_rotation(tmp_path, capsys):
    lines = [dumps(r) for r in records(probes=RIGONLY_LIKE)]
    half = len(lines) // 2
    (tmp_path / "train_log.jsonl.1").write_text("\n".join(lines[:half]) + "\n")
    (tmp_path / "train_log.jsonl.001").write_text(dumps(probe(500, T0, 3.7, 3.25)) + "\n")
    (tmp_path / "train_log.jsonl").write_text("\n".join(lines[half:]) + "\n")
    from fontaine_tui.core.runfolder import rotated_segments

    assert [p.name for p in rotated_segments(tmp_path / "train_log.jsonl")] == ["train_log.jsonl.1"]
