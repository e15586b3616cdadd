"""validate() held to what it gives today: the first fault of a document is one exact line,
in the order the sections are checked, and a good document the same canonical form (sha256).

Each case is a small good preset with one or two keys changed; two faults pin which section
is checked first."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from fontaine_tui.core import tomlfile
from fontaine_tui.core.preset.checks import PresetError
from fontaine_tui.core.preset.validate import validate

ENGINE = tomlfile.loads(
    """
[run]
name = "smoke"
output_dir = "outputs/train/smoke"
question = "Does it work?"

[recipe]
model_size = "tiny"
batch_size = 8
backward_chunks = 2
image_augment = 0.5
lr = 1e-3
steps = 40
eval_every = 10
save_every = 20

[platform]
nproc = 1
device = "cpu"

[verdict]
metric = "eval_chunk_mae"
anchor_step = 20
endpoint_step = 40
healthy_max = 0.30
reference = "demosonly"
drift_fraction = 0.5
drift_min = 1.0158

[comparators.demosonly]
delta = 2.0317
level_step = 10
eval_level = 3.4623
train_level = 3.6862

[comparators.rigonly]
delta = 0.6929

[[amendments]]
id = 1
kind = "scale"
from_step = 10
comparator = "demosonly"
declared_after_step = 0
declared_before_step = 20
text = "Scale from the first probe's level ratio."

[gates]
gpu_hours = 1.0

[interpretation]
HEALTHY = "Within the healthy bound."
SAME-DRIFT = "Reached the drift bound."
"""
)
COMMAND = tomlfile.loads(
    """
[run]
name = "own"
output_dir = "runs/own"

[command]
argv = ["python", "train.py", "--output_dir", "{output_dir}"]
resume_argv = ["python", "train.py", "--output_dir", "{output_dir}", "--resume"]

[source]
kind = "hf_trainer"
eval_every = 50

