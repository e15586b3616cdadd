"""Every number a run logs reaches the metric browser as a series by step (model/metrics.py).

The oracle flattens each record with json alone, apart from the readers under test."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import pytest

import fontaine_tui
from fontaine_tui.core.log.read import load_lines, load_log
from fontaine_tui.model.metrics import MetricIndex, compile_filter, matching, series

DEMO_LOG = Path(fontaine_tui.__file__).parent / "demo" / "run" / "train_log.jsonl"
FRAME = ("kind", "step", "time")


def _leaves(obj: dict, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in obj.items():
        if prefix == "" and key in FRAME:
            continue
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[f"{prefix}{key}"] = float(value)
    return out


def _oracle(path: Path) -> dict[tuple[str, str], dict[int, float]]:
    """(kind, key) -> {step: value} for every number of every train and eval record."""
    want: dict[tuple[str, str], dict[int, float]] = {}
    for raw in path.read_text().splitlines():
        rec = json.loads(raw)
        kind = {"train": "train", "eval": "probe"}.get(rec["kind"])
        if kind:
            for key, value in _leaves(rec).items():
                want.setdefault((kind, key), {})[rec["step"]] = value
    return want


def _same(a: float, b: float) -> bool:
    return repr(a) == repr(b)


def _check_every_field(path: Path) -> MetricIndex:
    want = _oracle(path)
    index = MetricIndex(load_log(path), hidden=False)
    by_key = {(index.kind(n), index.series(n).key): n for n in index.names()}
    assert set(want) <= set(by_key), sorted(set(want) - set(by_key))
    for (kind, key), points in want.items():
        s = index.series(by_key[kind, key])
        got = dict(zip(s.steps, s.values, strict=True))
        assert got.keys() == points.keys(), key
        assert all(_same(got[k], v) for k, v in points.items()), key
    return index


def test_every_number_of_the_engine_log_is_a_series():
    index = _check_every_field(DEMO_LOG)
    names = index.names()
    assert {"loss", "lr", "grad_norm", "eval_ar_ce", "breakdown.rig", "n_frames"} <= set(names)
    assert "time" not in names


def test_a_train_record_s_other_numbers_are_kept_nan_as_nan(tmp_path):
    """An engine-shaped log whose train lines carry more keys (nested, NaN, infinite)."""
    path = tmp_path / "train_log.jsonl"
    lines = []
    for raw in DEMO_LOG.read_text().splitlines():
        rec = json.loads(raw)
        if rec["kind"] == "train":
            s = rec["step"]
            rec["opt"] = {"lr_group1": s * 1e-6, "momentum": 0.9}
            rec["tokens_per_s"] = float("nan") if s % 7 == 0 else 100.0 + s
            if s == 5:
                rec["spike"] = float("inf")
            rec["note"] = "text is not a number"
        lines.append(json.dumps(rec))  # NaN and Infinity as Python's json writes them
    path.write_text("\n".join(lines) + "\n")
    index = _check_every_field(path)
    tps = index.series("tokens_per_s")
    assert math.isnan(dict(zip(tps.steps, tps.values, strict=True))[7])
    assert list(index.series("spike").steps) == [5]  # logged once: one point, no filler
    assert index.series("spike").values[0] == math.inf
    assert "note" not in index.names()
    assert index.series("opt.lr_group1").values[9] == pytest.approx(10e-6)


def test_a_resume_drops_the_extra_values_past_it():
    lines = [b'{"kind":"train","step":%d,"loss":1.0,"foo":%d}' % (s, s) for s in range(1, 6)] + [
        b'{"kind":"event","step":3,"event":"resume","detail":""}',
        b'{"kind":"train","step":4,"loss":1.0,"foo":40}',
    ]
    store = load_lines([b"\n".join(lines) + b"\n"])
    foo = series(store, "foo", hidden=False)
    assert list(foo.steps) == [1, 2, 3, 4]
    assert list(foo.values) == [1.0, 2.0, 3.0, 40.0]


def test_a_train_record_logging_hundreds_of_numbers_keeps_every_one():
    # per-layer norms: 300 keys on one line, more than an eval record keeps
    layers = {f"layer{i}/grad_norm": i / 10 for i in range(300)}
    lines = [
        json.dumps({"kind": "train", "step": s, "loss": 1.0, **layers}).encode() for s in (1, 2)
    ]
    index = MetricIndex(load_lines([b"\n".join(lines) + b"\n"]), hidden=False)
    assert sum(n.startswith("layer") for n in index.names()) == 300
    assert list(index.series("layer299/grad_norm").values) == [29.9, 29.9]


def test_a_repeated_train_line_with_extras_is_a_repeat():
    line = b'{"kind":"train","step":1,"loss":1.0,"a":1,"b":{"c":NaN}}\n'
    store = load_lines([line + b'{"kind":"train","step":1,"b":{"c":NaN},"a":1,"loss":1.0}\n'])
    assert store.repeats == 1 and store.out_of_order_count == 0


@pytest.fixture(scope="module")
def tb_folder(tmp_path_factory):
    """A run written by torch's SummaryWriter: a loss, a learning rate, other train tags
    (one logged at a few steps only), eval tags."""
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    folder = tmp_path_factory.mktemp("tb") / "run"
    w = SummaryWriter(str(folder))
    for step in range(1, 41):
        w.add_scalar("train/loss", 2.0 / step, step)
        w.add_scalar("train/learning_rate", 1e-3, step)
        w.add_scalar("train/grad_norm", float("nan") if step == 13 else 1.5, step)
        w.add_scalar("gpu/mem_gb", 10.0 + step, step)
        if step % 10 == 0:
            w.add_scalar("eval/mae", 1.0 / step, step)
            w.add_scalar("eval/rig/mae", 2.0 / step, step)
            w.add_scalar("speed/tokens", 7.0, step)
    w.close()
    return folder


def test_every_tag_of_a_tensorboard_run_is_a_series(tb_folder):
    from fontaine_tui.core.log.formats.cold import load_source
    from fontaine_tui.core.log.formats.source import SourceSpec

    index = MetricIndex(load_source(tb_folder, SourceSpec("tensorboard")).store, hidden=False)
    names = index.names()
    for tag in ("train/loss", "train/learning_rate", "train/grad_norm", "gpu/mem_gb"):
        assert list(index.series(tag).steps) == list(range(1, 41)), tag
    assert list(index.series("speed/tokens").steps) == [10, 20, 30, 40]
    assert list(index.series("eval/rig/mae").steps) == [10, 20, 30, 40]
    assert index.kind("eval/mae") == "probe"
    assert math.isnan(index.series("train/grad_norm").values[12])
    assert index.series("gpu/mem_gb").values[-1] == 50.0
    assert "ar_ce" not in names  # a column this trainer never wrote is not listed


def test_a_live_grouper_keeps_the_other_keys():
    """A step's keys reach the store through the grouper too (JSONL, trackio, W&B live)."""
    from fontaine_tui.core.log.formats.grouper import FieldMap, Grouper
    from fontaine_tui.core.log.store import RunStore

    g, out = Grouper(FieldMap()), []
    for step in range(1, 4):
        g.add_row(step, float(step), {"train/loss": 1.0, "sys/cpu": step * 10.0}, out)
        g.settle_train(out)  # the writer flushed: the train record goes out early
    g.add_row(3, 3.0, {"eval/mae": 0.5}, out)
    g.flush(out)
    store = RunStore()
    for rec in out:
        store.add(rec)
    index = MetricIndex(store, hidden=False)
    assert list(index.series("sys/cpu").values) == [10.0, 20.0, 30.0]
    assert list(index.series("eval/mae").steps) == [3]


