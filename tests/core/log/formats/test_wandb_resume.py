"""One W&B run id written in two attempts (`wandb.init(id=..., resume="allow")`, offline): wandb
writes each attempt into a folder of its own (`offline-run-<time>-<id>/`). They are one run,
read in the order they began, the later attempt's values taking over from its first step on,
as a resume in our own log does; a value it gives again at a step the earlier attempt reached
is conflicting evidence. Two ids in one folder are still two runs to choose from."""

from __future__ import annotations

import io
import json
import math
import shutil
import struct
import zlib
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.source import SourceSpec
from tests.core.log.formats.wandbkit import BLOCK, write_runs

pytest.importorskip("wandb")

METRIC = "eval/chunk_mae"


def eval_value(step: int) -> float:
    """Falls to the anchor (step 40), then rises 0.8 by step 200."""
    return 3.0 - 0.01 * step if step <= 40 else 2.6 + 0.005 * (step - 40)


def loss(step: int) -> float:
    return 2.0 * math.exp(-step / 60) + 0.1


def rows(first: int, last: int) -> list:
    return [
        [s, {"train/loss": loss(s), **({METRIC: eval_value(s)} if s % 10 == 0 else {})}]
        for s in range(first, last + 1, 5)
    ]


def attempts(folder: Path, run_id: str, halves: list[tuple[list, int]]) -> list[dict]:
    return [
        {
            "project": "p",
            "dir": str(folder),
            "id": run_id,
            "rows": half,
            "exit": code,
            **({"resume": "allow"} if k else {}),
        }
        for k, (half, code) in enumerate(halves)
    ]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Written once by wandb: the run straight through (steps 5..200), the same run stopped
    after step 90 (exit 1) and resumed from step 85 to 200, and a run resumed at the very step
    its first attempt reached (90) with another eval value there."""
    tmp = tmp_path_factory.mktemp("wandb_resume")
    straight, resumed, again = tmp / "straight", tmp / "resumed", tmp / "again"
    twice = [dict(r[1]) for r in rows(90, 90)]
    twice[0][METRIC] = 9.0
    write_runs(
        tmp,
        [
            *attempts(straight, "whole1", [(rows(5, 200), 0)]),
            *attempts(resumed, "res1", [(rows(5, 90), 1), (rows(85, 200), 0)]),
            *attempts(again, "res2", [(rows(5, 90), 1), ([[90, twice[0]], *rows(95, 200)], 0)]),
        ],
    )
    both = tmp / "both"
    for src in (straight, resumed):
        for run in (src / "wandb").glob("*run-*"):
            shutil.copytree(run, both / "wandb" / run.name)
    return {"straight": straight, "resumed": resumed, "again": again, "both": both}


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def preset(tmp_path: Path, source: str = 'kind = "wandb"') -> Path:
    path = tmp_path / "wb.toml"
    path.write_text(f'''[run]
name = "wb"
question = "Does the eval error rise after step 40?"

[source]
{source}

[verdict]
metric = "{METRIC}"
anchor_step = 40
endpoint_step = 200
healthy_max = 0.3
drift_min = 1.0
''')
    return path


def test_wandb_writes_each_attempt_into_a_folder_of_its_own(runs):
    folders = sorted(p.name for p in (runs["resumed"] / "wandb").glob("offline-run-*"))
    assert len(folders) == 2 and all(f.endswith("-res1") for f in folders)


def test_one_run_id_in_two_attempts_reads_as_the_run_written_straight(runs):
    whole = load_source(runs["straight"], SourceSpec("wandb")).store
    loaded = load_source(runs["resumed"], SourceSpec("wandb"))
    store = loaded.store
    assert len(loaded.files) == 2 and "res1" in loaded.label
    assert list(store.steps) == list(whole.steps) == list(range(5, 201, 5))
    assert list(store.columns["loss"]) == list(whole.columns["loss"])
    assert {s: p.fields[METRIC] for s, p in store.probes.items()} == {
        s: p.fields[METRIC] for s, p in whole.probes.items()
    }
    assert store.conflicts == [] and store.out_of_order == []
    assert [p.step for p in store.superseded] == [90]  # the first attempt's, taken over
    assert [(e.step, e.event) for e in store.resumes] == [(84, "resume")]
    assert store.ended_at == 200


def _verdict(folder: Path, tmp_path: Path) -> tuple[int, dict]:
    code, out, err = cli("verdict", str(folder), "--preset", str(preset(tmp_path)), "--json")
    assert out, err
    return code, json.loads(out)


def test_the_verdict_is_the_straight_runs(runs, tmp_path):
    code, doc = _verdict(runs["resumed"], tmp_path)
    whole_code, whole = _verdict(runs["straight"], tmp_path)
    assert (doc["verdict"], doc["provisional"], code) == ("AMBIGUOUS", False, 4), doc
    assert code == whole_code
    log, whole_log = doc.pop("log"), whole.pop("log")
    assert doc == whole  # label, values, rules, provenance: all the straight run's
    assert (log["resumes"], log["replaced_steps"], log["conflicts"]) == (1, 2, 0)
    assert (whole_log["resumes"], log["notices"]) == (0, [])


def _get(folder: Path, metric: str) -> dict[int, float]:
    code, out, err = cli("get", str(folder), "-m", metric, "--json")
    assert code == 0, err
    doc = json.loads(out)
    return dict(zip(doc["steps"], doc["values"], strict=True))


def _unframe(data: bytes) -> list[bytes]:
    """The records of a run file, by LevelDB's log framing as wandb writes it."""
    out: list[bytes] = []
    parts: list[bytes] = []
    i = 7
    while i + 7 <= len(data):
        left = BLOCK - i % BLOCK
        if left < 7:
            i += left
            continue
        crc, length, kind = struct.unpack_from("<IHB", data, i)
        chunk = data[i + 7 : i + 7 + length]
        assert zlib.crc32(chunk, zlib.crc32(bytes([kind]))) == crc
        parts.append(chunk)
        if kind in (1, 4):
            out.append(b"".join(parts))
            parts = []
        i += 7 + length
    return out


