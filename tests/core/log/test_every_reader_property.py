"""Property, over every reader (our log, JSONL, CSV, trainer_state.json, TensorBoard in one
folder and in add_scalars' sub-folders, MLflow, trackio, printed lines, W&B): whatever a run's
probes suffer (a probe repeated, a second value for a step, NaN, a probe dropped or
malformed, one after the endpoint, the log rotated, an alert the trainer raised naming the
metric and a number), the headless verdict is the verdict of the clean evidence, or
UNDECIDABLE, or exit 2 naming why: never another label. An alert is no evidence: it is left
out of the clean evidence, and where a reader cannot express one it is not written.

Each example writes its run with the writer the format comes from (json, csv, transformers'
TrainerState, torch's SummaryWriter, MLflow's client into a file store, trackio's own storage
into its SQLite store, printed lines as a trainer prints them; W&B's records by wandb's own
protobuf classes, framed as wandb frames them: wandb will not write a step twice, and a
malformed record is one whose checksum fails) and reads it through
`fontaine-tui verdict --json`. The clean evidence is the run's probes with the faults taken
out (a malformed, dropped or NaN probe is no evidence, nor a step logged with two values),
held to the pre-registered rule written out in `oracle`, apart from the code under test."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fontaine_tui.cli import main
from fontaine_tui.core.preset.find import load_preset
from tests.core.log.formats.conftest import foreign_preset, loss
from tests.logs import T0, probe, train
from tests.profiles import examples

PROBES = tuple(range(10, 81, 10))  # anchor 40, endpoint 80 (foreign_preset's)
LAST = 80
# multiples of 1/64: the same number in a float32 event file and a double elsewhere
value = st.integers(0, 5 * 64).map(lambda k: k / 64)
FAULTS = ("repeat", "conflict", "nan-add", "nan", "drop", "malformed", "later", "rotate", "alert")
# the anchor (40) and the endpoint (80) are where a fault can change a read: drawn most
fault = st.tuples(st.sampled_from(FAULTS), st.sampled_from((80, 40, 80, 40, 70, 10)), value)

READERS = (
    "fontaine",
    "jsonl",
    "csv",
    "hf_trainer",
    "tensorboard",
    "tensorboard_scalars",
    "mlflow",
    "trackio",
    "lines",
    "wandb",
)
METRIC = {
    "fontaine": "eval_chunk_mae",
    "jsonl": "eval/mae",
    "csv": "val_mae",
    "hf_trainer": "eval_mae",
    "tensorboard": "eval/mae",
    "tensorboard_scalars": "eval_mae/eval",
    "mlflow": "eval/mae",
    "trackio": "eval/mae",
    "lines": "eval_mae",
    "wandb": "eval/mae",
}
EXAMPLES = {
    "tensorboard": 30,
    "tensorboard_scalars": 20,
    "mlflow": 30,
    "hf_trainer": 30,
    "trackio": 30,
}
# the [source] beyond its kind: printed lines need the patterns that read them; a reader
# that is not a kind of its own says its kind
SOURCE = {
    "lines": 'kind = "lines"\n'
    "patterns = ['step:(?P<step>\\S+) loss:(?P<loss>\\S+)',\n"
    "            'step:(?P<step>\\S+) eval_mae:(?P<eval_mae>\\S+)']",
    "tensorboard_scalars": 'kind = "tensorboard"\neval = ["eval_mae/*"]',
}
COUNT = {"examples": 0}


def alerts_of(faults: list[tuple[str, int, float]]) -> list[tuple[int, str]]:
    """The alerts the trainer raises: (step, text), the text naming the metric and a number."""
    return [(step, f"eval/mae is {x} here") for kind, step, x in faults if kind == "alert"]


def plan(values: list[float], faults: list[tuple[str, int, float]]):
    """(entries as written: (step, value, malformed?), the clean probes, rotate?)."""
    entries = [(s, v, False) for s, v in zip(PROBES, values, strict=True)]
    rotate = False
    for kind, step, x in faults:
        at = next((i for i, e in enumerate(entries) if e[0] == step), None)
        if kind == "repeat" and at is not None:
            entries.append(entries[at])
        elif kind == "conflict" and at is not None:
            entries.append((step, x if x != entries[at][1] else x + 1 / 64, False))
        elif kind == "nan-add":
            entries.append((step, math.nan, False))
        elif kind == "nan" and at is not None:
            entries[at] = (step, math.nan, False)
        elif kind == "drop" and at is not None:
            del entries[at]
        elif kind == "malformed" and at is not None:
            entries[at] = (step, entries[at][1], True)
        elif kind == "later":
            entries.append((LAST + 10, x, False))
        elif kind == "rotate":
            rotate = True
    # the clean evidence: each step's one finite value, where it has one (a step logged
    # with two values has none: only UNDECIDABLE reads it rightly)
    found: dict[int, set[float]] = {}
    for step, v, bad in entries:
        if not bad and math.isfinite(v):
            found.setdefault(step, set()).add(v)
    clean = {step: next(iter(vs)) for step, vs in found.items() if len(vs) == 1}
    return entries, clean, rotate


def oracle(clean: dict[int, float]) -> tuple[str, bool]:
    """The pre-registered rule on the clean evidence, written out here on its own (anchor
    40, endpoint 80, lower is better, HEALTHY at a delta <= 0.3, SAME-DRIFT at >= 1.0): the
    read is at the endpoint; without it, PROVISIONAL at the latest probe before it while the
    run can still reach it, UNDECIDABLE once the log went past it."""
    if LAST in clean:
        read, provisional = LAST, False
    elif max(clean, default=0) > LAST:
        return "UNDECIDABLE", False
    else:
        before = [s for s in clean if s < LAST]
        if not before:
            return "UNDECIDABLE", True
        read, provisional = max(before), True
    if 40 not in clean or read < 40:
        return "UNDECIDABLE", provisional
    delta = clean[read] - clean[40]
    label = "HEALTHY" if delta <= 0.3 else "SAME-DRIFT" if delta >= 1.0 else "AMBIGUOUS"
    return label, provisional


def _train_steps(entries) -> int:
    return max([LAST, *(s for s, _, _ in entries)])


def write_fontaine(folder: Path, entries, rotate: bool) -> None:
    lines = []
    by_step: dict[int, list] = {}
    for e in entries:
        by_step.setdefault(e[0], []).append(e)
    late = [e for e in entries[len(PROBES) :] if e[0] <= LAST]  # appended faults
    for s in range(5, _train_steps(entries) + 1, 5):
        lines.append(json.dumps(train(s, T0 + s)))
        for step, v, bad in by_step.get(s, []):
            if (step, v, bad) in late and s <= LAST:
                continue
            rec = json.dumps(probe(step, T0 + s, v, 1.0))
            lines.append(rec[:-8] if bad else rec)
    lines += [json.dumps(probe(step, T0 + LAST + 1, v, 1.0)) for step, v, _ in late]
    text = "\n".join(lines) + "\n"
    if rotate:  # logrotate's copytruncate: the older half in .1, the rest in the live file
        cut = text.index("\n", len(text) // 2) + 1
        (folder / "train_log.jsonl.1").write_text(text[:cut])
        text = text[cut:]
    (folder / "train_log.jsonl").write_text(text)


def _rows(entries):
    """(step, kind, value, malformed) in writing order: train every 5 steps, each probe
    after its step's train row, appended faults at the end."""
    out = []
    first = entries[: len(PROBES)]
    for s in range(5, _train_steps(entries) + 1, 5):
        out.append((s, "train", loss(s), False))
        out += [(step, "eval", v, bad) for step, v, bad in first if step == s]
        out += [
            (step, "eval", v, bad)
            for step, v, bad in entries[len(PROBES) :]
            if step == s and step > LAST
        ]
    out += [(step, "eval", v, bad) for step, v, bad in entries[len(PROBES) :] if step <= LAST]
    return out


