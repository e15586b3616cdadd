"""Event files written by torch.utils.tensorboard.SummaryWriter, read without TensorFlow."""

from __future__ import annotations

import math

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.log.formats.tensorboard import TensorBoardDecoder
from fontaine_tui.core.log.formats.tfrecord import Framer, FramingError, frame
from tests.core.log.formats.conftest import EVAL, foreign_preset, loss


def event_file(folder):
    [path] = folder.glob("events.out.tfevents.*")
    return path


def test_both_scalar_styles_read_as_tensorboard_reads_them(tb_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tb_run), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    loaded = load_source(tb_run, SourceSpec("tensorboard"))
    store = loaded.store
    # the classic style (simple_value): the train loss, as float32 like TensorBoard's
    theirs = [(e.step, e.value) for e in acc.Scalars("train/loss")]
    assert list(store.steps) == [s for s, _ in theirs] == list(range(1, 81))
    assert list(store.columns["loss"]) == [v for _, v in theirs]
    assert list(store.columns["loss"]) == pytest.approx([loss(s) for s in range(1, 81)])
    # the tensor style: every eval tag at its step is one probe
    assert store.probe_steps() == sorted(EVAL)
    from tensorboard.util import tensor_util

    for tag in ("eval/chunk_mae", "eval/rig"):
        theirs = {e.step: float(tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(tag)}
        assert {s: p.fields[tag] for s, p in store.probes.items()} == theirs
    assert store.probes[40].value("eval/chunk_mae") == pytest.approx(EVAL[40])
    assert set(store.probes[40].fields) == {"eval/chunk_mae", "eval/rig"}  # text/histogram not
    assert loaded.kind == "tensorboard" and "train/loss" in loaded.keys
    # the step time, from the wall times between steps
    assert all(v >= 0 for v in list(store.columns["step_s"])[1:])


def test_a_torn_tail_waits_for_the_rest_and_a_bad_crc_is_counted(tb_run):
    data = event_file(tb_run).read_bytes()
    whole = TensorBoardDecoder()
    everything = whole.feed(data) + whole.finish()
    for cut in (len(data) - 3, len(data) // 2 + 7, 11):  # inside a record, inside a header
        dec = TensorBoardDecoder()
        first = dec.feed(data[:cut])
        assert dec.framer.pending > 0  # the torn record is held, not an error
        rest = dec.feed(data[cut:]) + dec.finish()
        assert dec.framer.pending == 0
        assert first + rest == everything
    # a flipped payload byte: that record is skipped and counted, the rest read
    framer = Framer()
    good = frame(b"\x10\x05")  # an Event with step 5 and nothing else
    bad = bytearray(good)
    bad[12] ^= 0xFF
    framer.feed(bytes(bad) + good)
    assert (framer.records, framer.bad_records) == (2, 1)
    with pytest.raises(FramingError, match="bad record length checksum at byte 0"):
        Framer().feed(b"{not an event file, but twelve bytes or more}")


def test_the_verdict_of_a_tensorboard_run(tb_run, tmp_path, capsys):
    preset = foreign_preset(tmp_path, 'kind = "tensorboard"')  # healthy <= 0.3, drift >= 1.0
    code = main(["verdict", str(tb_run), "--preset", str(preset)])
    out = capsys.readouterr().out
    delta = EVAL[80] - EVAL[40]
    assert code == 4, out  # AMBIGUOUS: +0.8 is between the bounds
    assert (
        f"eval/chunk_mae(40) = {EVAL[40]:.4f}, eval/chunk_mae(80) = {EVAL[80]:.4f}, "
        f"delta = +{delta:.4f}" in out
    )
    assert "(tensorboard): 88 records" in out  # 80 train points and 8 probes
    preset = foreign_preset(tmp_path, 'kind = "tensorboard"', drift=0.75)
    assert main(["verdict", str(tb_run), "--preset", str(preset), "--json"]) == 3
    import json

    doc = json.loads(capsys.readouterr().out)
    assert (doc["verdict"], doc["read_step"]) == ("SAME-DRIFT", 80)


def test_detection_and_one_line_errors(tb_run, tmp_path, capsys):
    preset = foreign_preset(tmp_path, 'kind = "tensorboard"', metric="eval/nope")
    assert main(["verdict", str(tb_run), "--preset", str(preset)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "verdict.metric: no key 'eval/nope' in this run (eval keys: eval/chunk_mae, eval/rig)"
    )
    assert len(err.splitlines()) == 1 and "events.out.tfevents." in err
    # no [source]: the folder's contents say it is TensorBoard
    from fontaine_tui.core.log.formats.locate import detect

    assert detect(tb_run) == "tensorboard"
    assert math.isfinite(
        load_source(tb_run, SourceSpec("tensorboard")).store.probes[80].value("eval/rig")
    )


def test_bank_a_tensorboard_run_and_read_another_against_it(tb_run, tmp_path, capsys):
    """A foreign run as a banked comparator: its whole curve, by the source's own key."""
    from fontaine_tui.core.bank import store as bank
    from fontaine_tui.core.preset.find import load_preset

    assert main(["bank", "add", str(tb_run), "--as", "tb_ref"]) == 2
    assert "its log does not say it ended; bank it with --ended" in capsys.readouterr().err
    assert main(["bank", "add", str(tb_run), "--as", "tb_ref", "--ended"]) == 0
    entry = bank.get("tb_ref")
    assert entry.doc["format"] == "tensorboard"
    assert sorted(entry.probes()) == sorted(EVAL)
    assert entry.value(80, "eval/chunk_mae") == pytest.approx(EVAL[80])
    path = foreign_preset(tmp_path, 'kind = "tensorboard"')
    path.write_text(path.read_text() + '\n[comparators.ref]\nbank = "tb_ref"\n')
    ref = load_preset(path).comparators["ref"]
    assert ref.delta == pytest.approx(EVAL[80] - EVAL[40])
    assert ref.bank == f"tb_ref@{entry.sha256}"


def test_steps_written_at_one_wall_time_give_no_zero_seconds_a_step(tmp_path):
    """A writer that stamps ten steps with one wall time: each tenth step is timed over the
    ten before it, the others are not measured; never 0 s/step."""
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    folder = tmp_path / "batched"
    w = SummaryWriter(str(folder))
    for step in range(1, 41):
        w.add_scalar("train/loss", loss(step), step, walltime=1000.0 + 5.0 * ((step - 1) // 10))
    w.close()
    store = load_source(folder, SourceSpec("tensorboard")).store
    rates = {
        s: x for s, x in zip(store.steps, store.columns["step_s"], strict=True) if not math.isnan(x)
    }
    assert rates == {11: 0.5, 21: 0.5, 31: 0.5}, rates
