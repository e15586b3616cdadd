"""`--init`: a Hugging Face model folder (written by save_pretrained, sharded too) for the vision
encoder and backbone, or an engine checkpoint with its decoder (`inherit`) and its stats.

The runs train at lr 1e-9, so a saved checkpoint still holds its starting weights to ~1e-8:
what was loaded can be read back from it."""

from __future__ import annotations

import json
import sys

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.engine

from safetensors.torch import load_file  # noqa: E402

from tests.engine.conftest import run_engine, run_engines, tiny_argv  # noqa: E402
from tests.engine.enginelog_schema import check, read  # noqa: E402


def _argv(out, data, *extra, steps=2):
    argv = tiny_argv(out, data, "--save-every", "2", "--eval-every", "2", *extra, steps=steps)
    argv[argv.index("--lr") + 1] = "1e-9"
    return argv


def _weights(run, step=2):
    return load_file(str(run / "checkpoints" / f"step-{step:06d}" / "model.safetensors"))


def _refused(argv, capsys):
    """The flags' check, in-process (it runs before anything is written or trained): exit 2
    and one line."""
    from fontaine_engine.cli import main

    assert main(argv[3:]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("engine: error: "), err
    return err


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory):
    """vision/ (a SigLIP vision tower: 48-pixel images, 16-pixel patches) and backbone/ (a Qwen2
    with a real-sized vocabulary, saved in shards with an index), as save_pretrained writes,
    in bf16 as released weights are."""
    from transformers import Qwen2Config, Qwen2Model, SiglipVisionConfig, SiglipVisionModel

    root = tmp_path_factory.mktemp("hf-init")
    torch.manual_seed(123)
    vision = SiglipVisionModel(
        SiglipVisionConfig(
            hidden_size=40,
            intermediate_size=80,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=48,
            patch_size=16,
            vision_use_head=True,
        )
    )
    vision.to(torch.bfloat16).save_pretrained(root / "vision")
    backbone = Qwen2Model(
        Qwen2Config(
            vocab_size=1000,
            hidden_size=48,
            intermediate_size=96,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
        )
    )
    backbone.to(torch.bfloat16).save_pretrained(root / "backbone", max_shard_size="100KB")
    return root


def _qwen2(folder, vocab):
    from transformers import Qwen2Config, Qwen2Model

    model = Qwen2Model(
        Qwen2Config(
            vocab_size=vocab,
            hidden_size=48,
            intermediate_size=96,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
        )
    )
    model.to(torch.bfloat16).save_pretrained(folder)
    return folder