def write_jsonl(folder: Path, entries, rotate: bool) -> None:
    with open(folder / "log.jsonl", "w") as f:
        for step, kind, v, bad in _rows(entries):
            rec = json.dumps(
                {"step": step, "loss": v} if kind == "train" else {"step": step, "eval/mae": v}
            )
            f.write((rec[:-3] if bad else rec) + "\n")


def write_csv(folder: Path, entries, rotate: bool) -> None:
    with open(folder / "metrics.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "train_loss", "val_mae"])
        for step, kind, v, bad in _rows(entries):
            at = f"{step}.5" if bad else step
            w.writerow([at, v, ""] if kind == "train" else [at, "", v])


def write_hf(folder: Path, entries, rotate: bool) -> None:
    from transformers import TrainerState

    history = [
        {"loss": v, "step": step}
        if kind == "train"
        else {"eval_mae": v, "step": f"{step}" if bad else step}
        for step, kind, v, bad in _rows(entries)
    ]
    TrainerState(global_step=LAST, log_history=history).save_to_json(
        str(folder / "trainer_state.json")
    )


def write_tb(folder: Path, entries, rotate: bool) -> None:
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(folder))
    for step, kind, v, bad in _rows(entries):
        if not bad:  # a malformed scalar cannot be written: it is a dropped one
            w.add_scalar("train/loss" if kind == "train" else "eval/mae", v, step)
    w.close()


