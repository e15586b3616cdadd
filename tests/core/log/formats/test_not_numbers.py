"""A JSONL log whose rule metric is not a number at the endpoint: a boolean, a string, an array.

The value is kept with what it is, as our own log keeps it: the endpoint is probed, the verdict
reads UNDECIDABLE there naming the value, and the count is said in the log's notices. It is
never dropped, which read the probe before the endpoint as the run's label."""

from __future__ import annotations

import json

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.follow.laststep import quiet
from fontaine_tui.core.log.formats.rows import JsonlDecoder
from fontaine_tui.core.log.store import RunStore
from tests.core.log.formats.conftest import EVAL, foreign_preset, loss

JSONL = 'kind = "jsonl"'
SPLIT = 'kind = "jsonl"\nprobe_field = "split"\nprobe_value = "eval"'


def _verdict(folder, preset, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["verdict", str(folder), "--preset", str(preset), "--json"])
    out = capsys.readouterr()
    assert out.err == "", out.err
    return code, json.loads(out.out)


def _log(path, endpoint: dict, split: bool = False, train: dict | None = None) -> None:
    """Probes of EVAL (eval/mae), the one at step 80 replaced by `endpoint`'s keys."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for step in range(1, 81):
        lines.append(json.dumps({"step": step, "loss": loss(step), **(train or {})}))
        if step in EVAL:
            evals = endpoint if step == 80 else {"eval/mae": EVAL[step]}
            if split:
                evals = {"split": "eval", **{k.removeprefix("eval/"): v for k, v in evals.items()}}
            lines.append(json.dumps({"step": step, **evals}))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    "value, said",
    [
        (True, "true (a boolean)"),
        (False, "false (a boolean)"),
        ("2.9", "a string ('2.9')"),
        ([2.9], "a JSON array"),
    ],
)
@pytest.mark.parametrize("beside", [{}, {"eval/other": 1.0}], ids=["alone", "beside-a-number"])
def test_a_metric_not_a_number_at_the_endpoint_is_undecidable_there(
    tmp_path, capsys, value, said, beside
):
    _log(tmp_path / "run" / "log.jsonl", {"eval/mae": value, **beside})
    preset = foreign_preset(tmp_path, JSONL, metric="eval/mae")
    code, doc = _verdict(tmp_path / "run", preset, capsys)
    assert (doc["verdict"], doc["provisional"], doc["read_step"]) == ("UNDECIDABLE", False, 80)
    assert f"eval/mae at step 80 is {said}, not a finite number" in doc["reason"], doc["reason"]
    notices = doc["log"]["notices"]
    assert any(n.startswith("1 eval value(s) not a number") and said in n for n in notices), notices
    assert code == 6


def test_a_probe_line_s_metric_not_a_number_at_the_endpoint(tmp_path, capsys):
    """A log whose probe lines are marked by a field (`probe_field`): the same."""
    _log(tmp_path / "run" / "log.jsonl", {"eval/mae": True}, split=True)
    preset = foreign_preset(tmp_path, SPLIT, metric="mae")
    code, doc = _verdict(tmp_path / "run", preset, capsys)
    assert (doc["verdict"], doc["read_step"]) == ("UNDECIDABLE", 80), doc["reason"]
    assert "mae at step 80 is true (a boolean), not a finite number" in doc["reason"]
    assert code == 6


def test_a_train_line_s_words_make_no_probe_and_no_notice(tmp_path, capsys):
    """A string beside the train loss ("phase": "warmup") is no eval value: the run reads
    as without it."""
    _log(tmp_path / "run" / "log.jsonl", {"eval/mae": EVAL[80]}, train={"phase": "warmup"})
    preset = foreign_preset(tmp_path, JSONL, metric="eval/mae")
    code, doc = _verdict(tmp_path / "run", preset, capsys)
    assert (doc["verdict"], doc["provisional"], doc["read_step"]) == ("AMBIGUOUS", False, 80)
    assert not any("not a number" in n for n in doc["log"]["notices"]), doc["log"]["notices"]
    assert code == 4


def test_a_value_not_a_number_logged_after_its_step_went_out_completes_the_probe():
    """A live read sends a step out once its writer is quiet; a value its writer logs for the
    step later completes its probe, a boolean as a number does: never a conflict."""
    dec, store = JsonlDecoder(), RunStore()
    first = [{"step": 80, "loss": 1.0}, {"step": 80, "eval/mae": 3.4}]
    for rec in dec.feed(b"".join(json.dumps(x).encode() + b"\n" for x in first)) + quiet(dec):
        store.add(rec)
    for rec in dec.feed(json.dumps({"step": 80, "eval/done": True}).encode() + b"\n"):
        store.add(rec)
    for rec in dec.finish():
        store.add(rec)
    assert store.conflicts == []
    probe = store.probes[80]
    assert probe.value("eval/mae") == 3.4 and probe.why_not("eval/done") == "true (a boolean)"