[verdict]
metric = "eval_loss"
anchor_step = 100
endpoint_step = 200
healthy_max = 0.0
drift_min = 0.2
"""
)
SOURCE = {k: v for k, v in COMMAND.items() if k != "command"}  # read, trained elsewhere
BASES = {"engine": ENGINE, "command": COMMAND, "source": SOURCE}
GONE = object()  # the key taken out
P = "COMPLETE"  # a bound left a placeholder


def document(base: str, changes: list[tuple[str, object]]) -> dict:
    doc = copy.deepcopy(BASES[base])
    for dotted, value in changes:
        *head, last = dotted.split(".")
        table = doc
        for key in head:
            table = table.setdefault(key, {})
        if value is GONE:
            del table[last]
        else:
            table[last] = value
    return doc


FAULTS = [
    (
        "unknown section",
        "engine",
        [("gatez", {})],
        "p.toml: gatez: unknown section (expected one of: run, recipe, platform, verdict, comparators, amendments, gates, labels, interpretation, source, babysit, notify, slurm, command, recovery)",
    ),
    (
        "placeholder bound",
        "engine",
        [("verdict.healthy_max", "COMPLETE")],
        "p.toml: verdict.healthy_max: 'COMPLETE' is a placeholder: complete the [verdict] bounds (numbers chosen before reading the run)",
    ),
    (
        "source eval_every zero",
        "source",
        [("source.eval_every", 0)],
        "p.toml: source.eval_every: expected a positive integer (the steps from one probe to the next), got 0",
    ),
    (
        "source eval_every true",
        "source",
        [("source.eval_every", True)],
        "p.toml: source.eval_every: expected a positive integer (the steps from one probe to the next), got True",
    ),
    (
        "source eval_every float",
        "source",
        [("source.eval_every", 50.0)],
        "p.toml: source.eval_every: expected a positive integer (the steps from one probe to the next), got 50.0",
    ),
    ("source not a table", "source", [("source", "hf")], "p.toml: source: expected a table"),
    (
        "source unknown kind",
        "source",
        [("source.kind", "nope")],
        "p.toml: source.kind: expected one of fontaine, tensorboard, hf_trainer, csv, mlflow, jsonl, wandb, trackio, lines, got 'nope'",
    ),
    (
        "command without source",
        "command",
        [("source", GONE)],
        'p.toml: command: expected a [source] too (how the command\'s log is read: kind = "hf_trainer", "tensorboard", ...)',
    ),
    (
        "command with recipe",
        "command",
        [("recipe", {})],
        "p.toml: recipe: a [command] preset starts its own trainer: [recipe] and [platform] (the engine's) do not apply; remove them",
    ),
    (
        "command with platform",
        "command",
        [("platform", {})],
        "p.toml: platform: a [command] preset starts its own trainer: [recipe] and [platform] (the engine's) do not apply; remove them",
    ),
    ("engine missing recipe", "engine", [("recipe", GONE)], "p.toml: recipe: missing section"),
    (
        "engine missing platform",
        "engine",
        [("platform", GONE)],
        "p.toml: platform: missing section",
    ),
    ("source missing run", "source", [("run", GONE)], "p.toml: run: missing section"),
    ("source missing verdict", "source", [("verdict", GONE)], "p.toml: verdict: missing section"),
    ("source run not a table", "source", [("run", "x")], "p.toml: run: expected a table"),
    (
        "run unknown key",
        "engine",
        [("run.nope", 1)],
        "p.toml: run.nope: unknown key (expected one of: name, output_dir, question)",
    ),
    (
        "recipe unknown key",
        "engine",
        [("recipe.nope", 1)],
        "p.toml: recipe.nope: unknown key (expected one of: model_size, batch_size, backward_chunks, seed, image_augment, recompute_stats, objective, insulate_flow, flow_decoder_init, init, lr, warmup_steps, steps, eval_every, eval_dataset_breakdown, save_every, chunk_grad_allreduce, micro_batch, datasets, probe_at_start, cameras, task_tokens, history)",
    ),
    (
        "platform unknown key",
        "engine",
        [("platform.nope", 1)],
        "p.toml: platform.nope: unknown key (expected one of: nproc, device, num_workers, prefetch_factor, data_dir, precision, activation_checkpointing, compile, nnodes, node_rank, rdzv_endpoint, rdzv_id, eval_batch)",
    ),
    ("verdict not a table", "engine", [("verdict", 3)], "p.toml: verdict: expected a table"),
    (
        "verdict unknown key",
        "engine",
        [("verdict.nope", 1)],
        "p.toml: verdict.nope: unknown key (expected one of: metric, direction, read, anchor_step, endpoint_step, healthy_max, drift_min, healthy_min, drift_max, reference, drift_fraction, max_probe_change, blind, seed_group, combine)",
    ),
    (
        "gates unknown key",
        "engine",
        [("gates.nope", 1)],
        "p.toml: gates.nope: unknown key (expected one of: gpu_hours, step_s_estimate_min, step_s_estimate_max, step_s_estimate_hardware, starvation_data_frac, gpu_util_min, ram_warn_frac, ram_alert_frac, gpu_hours_warn_frac, stall_factor, stall_min_s, stop_on_lock)",
    ),
    (
        "babysit unknown key",
        "engine",
        [("babysit", {"nope": 1})],
        "p.toml: babysit.nope: unknown key (expected one of: first_poll_steps, first_poll_minutes, cadence_minutes)",
    ),
    ("notify not tables", "engine", [("notify", 3)], "p.toml: notify: expected [[notify]] tables"),
    (
        "slurm unknown key",
        "engine",
        [("slurm", {"nope": 1})],
        "p.toml: slurm.nope: unknown key (expected one of: time)",
    ),
    (
        "recovery unknown key",
        "engine",
        [("recovery", {"nope": 1})],
        "p.toml: recovery.nope: unknown key (expected one of: max_restarts, on, backoff_s)",
    ),
    (
        "recovery without resume_argv",
        "command",
        [("command.resume_argv", GONE), ("recovery", {"max_restarts": 2})],
        "p.toml: recovery.max_restarts: expected [command] resume_argv too (a restart resumes the run), or 0",
    ),
    (
        "empty run name",
        "engine",
        [("run.name", "")],
        "p.toml: run.name: expected a non-empty string",
    ),
    (
        "model size",
        "engine",
        [("recipe.model_size", "huge")],
        "p.toml: recipe.model_size: expected one of tiny, small, base, large, got 'huge'",
    ),
    (
        "objective",
        "engine",
        [("recipe.objective", "x")],
        "p.toml: recipe.objective: expected one of joint, ar, flow, got 'x'",
    ),
    (
        "flow decoder init",
        "engine",
        [("recipe.flow_decoder_init", "x")],
        "p.toml: recipe.flow_decoder_init: expected one of inherit, random, got 'x'",
    ),
    (
        "device",
        "engine",
        [("platform.device", "tpu")],
        "p.toml: platform.device: expected one of auto, cpu, cuda, got 'tpu'",
    ),
    (
        "precision",
        "engine",
        [("platform.precision", "fp8")],
        "p.toml: platform.precision: expected one of fp32, tf32, bf16, got 'fp8'",
    ),
    (
        "batch size zero",
        "engine",
        [("recipe.batch_size", 0)],
        "p.toml: recipe.batch_size: expected an integer >= 1, got 0",
    ),
    (
        "backward chunks zero",
        "engine",
        [("recipe.backward_chunks", 0)],
        "p.toml: recipe.backward_chunks: expected an integer >= 1, got 0",
    ),
    (
        "steps zero",
        "engine",
        [("recipe.steps", 0)],
        "p.toml: recipe.steps: expected an integer >= 1, got 0",
    ),
    (
        "eval_every zero",
        "engine",
        [("recipe.eval_every", 0)],
        "p.toml: recipe.eval_every: expected an integer >= 1, got 0",
    ),
    (
        "save_every zero",
        "engine",
        [("recipe.save_every", 0)],
        "p.toml: recipe.save_every: expected an integer >= 1, got 0",
    ),
    (
        "nproc zero",
        "engine",
        [("platform.nproc", 0)],
        "p.toml: platform.nproc: expected an integer >= 1, got 0",
    ),
    (
        "eval_batch zero",
        "engine",
        [("platform.eval_batch", 0)],
        "p.toml: platform.eval_batch: expected an integer >= 1, got 0",
    ),
    (
        "nnodes zero",
        "engine",
        [("platform.nnodes", 0)],
        "p.toml: platform.nnodes: expected an integer >= 1, got 0",
    ),
    (
        "node_rank past nnodes",
        "engine",
        [("platform.nnodes", 2), ("platform.node_rank", 2)],
        "p.toml: platform.node_rank: expected an integer below platform.nnodes = 2, got 2",
    ),
    (
        "rdzv not host:port",
        "engine",
        [("platform.nnodes", 2), ("platform.rdzv_endpoint", "h")],
        "p.toml: platform.rdzv_endpoint: expected HOST:PORT of the rendezvous with platform.nnodes = 2, got 'h'",
    ),
    (
        "num_workers negative",
        "engine",
        [("platform.num_workers", -1)],
        "p.toml: platform.num_workers: expected an integer in [0, 9007199254740992], got -1",
    ),
    (
        "prefetch zero",
        "engine",
        [("platform.prefetch_factor", 0)],
        "p.toml: platform.prefetch_factor: expected an integer >= 1, got 0",
    ),
    (
        "augment above one",
        "engine",
        [("recipe.image_augment", 1.5)],
        "p.toml: recipe.image_augment: expected a probability in [0, 1], got 1.5",
    ),
    (
        "augment below zero",
        "engine",
        [("recipe.image_augment", -0.1)],
        "p.toml: recipe.image_augment: expected a probability in [0, 1], got -0.1",
    ),
    (
        "lr zero",
        "engine",
        [("recipe.lr", 0.0)],
        "p.toml: recipe.lr: expected a positive number, got 0.0",
    ),
    (
        "batch not divisible",
        "engine",
        [("recipe.batch_size", 7)],
        "p.toml: recipe.batch_size: expected a multiple of backward_chunks x platform.nproc = 2, got 7; or state the per-rank micro-batch (micro_batch)",
    ),
    (
        "source eval_every beside the recipe's",
        "engine",
        [("source", {"kind": "fontaine", "eval_every": 5})],
        "p.toml: source.eval_every: expected recipe.eval_every = 10 or left out, got 5",
    ),
    (
        "comparator delta",
        "engine",
        [("comparators.demosonly.delta", "x")],
        'p.toml: comparators.demosonly.delta: expected a number, got "x"',
    ),
    (
        "endpoint not a probe",
        "engine",
        [("verdict.endpoint_step", 45)],
        "p.toml: verdict.endpoint_step: expected at most recipe.steps = 40, got 45",
    ),
    (
        "amendments not tables",
        "engine",
        [("amendments", 3)],
        "p.toml: amendments: expected an array of [[amendments]] tables",
    ),
    (
        "unknown label",
        "engine",
        [("labels", {"NOPE": "x"})],
        "p.toml: labels.NOPE: unknown class (expected one of: HEALTHY, SAME-DRIFT, AMBIGUOUS, AMBIGUOUS-BY-INSTRUMENT, UNDECIDABLE)",
    ),
    (
        "interpretation not a table",
        "engine",
        [("interpretation", "x")],
        "p.toml: interpretation: expected a table",
    ),
    (
        "interpretation unknown key",
        "engine",
        [("interpretation.NOPE", "x")],
        "p.toml: interpretation.NOPE: unknown key (expected one of: HEALTHY, SAME-DRIFT, AMBIGUOUS, AMBIGUOUS-BY-INSTRUMENT, UNDECIDABLE)",
    ),
    (
        "interpretation not a string",
        "engine",
        [("interpretation.HEALTHY", 3)],
        "p.toml: interpretation.HEALTHY: expected a string",
    ),
    (
        "interpretation class twice",
        "engine",
        [("labels", {"HEALTHY": "fine"}), ("interpretation.fine", "again")],
        "p.toml: interpretation.fine: expected each class once, got HEALTHY under both its name and its label",
    ),
    (
        "unknown section, placeholder",
        "engine",
        [("gatez", {}), ("verdict.healthy_max", "COMPLETE")],
        "p.toml: gatez: unknown section (expected one of: run, recipe, platform, verdict, comparators, amendments, gates, labels, interpretation, source, babysit, notify, slurm, command, recovery)",
    ),
    (
        "placeholder, source",
        "source",
        [("verdict.healthy_max", "COMPLETE"), ("source.eval_every", 0)],
        "p.toml: verdict.healthy_max: 'COMPLETE' is a placeholder: complete the [verdict] bounds (numbers chosen before reading the run)",
    ),
    (
        "source, command",
        "command",
        [("source.kind", "nope"), ("recipe", {})],
        "p.toml: source.kind: expected one of fontaine, tensorboard, hf_trainer, csv, mlflow, jsonl, wandb, trackio, lines, got 'nope'",
    ),
    (
        "command, missing section",
        "command",
        [("recipe", {}), ("verdict", GONE)],
        "p.toml: recipe: a [command] preset starts its own trainer: [recipe] and [platform] (the engine's) do not apply; remove them",
    ),
    (
        "missing section, run",
        "engine",
        [("platform", GONE), ("run.nope", 1)],
        "p.toml: platform: missing section",
    ),
    (
        "run, recipe",
        "engine",
        [("run.nope", 1), ("recipe.nope", 1)],
        "p.toml: run.nope: unknown key (expected one of: name, output_dir, question)",
    ),
    (
        "recipe, platform",
        "engine",
        [("recipe.nope", 1), ("platform.nope", 1)],
        "p.toml: recipe.nope: unknown key (expected one of: model_size, batch_size, backward_chunks, seed, image_augment, recompute_stats, objective, insulate_flow, flow_decoder_init, init, lr, warmup_steps, steps, eval_every, eval_dataset_breakdown, save_every, chunk_grad_allreduce, micro_batch, datasets, probe_at_start, cameras, task_tokens, history)",
    ),
    (
        "platform, verdict",
        "engine",
        [("platform.nope", 1), ("verdict", 3)],
        "p.toml: platform.nope: unknown key (expected one of: nproc, device, num_workers, prefetch_factor, data_dir, precision, activation_checkpointing, compile, nnodes, node_rank, rdzv_endpoint, rdzv_id, eval_batch)",
    ),
    (
        "verdict, gates",
        "engine",
        [("verdict.nope", 1), ("gates.nope", 1)],
        "p.toml: verdict.nope: unknown key (expected one of: metric, direction, read, anchor_step, endpoint_step, healthy_max, drift_min, healthy_min, drift_max, reference, drift_fraction, max_probe_change, blind, seed_group, combine)",
    ),
    (
        "gates, babysit",
        "engine",
        [("gates.nope", 1), ("babysit", {"nope": 1})],
        "p.toml: gates.nope: unknown key (expected one of: gpu_hours, step_s_estimate_min, step_s_estimate_max, step_s_estimate_hardware, starvation_data_frac, gpu_util_min, ram_warn_frac, ram_alert_frac, gpu_hours_warn_frac, stall_factor, stall_min_s, stop_on_lock)",
    ),
    (
        "babysit, notify",
        "engine",
        [("babysit", {"nope": 1}), ("notify", 3)],
        "p.toml: babysit.nope: unknown key (expected one of: first_poll_steps, first_poll_minutes, cadence_minutes)",
    ),
    (
        "notify, slurm",
        "engine",
        [("notify", 3), ("slurm", {"nope": 1})],
        "p.toml: notify: expected [[notify]] tables",
    ),
    (
        "slurm, recovery",
        "engine",
        [("slurm", {"nope": 1}), ("recovery", {"nope": 1})],
        "p.toml: slurm.nope: unknown key (expected one of: time)",
    ),
    (
        "recovery resume, run name",
        "command",
        [("command.resume_argv", GONE), ("recovery", {"max_restarts": 2}), ("run.name", "")],
        "p.toml: recovery.max_restarts: expected [command] resume_argv too (a restart resumes the run), or 0",
    ),
    (
        "run name, lr",
        "engine",
        [("recipe.lr", 0.0), ("run.name", "")],
        "p.toml: run.name: expected a non-empty string",
    ),
    (
        "choice, positive",
        "engine",
        [("platform.precision", "fp8"), ("recipe.batch_size", 0)],
        "p.toml: platform.precision: expected one of fp32, tf32, bf16, got 'fp8'",
    ),
    (
        "lr, layout",
        "engine",
        [("recipe.lr", 0.0), ("recipe.batch_size", 7)],
        "p.toml: recipe.lr: expected a positive number, got 0.0",
    ),
    (
        "layout, source eval_every",
        "engine",
        [("recipe.batch_size", 7), ("source", {"kind": "fontaine", "eval_every": 5})],
        "p.toml: recipe.batch_size: expected a multiple of backward_chunks x platform.nproc = 2, got 7; or state the per-rank micro-batch (micro_batch)",
    ),
    (
        "source eval_every, comparators",
        "engine",
        [("source", {"kind": "fontaine", "eval_every": 5}), ("comparators.demosonly.delta", "x")],
        "p.toml: source.eval_every: expected recipe.eval_every = 10 or left out, got 5",
    ),
    (
        "comparators, verdict rule",
        "engine",
        [("comparators.demosonly.delta", "x"), ("verdict.endpoint_step", 45)],
        'p.toml: comparators.demosonly.delta: expected a number, got "x"',
    ),
    (
        "verdict rule, amendments",
        "engine",
        [("verdict.endpoint_step", 45), ("amendments", 3)],
        "p.toml: verdict.endpoint_step: expected at most recipe.steps = 40, got 45",
    ),
    (
        "amendments, labels",
        "engine",
        [("amendments", 3), ("labels", {"NOPE": "x"})],
        "p.toml: amendments: expected an array of [[amendments]] tables",
    ),
    (
        "labels, interpretation",
        "engine",
        [("labels", {"NOPE": "x"}), ("interpretation", "x")],
        "p.toml: labels.NOPE: unknown class (expected one of: HEALTHY, SAME-DRIFT, AMBIGUOUS, AMBIGUOUS-BY-INSTRUMENT, UNDECIDABLE)",
    ),
]
GOOD = [
    (
        "engine",
        "engine",
        [],
        "da3c5ea33134febc3b5cca0eb71b503734ddd0a04326fdf2f424a57f913f03f9",
        (10, "recipe.eval_every"),
        "outputs/train/smoke",
    ),
    (
        "command",
        "command",
        [],
        "a57351081076666a20eedad9f8c6db7239a413c7af1d72e2a1afa64c85fd15e3",
        (50, "source.eval_every"),
        "runs/own",
    ),
    (
        "source",
        "source",
        [],
        "f32f07636e06123962a9d77ca088dd9032372fa1d182ebd809464402003908e9",
        (50, "source.eval_every"),
        "runs/own",
    ),
    (
        "source, cadence from the verdict's steps",
        "source",
        [("source.eval_every", GONE)],
        "954853eaa6532a5121c25f2aa652fa7e3a133c44ba353a53f82f34324319c164",
        None,
        "runs/own",
    ),
    (
        "source, no output_dir",
        "source",
        [("run.output_dir", GONE)],
        "8b54c5e4318cc164343d4e76d64cbb4159033d50940c6da695aabacb2f5b2494",
        (50, "source.eval_every"),
        "",
    ),
    (
        "engine, every optional table",
        "engine",
        [
            ("labels", {"HEALTHY": "fine"}),
            ("interpretation.HEALTHY", GONE),
            ("interpretation.fine", "  held   within "),
            ("babysit", {"cadence_minutes": 30}),
            ("slurm", {"time": "01:00:00"}),
            ("source", {"kind": "fontaine", "eval_every": 10}),
        ],
        "74e737b1a8b16261f67788cc707ba07665e0c9f810755367f90c230d9848c982",
        (10, "recipe.eval_every"),
        "outputs/train/smoke",
    ),
    (
        "command with recovery",
        "command",
        [("recovery", {"max_restarts": 2})],
        "74a35839cfc29b9e1b91c2a3890218d6c6146e172c615824b7d3e05a3542d899",
        (50, "source.eval_every"),
        "runs/own",
    ),
    (
        "tensorboard over a recipe",
        "engine",
        [("source", {"kind": "tensorboard"})],
        "c4e384dbb9b3860265a9982b4e4aa7880fccd042294012871d24acfef74cde1d",
        (10, "recipe.eval_every"),
        "outputs/train/smoke",
    ),
]


@pytest.mark.parametrize(("name", "base", "changes", "line"), FAULTS, ids=[c[0] for c in FAULTS])
def test_the_first_fault_is_one_exact_line(name, base, changes, line):
    with pytest.raises(PresetError) as caught:
        validate(Path("p.toml"), document(base, changes))
    assert str(caught.value) == line


@pytest.mark.parametrize(
    ("name", "base", "changes", "sha256", "stated", "output_dir"), GOOD, ids=[c[0] for c in GOOD]
)
def test_a_good_document_keeps_its_canonical_form(name, base, changes, sha256, stated, output_dir):
    preset = validate(Path("p.toml"), document(base, changes))
    assert (preset.sha256, preset.stated_every, preset.run["output_dir"]) == (
        sha256,
        stated,
        output_dir,
    )