def test_hf_folder_init_loads_both_parts_with_from_pretrained(tmp_path, corpus_dir, hf_folder):
    index = json.loads((hf_folder / "backbone" / "model.safetensors.index.json").read_text())
    shards = set(index["weight_map"].values())
    assert len(shards) > 1  # the sharded form, read through its index
    out = tmp_path / "run"
    # the plain --init: a Hugging Face folder has no flow decoder, so it starts a random one
    proc = run_engine(_argv(out, corpus_dir, "--init", str(hf_folder)), timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = read(out / "train_log.jsonl")
    check(records)
    meta = records[0]
    assert meta["recipe"]["flow_decoder_init"] == "random"
    assert meta["init"]["kind"] == "hf" and set(meta["init"]["parts"]) == {"vision", "backbone"}
    assert (
        len(meta["init"]["sha256"]) == 64 and meta["init"]["files"] == len(shards) + 4
    )  # + 2 configs, the index, vision weights
    start = next(r for r in records if r.get("event") == "start")
    assert "vision + backbone from_pretrained, flow decoder random" in start["detail"]
    assert "resized" not in start["detail"]
    saved = _weights(out)
    pre_v = load_file(str(hf_folder / "vision" / "model.safetensors"))
    pre_b = {}
    for shard in shards:
        pre_b.update(load_file(str(hf_folder / "backbone" / shard)))
    v = {k[len("vision.") :]: t for k, t in saved.items() if k.startswith("vision.")}
    b = {k[len("backbone.") :]: t for k, t in saved.items() if k.startswith("backbone.")}
    assert set(v) == {k.removeprefix("vision_model.") for k in pre_v} or set(v) == set(pre_v)
    assert set(b) == {k.removeprefix("model.") for k in pre_b} or set(b) == set(pre_b)
    for name, tensor in pre_v.items():  # bf16 on disk, fp32 in the run: the same values
        assert tensor.dtype == torch.bfloat16, name
        got = v[name.removeprefix("vision_model.")]
        assert got.dtype == torch.float32 and torch.allclose(got, tensor.float(), atol=1e-6), name
    for name, tensor in pre_b.items():
        got = b[name.removeprefix("model.")]
        assert got.dtype == torch.float32 and torch.allclose(got, tensor.float(), atol=1e-6), name
    # the parts keep their shapes: a 1000-token vocabulary, 48-pixel frames in 3x3 patches
    assert b["embed_tokens.weight"].shape == (1000, 48)
    ck = json.loads((out / "checkpoints" / "step-000002" / "meta.json").read_text())
    assert ck["architecture"]["vision"]["image_size"] == 48
    evals = [r for r in records if r["kind"] == "eval"]
    assert evals and all(v == v for v in evals[-1]["breakdown"].values())


def test_a_backbone_vocabulary_under_the_action_tokens_is_resized(tmp_path, corpus_dir):
    """A Qwen2 with 100 tokens (the engine's are 256 bins + BOS): its embeddings grow to 257
    rows, the first 100 kept, and the run trains, its checkpoint's architecture saying 257."""
    folder = _qwen2(tmp_path / "small-vocab", 100)
    out = tmp_path / "run"
    # without task text: a backbone with no tokenizer of its own takes the text as byte
    # tokens past the action tokens, which a 257-row vocabulary has no room for (refused)
    argv = _argv(out, corpus_dir, "--init", str(folder), "--task-tokens", "0")
    proc = run_engine(argv, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    start = next(r for r in read(out / "train_log.jsonl") if r.get("event") == "start")
    assert "backbone vocabulary 100 resized to 257 (the action tokens)" in start["detail"]
    embed = _weights(out)["backbone.embed_tokens.weight"]
    before = load_file(str(folder / "model.safetensors"))
    old = next(t for k, t in before.items() if k.endswith("embed_tokens.weight"))
    assert embed.shape == (257, 48) and torch.allclose(embed[:100], old.float(), atol=1e-6)
    ck = json.loads((out / "checkpoints" / "step-000002" / "meta.json").read_text())
    assert ck["architecture"]["backbone"]["vocab_size"] == 257


def test_hf_init_with_inherit_is_refused(tmp_path, corpus_dir, hf_folder, capsys):
    out = tmp_path / "run"
    argv = _argv(out, corpus_dir, "--init", str(hf_folder / "vision"))
    err = _refused([*argv, "--flow-decoder-init", "inherit"], capsys)
    assert "--flow-decoder-init inherit" in err and "no flow decoder" in err
    assert not out.exists()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: None, "no such folder"),
        (lambda p: p.mkdir(), "expected an engine checkpoint"),
        (
            lambda p: (
                p.mkdir(),
                (p / "config.json").write_text('{"model_type": "llama"}'),
                (p / "model.safetensors").write_bytes(b"x"),
            ),
            "model_type 'llama'",
        ),
        (
            lambda p: (p.mkdir(), (p / "config.json").write_text('{"model_type": "qwen2"}')),
            "config.json but no weights",
        ),
    ],
)
def test_bad_init_one_line(tmp_path, corpus_dir, make, message, capsys):
    target = tmp_path / "init"
    make(target)
    before = sorted(p.name for p in target.iterdir()) if target.is_dir() else None
    err = _refused(
        _argv(tmp_path / "run", corpus_dir, "--init", str(target), "--flow-decoder-init", "random"),
        capsys,
    )
    assert message in err and str(target) in err
    assert (sorted(p.name for p in target.iterdir()) if target.is_dir() else None) == before


@pytest.fixture(scope="module")
def released(tmp_path_factory, corpus_dir):
    """A 'released' engine checkpoint: trained at lr 1e-3 on every sub-dataset."""
    out = tmp_path_factory.mktemp("released")
    argv = tiny_argv(out, corpus_dir, "--save-every", "4", steps=4)
    argv.remove("--recompute-stats")
    proc = run_engine(argv)
    assert proc.returncode == 0, proc.stderr
    return out


def test_engine_checkpoint_init_inherits_decoder_and_stats(tmp_path, corpus_dir, released):
    src = released / "checkpoints" / "step-000004"
    out = tmp_path / "run"
    argv = _argv(out, corpus_dir, "--init", str(released), "--datasets", "demos")
    argv.remove("--recompute-stats")
    proc = run_engine(argv)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    before, after = load_file(str(src / "model.safetensors")), _weights(out)
    assert set(before) == set(after)
    for name in before:  # every weight, the flow decoder's included
        assert torch.allclose(before[name], after[name], atol=1e-6), name
    # the init checkpoint's stats, not the corpus's
    assert json.loads(
        (out / "checkpoints" / "step-000002" / "stats.json").read_text()
    ) == json.loads((src / "stats.json").read_text())
    records = read(out / "train_log.jsonl")
    assert records[0]["init"]["kind"] == "engine" and records[0]["init"]["path"] == str(src)
    start = next(r for r in records if r.get("event") == "start")
    assert "flow decoder inherited" in start["detail"] and f"init {src}" in start["detail"]