def _wandb_history(folder: Path, key: str) -> dict[int, float]:
    """`key` by step as wandb's own Record reads each attempt's file, a later attempt's
    values taking over from its first step on."""
    from wandb.proto import wandb_internal_pb2 as pb

    merged: dict[int, float] = {}
    for run_file in sorted(
        (folder / "wandb").glob("offline-run-*/run-*.wandb"), key=lambda p: p.parent.name
    ):
        first = None
        for payload in _unframe(run_file.read_bytes()):
            rec = pb.Record()
            rec.ParseFromString(payload)
            if rec.WhichOneof("record_type") != "history":
                continue
            step = rec.history.step.num
            if first is None:
                first = step
                merged = {s: v for s, v in merged.items() if s < first}
            for item in rec.history.item:
                if (item.key or ".".join(item.nested_key)) == key:
                    merged[step] = json.loads(item.value_json)
    return merged


def test_get_gives_the_values_wandbs_own_records_hold(runs):
    for key in (METRIC, "train/loss"):
        got = _get(runs["resumed"], key)
        assert got == _wandb_history(runs["resumed"], key)
        assert got == _get(runs["straight"], key)


def test_another_value_at_the_step_the_first_attempt_reached_is_a_conflict(runs, tmp_path):
    store = load_source(runs["again"], SourceSpec("wandb")).store
    assert [(c.step, c.first.fields[METRIC], c.second.fields[METRIC]) for c in store.conflicts] == [
        (90, eval_value(90), 9.0)
    ]
    assert store.resumes == []  # it began at the step reached: nothing taken over


def test_two_run_ids_in_one_folder_still_ask_to_choose(runs, tmp_path):
    code, _, err = cli("verdict", str(runs["both"]), "--preset", str(preset(tmp_path)))
    assert code == 2 and "2 W&B runs" in err and "whole1" in err and "res1" in err, err
    chosen = preset(tmp_path, 'kind = "wandb"\nrun = "res1"')
    code, out, err = cli("verdict", str(runs["both"]), "--preset", str(chosen), "--json")
    assert code == 4 and json.loads(out)["read_step"] == 200, err