def test_a_filter_is_a_case_insensitive_search_and_a_bad_one_says_so():
    names = ["loss", "eval/mae", "eval/rig/mae", "train/lr"]
    assert matching(names, "MAE$") == ["eval/mae", "eval/rig/mae"]
    assert matching(names, "") == names
    with pytest.raises(ValueError, match=r"not a regular expression: '\(eval'"):
        compile_filter("(eval")


def test_an_unknown_field_is_named():
    with pytest.raises(KeyError, match="no field 'nope'"):
        series(load_log(DEMO_LOG), "nope", hidden=False)


def test_only_numbers_are_fields():
    """A boolean, a string, null, an array or an integer past the float range is no number."""
    big = b"1" + b"0" * 400
    line = (
        b'{"kind":"train","step":1,"loss":1.0,"flag":true,"s":"x","n":null,"a":[1],"i":3,'
        b'"big":' + big + b',"d":{"x":2,"y":false}}\n'
    )
    index = MetricIndex(load_lines([line]), hidden=False)
    assert [n for n in index.names() if n != "loss"] == ["d.x", "i"]
    assert index.series("i").values[0] == 3.0


def test_every_column_of_a_metrics_csv_is_a_series(tmp_path):
    """A metrics.csv as Lightning's CSVLogger lays it out (written by Python's csv): a row per
    log call, the cells of keys not logged in it left empty."""
    import csv

    from fontaine_tui.core.log.formats.cold import load_source
    from fontaine_tui.core.log.formats.source import SourceSpec

    cols = ["step", "epoch", "train_loss", "lr-AdamW", "gpu_mem", "val_mae"]
    with (tmp_path / "metrics.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, cols)
        w.writeheader()
        for s in range(1, 21):
            w.writerow({"step": s, "epoch": s // 10, "train_loss": 1 / s, "lr-AdamW": 1e-3})
            if s % 5 == 0:
                w.writerow({"step": s, "gpu_mem": "nan" if s == 10 else 7.5, "val_mae": 2 / s})
    index = MetricIndex(load_source(tmp_path, SourceSpec("csv")).store, hidden=False)
    assert "epoch" not in index.names()  # the readers hold it as the step's frame, as `step`
    for name in ("train_loss", "lr-AdamW"):
        assert list(index.series(name).steps) == list(range(1, 21)), name
    mem = index.series("gpu_mem")
    assert list(mem.steps) == [5, 10, 15, 20] and math.isnan(mem.values[1])
    assert index.kind("val_mae") == "probe" and list(index.series("val_mae").steps) == [
        5,
        10,
        15,
        20,
    ]


def test_a_train_column_is_listed_once_a_value_arrives():
    from fontaine_tui.core.log.records import train_point
    from fontaine_tui.core.log.store import RunStore

    nan = float("nan")
    store = RunStore()  # no meta record: another trainer's run
    index = MetricIndex(store, hidden=False)
    for s in range(1, 4):
        store.add(train_point(s, float(s), [1.0] + [nan] * 7))
    assert index.names() == ["loss"]
    store.add(train_point(4, 4.0, [1.0, nan, nan, 5e-4] + [nan] * 4))
    assert index.names() == ["loss", "lr"]
    assert list(index.series("lr").values)[-1] == 5e-4


LAYERS = [f"layer{i:03d}.attention.output.projection.gradient_norm_mean" for i in range(200)]


def test_a_pattern_that_backtracks_without_end_returns_in_time():
    """(\\w+\\.?)+z$ over 56-character names: Python's re backtracks for minutes on each."""
    start = time.monotonic()
    assert matching(LAYERS, r"(\w+\.?)+z$") == []
    assert matching(LAYERS, r"(\w|\.)+MEAN$") == LAYERS  # still case-insensitive
    assert time.monotonic() - start < 1.0


@pytest.mark.parametrize(
    "names",
    [
        [*LAYERS, "train/" + "a" * 40],  # one name the pattern never finishes on
        [f"{'a' * 21}{i}" for i in range(400)],  # each name a little slow: all of them, not
    ],
)
def test_a_filter_past_its_time_over_all_the_names_is_refused(names):
    start = time.monotonic()
    with pytest.raises(ValueError, match="^the pattern takes too long on these names$"):
        matching(names, "(a|aa)+b")
    assert time.monotonic() - start < 1.0
    want = [n for n in names if re.search("^LAYER00[12]|A{21}3", n, re.IGNORECASE)]
    assert matching(names, "^LAYER00[12]|A{21}3") == want and want  # an ordinary one is quick


def test_a_hidden_read_lists_the_probe_fields_with_no_value():
    """While the read is hidden the evidence gate gives no probe's value: the fields are
    listed (their names are no read), their series empty; the train series stay whole."""
    store = load_log(DEMO_LOG)
    index = MetricIndex(store, hidden=True)
    assert {"eval_chunk_mae", "breakdown.rig", "loss"} <= set(index.names())
    assert len(index.series("eval_chunk_mae").values) == 0
    assert len(index.series("loss").values) == len(store.steps)
    index.hidden = False  # the final read is in: the same index shows them
    assert len(index.series("eval_chunk_mae").values) == len(store.probe_steps()) > 0


def test_a_probe_value_that_is_not_a_number_is_nan_at_its_step_as_the_verdict_reads_it():
    """A boolean, a string or null an eval record logged is the field's NaN at that step (the
    verdict's `Probe.value`), never a step left out; a field logged only so is still listed,
    while the read is hidden too."""
    store = load_lines(
        [
            b'{"kind":"eval","step":10,"time":1.0,"eval_chunk_mae":3.0,"flag":1.0}\n',
            b'{"kind":"eval","step":20,"time":2.0,"eval_chunk_mae":true,"flag":null,'
            b'"note":"x","nan":NaN}\n',
        ]
    )
    index = MetricIndex(store, hidden=False)
    got = {n: (list(index.series(n).steps), index.series(n).values) for n in index.names()}
    assert set(got) == {"eval_chunk_mae", "flag", "note", "nan"}
    assert [got[n][0] for n in ("eval_chunk_mae", "flag", "note", "nan")] == [
        [10, 20],
        [10, 20],
        [20],
        [20],
    ]
    assert got["eval_chunk_mae"][1][0] == 3.0 and got["flag"][1][0] == 1.0
    assert all(math.isnan(got[n][1][-1]) for n in got)
    for step in (10, 20):
        probe = store.probes[step]
        assert repr(got["eval_chunk_mae"][1][step // 10 - 1]) == repr(probe.value("eval_chunk_mae"))
    hidden = MetricIndex(store, hidden=True)
    assert set(hidden.names()) == set(got)
    assert all(len(hidden.series(n).values) == 0 for n in hidden.names())