def test_random_decoder_and_recomputed_stats_differ_from_the_init(tmp_path, corpus_dir, released):
    src = released / "checkpoints" / "step-000004"
    out = tmp_path / "run"
    proc = run_engine(
        _argv(
            out,
            corpus_dir,
            "--init",
            str(src),
            "--flow-decoder-init",
            "random",
            "--datasets",
            "demos",
        )
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    before, after = load_file(str(src / "model.safetensors")), _weights(out)
    flow = [n for n in before if n.startswith("flow.")]
    assert flow and all(
        not torch.allclose(before[n], after[n], atol=1e-3) for n in flow if before[n].numel() > 1
    )
    rest = [n for n in before if not n.startswith("flow.")]
    assert all(torch.allclose(before[n], after[n], atol=1e-6) for n in rest)
    # --recompute-stats over demos alone: not the init's pooled demos + rig stats
    mine = json.loads((out / "checkpoints" / "step-000002" / "stats.json").read_text())
    theirs = json.loads((src / "stats.json").read_text())
    assert mine != theirs
    start = next(r for r in read(out / "train_log.jsonl") if r.get("event") == "start")
    assert "recomputed over demos" in start["detail"] and "flow decoder random" in start["detail"]
    # `score --stats init`: the same checkpoints with the init's stats, not the run's own
    scored = tmp_path / "score"
    done = run_engine(
        [sys.executable, "-m", "fontaine_engine", "score", "--checkpoints", str(out)]
        + ["--output-dir", str(scored), "--stats", "init"]
    )
    assert done.returncode == 0, done.stderr
    records = read(scored / "train_log.jsonl")
    surface = records[0]["score"]["surface"]
    assert (surface["name"], surface["stats"], surface["differs"]) == (
        "stats-init",
        "init",
        ["stats"],
    )
    begun = next(r for r in records if r.get("event") == "start")
    assert f"(stats init {src / 'stats.json'}, " in begun["detail"]
    own = [r for r in read(out / "train_log.jsonl") if r["kind"] == "eval"][-1]
    again = [r for r in records if r["kind"] == "eval"][-1]
    assert again["step"] == own["step"] and again["eval_ar_ce"] != own["eval_ar_ce"]


def test_score_stats_init_of_a_run_without_init_is_one_line(tmp_path, released, capsys):
    from fontaine_engine.cli import main

    argv = ["score", "--checkpoints", str(released), "--output-dir", str(tmp_path / "s")]
    assert main([*argv, "--stats", "init"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "engine: error: --stats init: run t started from no --init (expected a run trained "
        "from an engine checkpoint)"
    )
    assert not (tmp_path / "s").exists()


def test_init_of_another_model_size_is_refused(tmp_path, corpus_dir, released, capsys):
    argv = _argv(tmp_path / "run", corpus_dir, "--init", str(released))
    argv[argv.index("--model-size") + 1] = "small"
    err = _refused(argv, capsys)
    assert "a 'tiny' model (expected the recipe's --model-size 'small')" in err


def test_two_seeds_are_scored_on_the_same_frames_with_the_same_noise(
    tmp_path, corpus_dir, released
):
    """The same starting weights (lr 1e-9), two training seeds: the eval probe reads the same,
    as its frames are drawn per corpus and its noise is fixed, not taken from --seed."""
    argvs = []
    for seed in ("0", "7"):
        argv = _argv(tmp_path / f"seed{seed}", corpus_dir, "--init", str(released), steps=1)
        argv.remove("--recompute-stats")
        argv[argv.index("--seed") + 1] = seed
        argv[argv.index("--eval-every") + 1] = "1"
        argvs.append(argv)
    reads = []
    for seed, proc in zip(("0", "7"), run_engines(argvs), strict=True):
        assert proc.returncode == 0, proc.stdout + proc.stderr
        [ev] = [
            r for r in read(tmp_path / f"seed{seed}" / "train_log.jsonl") if r["kind"] == "eval"
        ]
        reads.append(ev)
    a, b = reads
    assert a["n_frames"] == b["n_frames"] == 256
    assert a["eval_chunk_mae"] == pytest.approx(b["eval_chunk_mae"], rel=1e-5)
    assert a["breakdown"] == pytest.approx(b["breakdown"], rel=1e-5)
    assert a["eval_flow_loss"] == pytest.approx(b["eval_flow_loss"], rel=1e-5)