def write_tb_scalars(folder: Path, entries, rotate: bool) -> None:
    """The probes through add_scalars: a writer of their own in the sub-folder `eval_mae`,
    read as the key `eval_mae/eval`; the train loss in the run's own folder."""
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(folder))
    for step, kind, v, bad in _rows(entries):
        if kind == "train":
            w.add_scalar("train/loss", v, step)
        elif not bad:
            w.add_scalars("eval", {"mae": v}, step)
    w.close()


def write_mlflow(folder: Path, entries, rotate: bool) -> None:
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=(folder / "mlruns").as_uri())
    run = client.create_run(client.create_experiment("property"))
    metrics = [
        Metric("train/loss" if kind == "train" else "eval/mae", v, 1000 + n, step)
        for n, (step, kind, v, bad) in enumerate(_rows(entries))
        if not bad
    ]
    for k in range(0, len(metrics), 500):
        client.log_batch(run.info.run_id, metrics=metrics[k : k + 500])
    client.set_terminated(run.info.run_id)


def write_trackio(folder: Path, entries, rotate: bool) -> None:
    """Through trackio's own storage (the writer trackio.log's sender thread calls), one
    metrics row per logged dict; a malformed probe is a text value."""
    from trackio import sqlite_storage

    was = sqlite_storage.TRACKIO_DIR
    sqlite_storage.TRACKIO_DIR = folder
    try:
        rows = [
            ({"train/loss": v} if kind == "train" else {"eval/mae": f"{v}?" if bad else v}, step)
            for step, kind, v, bad in _rows(entries)
        ]
        sqlite_storage.SQLiteStorage.bulk_log(
            "property", "only", [m for m, _ in rows], steps=[s for _, s in rows]
        )
    finally:
        sqlite_storage.TRACKIO_DIR = was


def write_lines(folder: Path, entries, rotate: bool) -> None:
    """As a trainer prints them (Python's float repr; NaN as `nan`), with other output
    between; a malformed probe's number is not one."""
    with open(folder / "engine.out.log", "w") as f:
        f.write("Loading dataset ...\n")
        for step, kind, v, bad in _rows(entries):
            if kind == "train":
                f.write(f"INFO step:{step} loss:{v}\n")
            else:
                f.write(f"INFO step:{step} eval_mae:{v}{'?' if bad else ''}\n")
        f.write("End of training\n")


def write_wandb(folder: Path, entries, rotate: bool, alerts=()) -> None:
    """The records by wandb's own protobuf classes; `alerts` as AlertRecords before the exit."""
    from wandb.proto import wandb_internal_pb2 as pb

    from tests.core.log.formats.wandbkit import exit_record, frame, history

    payloads, bad = [], []
    for step, kind, v, malformed in _rows(entries):
        payloads.append(history(step, {"train/loss" if kind == "train" else "eval/mae": v}))
        bad.append(malformed)
    raised = [
        pb.Record(alert=pb.AlertRecord(title="x", text=text, level="ERROR")).SerializeToString()
        for _, text in alerts
    ]
    data = bytearray(frame([*payloads, *raised, exit_record(0)]))
    for k, malformed in enumerate(bad):
        if malformed:  # the record's last byte changed: its checksum fails
            data[len(frame(payloads[: k + 1])) - 1] ^= 1
    run = folder / "wandb" / "offline-run-20260101_000000-prop1"
    run.mkdir(parents=True)
    (run / "run-prop1.wandb").write_bytes(bytes(data))


def _alert_line(step: int, text: str) -> str:
    return json.dumps({"kind": "alert", "step": step, "level": "error", "title": "x", "text": text})


def alert_fontaine(folder: Path, alerts) -> None:
    with open(folder / "train_log.jsonl", "a") as f:
        f.writelines(_alert_line(step, text) + "\n" for step, text in alerts)


def alert_jsonl(folder: Path, alerts) -> None:
    with open(folder / "log.jsonl", "a") as f:
        f.writelines(_alert_line(step, text) + "\n" for step, text in alerts)


