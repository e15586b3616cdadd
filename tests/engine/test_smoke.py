"""A tiny run end to end: schema-valid log, checkpoints, deterministic eval."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.engine, pytest.mark.xdist_group("engine_tiny_run")]

from tests.engine.conftest import run_engine, tiny_argv  # noqa: E402
from tests.engine.enginelog_schema import check, read  # noqa: E402


@pytest.fixture(scope="module")
def smoke_run(tiny_run):
    """The test run's 20-step tiny run (tests/conftest.py), read only."""
    return tiny_run


def test_smoke_log_is_schema_v1(smoke_run):
    records = read(smoke_run / "train_log.jsonl")
    check(records)
    kinds = [r["kind"] for r in records]
    assert kinds.count("train") == 20
    assert [r["step"] for r in records if r["kind"] == "eval"] == [10, 20]
    assert [r["step"] for r in records if r["kind"] == "checkpoint"] == [10, 20]
    events = [(r["event"], r["step"]) for r in records if r["kind"] == "event"]
    assert events == [("start", 0), ("end", 20)]
    meta = records[0]
    assert meta["world_size"] == 1 and meta["device"] == "cpu"
    assert meta["recipe"]["batch_size"] == 16 and meta["recipe"]["insulate_flow"] is True
    evals = [r for r in records if r["kind"] == "eval"]
    assert set(evals[0]["breakdown"]) == {"demos", "rig"}
    assert evals[0]["n_frames"] == 256
    train = [r for r in records if r["kind"] == "train"]
    assert [r["samples"] for r in train] == [16 * s for s in range(1, 21)]


def test_smoke_log_parses_with_console_parser(smoke_run):
    from fontaine_tui.core.log.read import load_log

    store = load_log(smoke_run / "train_log.jsonl")
    counts = store.counts()
    assert counts["malformed"] == 0, store.malformed
    assert counts["records"] == counts["lines"] == len(read(smoke_run / "train_log.jsonl"))
    assert list(store.probe_steps()) == [10, 20]


def test_checkpoint_folder_is_complete(smoke_run):
    ck = smoke_run / "checkpoints" / "step-000020"
    assert {p.name for p in ck.iterdir()} == {
        "model.safetensors",
        "optimizer.pt",
        "stats.json",
        "meta.json",
    }
    meta = json.loads((ck / "meta.json").read_text())
    assert meta["step"] == 20 and meta["samples"] == 320 and "torch" in meta["rng"]
    assert not [p for p in ck.parent.iterdir() if p.name.startswith(".")]  # no temp leftovers


def test_eval_is_deterministic_for_a_checkpoint(smoke_run, corpus_dir):
    """Re-scoring the step-20 checkpoint twice gives the logged step-20 probe exactly."""
    from fontaine_engine.evaluate import Probe, eval_record
    from fontaine_engine.model import Policy
    from fontaine_engine.stats import NormStats

    from fontaine_engine import checkpoint, corpus, distributed, text

    ck = smoke_run / "checkpoints" / "step-000020"
    ctx = distributed.Context(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))
    # the task text tokenized as the run's checkpoint records
    data = text.as_recorded(corpus.load(corpus_dir), json.loads((ck / "meta.json").read_text()))
    stats = NormStats.load(ck / "stats.json")
    model = Policy("tiny")
    checkpoint.load_weights(ck, model)
    ev = Probe(data, data.eval_draw(), stats, 0, ctx)
    tr = Probe(data, data.train_slice(), stats, 1, ctx)
    first = eval_record(ev, tr, model, True)
    second = eval_record(ev, tr, model, True)
    assert first == second
    logged = [r for r in read(smoke_run / "train_log.jsonl") if r["kind"] == "eval"][-1]
    for key in ("eval_chunk_mae", "train_chunk_mae", "eval_ar_ce", "eval_flow_loss"):
        assert first[key] == pytest.approx(logged[key], rel=1e-6, abs=1e-9), key


