"""The recipe and platform keys added after the first pre-registrations (micro_batch, datasets,
cameras, task_tokens, history;
precision, activation_checkpointing, compile; nnodes, node_rank, rdzv_endpoint, rdzv_id):
validated like the others, out of the hashed form at their default, and passed to the engine
and to torch.distributed.run by the launcher."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.launch.capacity import ram_estimate
from fontaine_tui.core.launch.engine_argv import build_argv
from fontaine_tui.core.preset.checks import PresetError
from fontaine_tui.core.preset.find import list_presets, load_preset
from fontaine_tui.core.preset.sections import LATER_KEYS
from fontaine_tui.core.preset.validate import preset_from_canonical
from tests.core.launch.conftest import PRESETS

DEFAULTS = {
    "micro_batch": "0",
    "datasets": '""',
    "cameras": '""',
    "task_tokens": "48",
    "history": "0",
    "precision": '"fp32"',
    "activation_checkpointing": "false",
    "compile": "false",
    "nnodes": "1",
    "node_rank": "0",
    "rdzv_endpoint": '""',
    "rdzv_id": '""',
    "probe_at_start": "false",
    "eval_batch": "64",
}
DEFAULT_VALUES = {
    "micro_batch": 0,
    "datasets": "",
    "cameras": "",
    "task_tokens": 48,
    "history": 0,
    "precision": "fp32",
    "activation_checkpointing": False,
    "compile": False,
    "nnodes": 1,
    "node_rank": 0,
    "rdzv_endpoint": "",
    "rdzv_id": "",
    "probe_at_start": False,
    "eval_batch": 64,
}
TWO_NODES = {
    "nproc": "4",
    "nnodes": "2",
    "node_rank": "1",
    "rdzv_endpoint": '"10.0.0.1:29500"',
    "backward_chunks": "1",
    "micro_batch": "12",
}


def variant(tmp_path: Path, base: str = "demosonly_1gpu", name: str = "v", **keys: str) -> Path:
    """presets/BASE.toml with `key = value` set in [recipe] or [platform] (replaced where the
    line is there, added at the top of its section where it is not)."""
    lines = (PRESETS / f"{base}.toml").read_text().splitlines()
    for key, value in keys.items():
        hit = [i for i, ln in enumerate(lines) if ln.startswith(f"{key} = ")]
        if hit:
            lines[hit[0]] = f"{key} = {value}"
        else:
            section = "[recipe]" if key in LATER_KEYS["recipe"] else "[platform]"
            lines.insert(lines.index(section) + 1, f"{key} = {value}")
    path = tmp_path / f"{name}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_new_keys_at_their_default_leave_every_shipped_hash_as_it_was(tmp_path):
    shipped, checked = list_presets(), []
    assert {"smoke", "demosonly_1gpu", "demosonly_2rank_cpu", "demosonly_1proc_cpu"} <= set(shipped)
    for name in shipped:
        try:
            before = load_preset(name)
        except PresetError as exc:  # a comparator from the bank, which a test's is not
            assert exc.key.endswith(".bank"), exc
            continue
        if before.foreign:
            continue
        checked.append(name)
        text = shipped[name].read_text()
        absent = {k: v for k, v in DEFAULTS.items() if f"\n{k} = " not in text}
        spelled = load_preset(variant(tmp_path, name, name=f"{name}_spelled", **absent))
        assert spelled.sha256 == before.sha256, name
        for section in ("recipe", "platform"):  # [gates]' key: tests/core/verdict/test_stopped.py
            keys = LATER_KEYS[section]
            at_default = {k for k in keys if getattr(spelled, section)[k] == DEFAULT_VALUES[k]}
            assert not at_default & set(spelled.canonical[section]), name
            assert set(keys) <= set(getattr(spelled, section)), name  # the values are there
    assert {"smoke", "demosonly_1gpu", "demosonly_2rank_cpu"} <= set(checked)


def test_a_new_key_set_enters_the_hash_and_round_trips(tmp_path):
    base = load_preset(variant(tmp_path, name="base", datasets='""'))
    assert "datasets" not in base.canonical["recipe"]
    for key, value in (
        ("micro_batch", "12"),
        ("datasets", '"rig"'),
        ("cameras", '"observation.images.top"'),
        ("task_tokens", "0"),
        ("history", "2"),
        ("precision", '"bf16"'),
        ("activation_checkpointing", "true"),
        ("compile", "true"),
        ("probe_at_start", "true"),
        ("eval_batch", "16"),
    ):
        p = load_preset(variant(tmp_path, name=key, **{"datasets": '""', key: value}))
        assert p.sha256 != base.sha256, key
        section = "recipe" if key in LATER_KEYS["recipe"] else "platform"
        assert key in p.canonical[section], key
        assert preset_from_canonical(p.canonical, f"prereg.json#{key}").sha256 == p.sha256
    two = load_preset(variant(tmp_path, name="two", **TWO_NODES))
    assert {"nnodes", "node_rank", "rdzv_endpoint"} <= set(two.canonical["platform"])
    assert "rdzv_id" not in two.canonical["platform"]  # left at ""


@pytest.mark.parametrize(
    ("keys", "where", "expected"),
    [
        (
            {"nnodes": "2"},
            "platform.rdzv_endpoint",
            "expected HOST:PORT of the rendezvous with platform.nnodes = 2, got ''",
        ),
        (
            {"nnodes": "2", "rdzv_endpoint": '"10.0.0.1"'},
            "platform.rdzv_endpoint",
            "expected HOST:PORT of the rendezvous with platform.nnodes = 2, got '10.0.0.1'",
        ),
        (
            {"nnodes": "2", "node_rank": "2", "rdzv_endpoint": '"h:1"'},
            "platform.node_rank",
            "expected an integer below platform.nnodes = 2, got 2",
        ),
        (
            {"node_rank": "1"},
            "platform.node_rank",
            "expected an integer below platform.nnodes = 1, got 1",
        ),
        ({"nnodes": "0"}, "platform.nnodes", "expected an integer >= 1, got 0"),
        (
            {"precision": '"fp16"'},
            "platform.precision",
            "expected one of fp32, tf32, bf16, got 'fp16'",
        ),
        ({"compile": "1"}, "platform.compile", "expected true or false, got 1"),
        (
            {"micro_batch": "10"},
            "recipe.batch_size",
            "expected a multiple of micro_batch x platform.nproc = 10, got 96",
        ),
        (
            {"micro_batch": "12", "nproc": "4", "nnodes": "2", "rdzv_endpoint": '"h:1"'},
            "recipe.backward_chunks",  # demosonly's backward_chunks = 8 on 8 ranks ...
            "expected 1 (batch_size 96 / (micro_batch 12 x platform.nproc x platform.nnodes 8)) or left "
            "out, got 8",
        ),
        (
            {"micro_batch": "12", "backward_chunks": "4"},
            "recipe.backward_chunks",  # ... one rank: 8
            "expected 8 (batch_size 96 / (micro_batch 12 x platform.nproc 1)) or left out, got 4",
        ),
        (
            {"nproc": "8"},
            "recipe.batch_size",  # the drifting recipe's 8 chunks read per rank
            "expected a multiple of backward_chunks x platform.nproc = 64, got 96; or state the "
            "per-rank micro-batch (micro_batch)",
        ),
        (
            {"nproc": "4", "nnodes": "2", "rdzv_endpoint": '"h:1"'},
            "recipe.batch_size",
            "expected a multiple of backward_chunks x platform.nproc x platform.nnodes = 64, got 96; "
            "or state the per-rank micro-batch (micro_batch)",
        ),
    ],
    ids=[
        "no-endpoint",
        "endpoint-without-port",
        "node-rank-past",
        "node-rank-one-node",
        "nnodes-0",
        "precision",
        "compile-type",
        "micro-not-dividing",
        "chunks-8-vs-micro-8-ranks",
        "chunks-disagree",
        "chunks-per-rank-8-ranks",
        "chunks-per-rank-2-nodes",
    ],
)
def test_bad_keys_are_one_line_naming_the_key(tmp_path, capsys, keys, where, expected):
    path = variant(tmp_path, **keys)
    with pytest.raises(PresetError) as info:
        load_preset(path)
    assert (info.value.key, info.value.expected) == (where, expected)
    assert main(["presets", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and where in err and "Traceback" not in err


def test_the_micro_batch_layouts_that_load(tmp_path):
    for keys in (
        {"micro_batch": "12", "backward_chunks": "8"},  # one rank: agrees
        {"micro_batch": "12", "backward_chunks": "1"},  # left at its default
        {"micro_batch": "12", "backward_chunks": "1", "nproc": "8"},
        TWO_NODES,
    ):
        p = load_preset(variant(tmp_path, **keys))
        assert "micro-batch 12 " in ram_estimate(p).formula, keys


def test_two_nodes_go_through_a_c10d_rendezvous(tmp_path):
    p = load_preset(variant(tmp_path, **TWO_NODES))
    argv = build_argv(p, Path("/o"), python="PY")
    name = "grasp_sft_v2_demosonly_1gpu_disc"
    assert argv[:19] == [
        "PY",
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "4",
        "--nnodes",
        "2",
        "--node-rank",
        "1",
        "--rdzv-backend",
        "c10d",
        "--rdzv-endpoint",
        "10.0.0.1:29500",
        "--rdzv-id",
        name,
        "-m",
        "fontaine_engine",
        "train",
        "--run-name",
    ]
    assert argv[argv.index("--micro-batch") + 1] == "12"
    assert "--backward-chunks" not in argv  # left at 1: the engine derives it (1 per rank)
    again = build_argv(
        load_preset(variant(tmp_path, name="id", **TWO_NODES, rdzv_id='"exp7"')),
        Path("/o"),
        python="PY",
    )
    assert again[again.index("--rdzv-id") + 1] == "exp7"
    one_rank_two_nodes = load_preset(
        variant(tmp_path, name="n1", **{**TWO_NODES, "nproc": "1", "micro_batch": "48"})
    )
    assert build_argv(one_rank_two_nodes, Path("/o"), python="PY")[2:5] == [
        "torch.distributed.run",
        "--nproc-per-node",
        "1",
    ]


def test_single_node_argv_has_no_new_flags_at_default(tmp_path):
    argv = build_argv(load_preset(variant(tmp_path, datasets='""')), Path("/o"), python="PY")
    assert argv[:4] == ["PY", "-m", "fontaine_engine", "train"]
    for flag in (
        "--micro-batch",
        "--datasets",
        "--cameras",
        "--task-tokens",
        "--history",
        "--precision",
        "--activation-checkpointing",
        "--compile",
        "--nnodes",
        "--extend-to",
        "--probe-at-start",
        "--eval-batch",
    ):
        assert flag not in argv
    assert argv[argv.index("--backward-chunks") + 1] == "8"


def test_the_real_parsers_read_the_launcher_argv(tmp_path):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    from fontaine_engine.parser import build_parser
    from fontaine_engine.pipeline import chunks_per_rank
    from torch.distributed.run import get_args_parser

    keys = {
        **TWO_NODES,
        "precision": '"bf16"',
        "activation_checkpointing": "true",
        "compile": "true",
        "datasets": '"demos"',
        "probe_at_start": "true",
        "eval_batch": "16",
        "cameras": '"observation.images.wrist,observation.images.top"',
        "task_tokens": "16",
        "history": "2",
    }
    p = load_preset(variant(tmp_path, **keys))
    argv = build_argv(p, tmp_path, resume=True)
    run = get_args_parser().parse_args(argv[3:])
    assert (run.nproc_per_node, run.nnodes, run.node_rank) == ("4", "2", 1)
    assert (run.rdzv_backend, run.rdzv_endpoint, run.rdzv_id) == (
        "c10d",
        "10.0.0.1:29500",
        p.run_name,
    )
    assert run.module and run.training_script == "fontaine_engine"
    args = build_parser().parse_args(run.training_script_args)
    assert (args.micro_batch, args.backward_chunks, args.datasets) == (12, None, "demos")
    assert args.cameras == "observation.images.wrist,observation.images.top"
    assert (args.task_tokens, args.history) == (16, 2)
    assert (args.precision, args.activation_checkpointing, args.compile) == ("bf16", True, True)
    assert args.resume and args.extend_to == 0
    assert (args.probe_at_start, args.eval_batch) == (True, 16)
    # what the engine then cuts, with WORLD_SIZE = 4 x 2 from the rendezvous
    assert chunks_per_rank(args.batch_size, 8, args.backward_chunks, args.micro_batch) == 1