def alert_trackio(folder: Path, alerts) -> None:
    """Through trackio's own storage (the writer trackio.alert's sender thread calls)."""
    from trackio import sqlite_storage

    was = sqlite_storage.TRACKIO_DIR
    sqlite_storage.TRACKIO_DIR = folder
    try:
        sqlite_storage.SQLiteStorage.bulk_alert(
            "property",
            "only",
            ["x"] * len(alerts),
            [text for _, text in alerts],
            ["error"] * len(alerts),
            [step for step, _ in alerts],
        )
    finally:
        sqlite_storage.TRACKIO_DIR = was


ALERTS = {
    "fontaine": alert_fontaine,
    "jsonl": alert_jsonl,
    "trackio": alert_trackio,
}  # and W&B's (write_wandb); MLflow, TensorBoard, CSV, trainer_state, printed lines: none

WRITERS = {
    "fontaine": write_fontaine,
    "jsonl": write_jsonl,
    "csv": write_csv,
    "hf_trainer": write_hf,
    "tensorboard": write_tb,
    "tensorboard_scalars": write_tb_scalars,
    "mlflow": write_mlflow,
    "trackio": write_trackio,
    "lines": write_lines,
    "wandb": write_wandb,
}
NEEDS = {
    "hf_trainer": "transformers",
    "tensorboard": "tensorboard",
    "tensorboard_scalars": "tensorboard",
    "mlflow": "mlflow",
    "trackio": "trackio",
    "wandb": "wandb",
}


def _preset(base: Path, reader: str):
    path = foreign_preset(base, SOURCE.get(reader, f'kind = "{reader}"'), metric=METRIC[reader])
    if reader == "fontaine":  # our own log: the recipe, with probes every 10 to step 80
        text = (Path(__file__).parents[3] / "presets" / "demosonly_1gpu.toml").read_text()
        head = text[: text.index("[verdict]")]
        for was, now in (
            ("steps = 1000", f"steps = {LAST}"),
            ("eval_every = 250", "eval_every = 10"),
            ("save_every = 500", "save_every = 40"),
        ):
            head = head.replace(was, now)
        body = path.read_text()
        path.write_text(head + body[body.index("[verdict]") :])
    load_preset(str(path))  # a preset the suite can read
    return path


@pytest.mark.parametrize("reader", READERS)
def test_the_verdict_is_the_clean_evidences_or_undecidable(reader, monkeypatch):
    if reader in NEEDS:
        pytest.importorskip(NEEDS[reader])
    if reader.startswith("tensorboard"):
        pytest.importorskip("torch")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    base = Path(tempfile.mkdtemp(prefix="prop-"))
    preset_path = _preset(base, reader)
    write = WRITERS[reader]

    @settings(
        max_examples=examples(EXAMPLES.get(reader, 60)),
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(
        values=st.lists(value, min_size=len(PROBES), max_size=len(PROBES)),
        faults=st.lists(fault, min_size=1, max_size=3),
    )
    @example(values=[1.0] * len(PROBES), faults=[("drop", 80, 0.0), ("later", 80, 3.0)])
    @example(values=[1.0] * len(PROBES), faults=[("malformed", 80, 0.0), ("later", 80, 3.0)])
    @example(values=[1.0] * len(PROBES), faults=[("conflict", 80, 3.0), ("rotate", 80, 0.0)])
    @example(values=[1.0] * len(PROBES), faults=[("alert", 80, 3.0), ("alert", 40, 0.0)])
    def check(values, faults):
        entries, clean, rotate = plan(values, faults)
        folder = Path(tempfile.mkdtemp(dir=base))
        try:
            raised = alerts_of(faults)
            if reader == "wandb":
                write_wandb(folder, entries, rotate, raised)
            else:
                write(folder, entries, rotate and reader == "fontaine")
            if raised and reader in ALERTS:
                ALERTS[reader](folder, raised)
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                code = main(["verdict", str(folder), "--preset", str(preset_path), "--json"])
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        COUNT["examples"] += 1
        want = oracle(clean)
        if code == 2:
            assert err.getvalue().count("\n") == 1, err.getvalue()
            return
        doc = json.loads(out.getvalue())
        got = (doc["verdict"], doc["provisional"])
        assert got == want or doc["verdict"] == "UNDECIDABLE", (
            f"{reader}: {got} where the clean evidence reads {want} ({doc['reason']}); "
            f"faults {faults}"
        )

    try:
        check()
    finally:
        shutil.rmtree(base, ignore_errors=True)
        if os.environ.get("FONTAINE_PROPERTY_COUNT"):
            print(f"\n{reader}: {COUNT['examples']} examples")