def _in_process(argv):
    import signal

    from fontaine_engine.cli import main

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return main(argv[3:])  # in-process: the engine's own entry point
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def test_failure_after_start_logs_error_event_and_exits_1(smoke_run, corpus_dir, tmp_path, capsys):
    """An init checkpoint whose weights file is cut short fails as the weights load, after the
    meta record: `event: error` in the log, one line on stderr, exit 1."""
    import shutil

    init = tmp_path / "init" / "step-000020"
    shutil.copytree(smoke_run / "checkpoints" / "step-000020", init)
    with open(init / "model.safetensors", "r+b") as f:
        f.truncate(100)
    out = tmp_path / "run"
    assert (
        _in_process(tiny_argv(out, corpus_dir, "--init", str(init), "--num-workers", "0", steps=5))
        == 1
    )
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("engine: ") and len(err.splitlines()) == 1
    records = read(out / "train_log.jsonl")
    check(records)
    assert [r["kind"] for r in records] == ["meta", "event"]
    assert records[-1]["event"] == "error"


def test_init_that_does_not_fit_the_model_is_one_line_and_logged(
    smoke_run, corpus_dir, tmp_path, capsys
):
    """A checkpoint whose meta.json claims the recipe's size but holds another model's weights
    passes the flag check and is caught as it loads: one line, exit 2, `event: error`."""
    import json
    import shutil

    init = tmp_path / "init" / "step-000020"
    shutil.copytree(smoke_run / "checkpoints" / "step-000020", init)
    meta = json.loads((init / "meta.json").read_text())
    meta.pop("architecture", None)
    (init / "meta.json").write_text(json.dumps({**meta, "model_size": "small"}))
    argv = tiny_argv(
        tmp_path / "run", corpus_dir, "--init", str(init), "--num-workers", "0", steps=5
    )
    argv[argv.index("--model-size") + 1] = "small"
    assert _in_process(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"engine: error: --init {init}: does not load into this model")
    assert len(err.splitlines()) == 1
    records = read(tmp_path / "run" / "train_log.jsonl")
    assert [r["kind"] for r in records] == ["meta", "event"] and records[-1]["event"] == "error"


def test_init_inherit_and_random_flow_decoder(smoke_run, corpus_dir, tmp_path):
    """--init loads every weight; --flow-decoder-init random re-draws only the flow decoder."""
    from fontaine_engine.parser import build_parser
    from safetensors.torch import load_file

    from fontaine_engine import distributed, session
    from fontaine_engine import init as inits

    ck = load_file(str(smoke_run / "checkpoints" / "step-000020" / "model.safetensors"))
    for mode in ("inherit", "random"):
        args = build_parser().parse_args(
            tiny_argv(tmp_path, corpus_dir, "--init", str(smoke_run), "--flow-decoder-init", mode)[
                3:
            ]
        )
        ctx = distributed.Context(0, 1, 0, torch.device("cpu"))
        init = inits.describe(args.init)
        built = session.build_session(args, ctx, init=init)
        session.load_init(built, args, init)
        state = built.module.state_dict()
        same = {k: torch.equal(state[k], ck[k]) for k in ck}
        assert all(v for k, v in same.items() if not k.startswith("flow."))
        flow_same = [v for k, v in same.items() if k.startswith("flow.")]
        assert all(flow_same) if mode == "inherit" else not any(flow_same)


def test_probe_at_start_scores_the_starting_weights(corpus_dir, tmp_path):
    """--probe-at-start: an eval record at step 0, before any update (the untrained AR head
    reads near ln 256), then the cadence's; --eval-batch recorded in the platform."""
    out = tmp_path / "run"
    argv = tiny_argv(
        out, corpus_dir, "--probe-at-start", "--eval-batch", "7", "--precision", "tf32", steps=1
    )
    argv[argv.index("--num-workers") + 1] = "0"
    proc = run_engine(argv)
    assert proc.returncode == 0, proc.stderr
    records = read(out / "train_log.jsonl")
    check(records)
    evals = [r for r in records if r["kind"] == "eval"]
    assert [r["step"] for r in evals] == [0, 1]
    assert abs(evals[0]["eval_ar_ce"] - 5.545) < 0.3 and evals[0]["n_frames"] == 256
    assert evals[0]["eval_ar_ce"] != evals[1]["eval_ar_ce"]
    kinds = [(r["kind"], r["step"]) for r in records]
    assert kinds.index(("eval", 0)) < kinds.index(("train", 1))
    meta = records[0]
    assert meta["recipe"]["probe_at_start"] is True and meta["platform"]["eval_batch"] == 7
    assert meta["optimizer"]["weight_decay"] == 0.01 and meta["optimizer"]["no_decay_tensors"] > 0
    assert meta["platform"]["precision"] == "tf32" and meta["platform"]["tf32"] is False  # CPU
