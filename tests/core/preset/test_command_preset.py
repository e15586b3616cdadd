"""A preset's [command]: each fault one line naming the file and the key (exit 2), the table
hashed into the canonical form, and such a preset launchable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.preset.checks import PresetError
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.validate import preset_from_canonical

ARGV = 'argv = ["python", "train.py", "--output_dir", "{output_dir}"]'
SOURCE = '[source]\nkind = "hf_trainer"\n'
VERDICT = (
    '[verdict]\nmetric = "eval_loss"\nanchor_step = 100\nendpoint_step = 200\n'
    "healthy_max = 0.0\ndrift_min = 0.2\n"
)


def write(tmp_path: Path, command: str | None, more: str = SOURCE, name: str = "p") -> Path:
    path = tmp_path / f"{name}.toml"
    body = f"[command]\n{command}\n" if command is not None else ""
    path.write_text(f'[run]\nname = "own"\noutput_dir = "runs/own"\n\n{body}\n{more}\n{VERDICT}')
    return path


BAD = [
    ("both", f'{ARGV}\nscript = "go.sh"', "command", "exactly one of argv"),
    ("neither", 'cwd = "."', "command", "exactly one of argv"),
    ("empty argv", "argv = []", "command.argv", "non-empty list of strings"),
    ("argv not strings", 'argv = ["python", 3]', "command.argv", "non-empty list of strings"),
    (
        "other placeholder",
        'argv = ["python", "t.py", "{run_dir}"]',
        "command.argv[2]",
        "got {run_dir}",
    ),
    (
        "attribute placeholder",
        'argv = ["x", "{output_dir.name}"]',
        "command.argv[1]",
        "only placeholder",
    ),
    ("lone brace", 'argv = ["x", "a{b"]', "command.argv[1]", "only placeholder"),
    ("resume empty", f"{ARGV}\nresume_argv = []", "command.resume_argv", "non-empty list"),
    ("env not a table", f'{ARGV}\nenv = "A=1"', "command.env", "table of strings"),
    ("env not a string", f"{ARGV}\nenv = {{ A = 1 }}", "command.env.A", "expected a string"),
    (
        "env token",
        f'{ARGV}\nenv = {{ HF_TOKEN = "x" }}',
        "command.env.HF_TOKEN",
        "keep secrets in the launching shell's environment",
    ),
    (
        "env api key",
        f'{ARGV}\nenv = {{ WANDB_API_KEY = "x" }}',
        "command.env.WANDB_API_KEY",
        "looks like a secret",
    ),
    (
        "env password",
        f'{ARGV}\nenv = {{ db_password = "x" }}',
        "command.env.db_password",
        "looks like a secret",
    ),
    (
        "env placeholder",
        f'{ARGV}\nenv = {{ OUT = "{{run}}" }}',
        "command.env.OUT",
        "only placeholder",
    ),
    (
        "env own",
        f'{ARGV}\nenv = {{ FONTAINE_OUTPUT_DIR = "x" }}',
        "command.env.FONTAINE_OUTPUT_DIR",
        "set by the launch",
    ),
    (
        "reference without script",
        f'{ARGV}\nblock_reference = "r.sh"\nblock_marker = "# x"',
        "command.block_reference",
        "only with script",
    ),
    (
        "reference without marker",
        'script = "go.sh"\nblock_reference = "r.sh"',
        "command.block_marker",
        "both block_reference and block_marker",
    ),
    ("unknown key", f'{ARGV}\nargs = ["x"]', "command.args", "unknown key"),
    ("empty cwd", f'{ARGV}\ncwd = ""', "command.cwd", "non-empty string"),
    ("nul in argv", 'argv = ["python", "a\\u0000b"]', "command.argv[1]", "NUL"),
    ("empty program", 'argv = ["", "x"]', "command.argv[0]", "the program"),
]


@pytest.mark.parametrize(("case", "body", "key", "words"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_command_is_one_line_naming_file_and_key(tmp_path, capsys, case, body, key, words):
    path = write(tmp_path, body)
    with pytest.raises(PresetError) as info:
        load_preset(path)
    assert info.value.key == key, str(info.value)
    assert words in info.value.expected, str(info.value)
    assert main(["presets", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and key in err, err


HEX = "0123456789abcdef0123456789abcdef01234567"
# each form a credential takes in [command], as the secrets policy sees it (core/secrets.py)
SECRET_FORMS = [
    ('argv = ["python", "t.py", "trainer.logger.wandb.api_key=k3y"]', "command.argv[2]"),
    ('argv = ["env", "HF_TOKEN=k3y", "python", "t.py"]', "command.argv[1]"),
    ('argv = ["bash", "-c", "WANDB_API_KEY=k3y python t.py"]', "command.argv[2]"),
    (f'argv = ["wandb", "login", "{HEX}"]', "command.argv[2]"),
    ('argv = ["python", "t.py", "--x", "sk-proj-AbCdEfGhIjKlMnOp0123"]', "command.argv[3]"),
    ('argv = ["python", "t.py", "--data", "https://x.org/d?token=k3y"]', "command.argv[3]"),
    ('argv = ["python", "t.py", "\\u0068f_AbCdEfGhIjKlMnOpQrStUvWx"]', "command.argv[2]"),
    (f'{ARGV}\nenv = {{ EXTRA = "{HEX}" }}', "command.env.EXTRA"),
    (f'{ARGV}\nenv = {{ EXTRA = "--token k3y" }}', "command.env.EXTRA"),
    ('argv = ["python", "t.py", "--opts", "user=bob,password=k3y"]', "command.argv[3]"),
    ('argv = ["python", "t.py", "--env=WANDB_API_KEY=k3y"]', "command.argv[2]"),
    ('argv = ["python", "t.py", "--opts=token=k3y"]', "command.argv[2]"),
    ('argv = ["kubectl", "create", "secret", "--from-literal=token=k3y"]', "command.argv[3]"),
    (
        "argv = ['python3', '-c', 'import os; os.environ[\"HF_TOKEN\"]=\"k3y\"']",
        "command.argv[2]",
    ),
    (
        "argv = ['python3', '-c', 'import os; os.putenv(\"HF_TOKEN\", \"k3y\")']",
        "command.argv[2]",
    ),
    (f'{ARGV}\nresume_argv = ["python", "t.py", "--env=HF_TOKEN=k3y"]', "command.resume_argv[2]"),
    (f'{ARGV}\nenv = {{ EXTRA = "--env=HF_TOKEN=k3y" }}', "command.env.EXTRA"),
]


@pytest.mark.parametrize(("body", "key"), SECRET_FORMS, ids=[b for b, _ in SECRET_FORMS])
def test_a_credential_in_any_form_is_refused_without_being_shown(tmp_path, body, key):
    with pytest.raises(PresetError) as info:
        load_preset(write(tmp_path, body))
    assert info.value.key == key, str(info.value)
    assert "looks like a secret" in info.value.expected, str(info.value)
    for token in ("k3y", HEX, "AbCdEfGh"):
        assert token not in str(info.value)


@pytest.mark.parametrize(
    "body",
    [
        'argv = ["python", "t.py", "--max_new_tokens", "100", "--pad_token_id", "0"]',
        'argv = ["python", "t.py", "--use_auth_token", "true", "--text_key", "text"]',
        f'argv = ["python", "t.py", "--revision", "{HEX}", "--tokenizer_name", "gpt2"]',
        f'{ARGV}\nenv = {{ GIT_COMMIT = "{HEX}", TOKENIZERS_PARALLELISM = "false" }}',
    ],
)
def test_a_command_without_a_credential_is_not_refused(tmp_path, body):
    assert load_preset(write(tmp_path, body)).command is not None


@pytest.mark.parametrize(
    ("more", "key"),
    [
        ("", "command"),  # no [source]: nothing says how its log is read
        (SOURCE + '[recipe]\nmodel_size = "tiny"\n', "recipe"),
        (SOURCE + "[platform]\nnproc = 1\n", "platform"),
    ],
)
def test_a_command_needs_a_source_and_no_engine_recipe(tmp_path, more, key):
    with pytest.raises(PresetError) as info:
        load_preset(write(tmp_path, ARGV, more))
    assert info.value.key == key, str(info.value)


def test_a_bad_command_through_the_real_cli_exits_2(tmp_path):
    path = write(tmp_path, f'{ARGV}\nenv = {{ GITHUB_TOKEN = "ghp_x" }}')
    proc = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "presets", "show", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "command.env.GITHUB_TOKEN" in proc.stderr and "ghp_x" not in proc.stderr


def test_a_command_is_read_and_hashed(tmp_path):
    path = write(
        tmp_path,
        f'{ARGV}\nenv = {{ TOKENIZERS_PARALLELISM = "false", '
        f'OUT = "{{output_dir}}/x", B = "{{{{lit}}}}" }}\ncwd = "src"',
    )
    preset = load_preset(path)
    assert preset.command is not None and preset.launchable and preset.foreign
    assert preset.command.argv == ("python", "train.py", "--output_dir", "{output_dir}")
    assert dict(preset.command.env) == {
        "B": "{{lit}}",
        "OUT": "{output_dir}/x",
        "TOKENIZERS_PARALLELISM": "false",
    }
    assert preset.canonical["command"] == {
        "argv": ["python", "train.py", "--output_dir", "{output_dir}"],
        "cwd": "src",
        "env": {"B": "{{lit}}", "OUT": "{output_dir}/x", "TOKENIZERS_PARALLELISM": "false"},
    }
    assert "recipe" not in preset.canonical and "platform" not in preset.canonical
    again = preset_from_canonical(preset.canonical, "prereg.json#p")
    assert again.sha256 == preset.sha256 and again.command == preset.command
    other = load_preset(write(tmp_path, ARGV.replace("train.py", "train2.py"), name="q"))
    assert other.sha256 != preset.sha256  # the command is under the hash


def test_a_command_preset_needs_its_run_folder(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(f'[run]\nname = "own"\n[command]\n{ARGV}\n{SOURCE}{VERDICT}')
    with pytest.raises(PresetError) as info:
        load_preset(path)
    assert info.value.key == "run.output_dir"


def test_launch_accepts_a_command_preset_and_refuses_a_foreign_one(tmp_path):
    from fontaine_tui.core.preset.record import launchable

    preset = load_preset(write(tmp_path, ARGV))
    assert launchable(preset) is preset
    foreign = load_preset(write(tmp_path, None, name="foreign"))
    assert not foreign.launchable
    with pytest.raises(InputError, match="cannot be launched"):
        launchable(foreign)


def test_the_own_trainer_preset_loads():
    preset = load_preset("own_trainer_hf")
    assert preset.command is not None and preset.source is not None
    assert preset.source.kind == "hf_trainer" and preset.verdict.metric == "eval_loss"
    assert "{output_dir}" in preset.command.argv and preset.command.resume_argv


def test_a_pair_inside_a_flag_value_is_refused_by_presets_show(tmp_path):
    """The review's preset: `--env=K=V` and `--opts=token=V` refused at load, exit 2, unshown."""
    token = "Zq8xP2mK9vR4tL7w"
    path = tmp_path / "p1.toml"
    path.write_text(
        '[run]\nname = "p1"\noutput_dir = "runs/p1"\n[command]\n'
        'argv = ["python3", "-c", "print(\'step:1 loss:1.0\', flush=True)", '
        f'"--env=WANDB_API_KEY={token}", "--opts=token={token}"]\n'
        '[source]\nkind = "lines"\neval = ["loss"]\n'
        "patterns = ['step:(?P<step>\\S+) loss:(?P<loss>\\S+)']\n"
        '[verdict]\nmetric = "loss"\nanchor_step = 1\nendpoint_step = 2\n'
        "healthy_max = 0.0\ndrift_min = 0.2\n"
    )
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "FONTAINE_REGISTRY": str(tmp_path / "registry"),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "presets", "show", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "command.argv[3]: looks like a secret" in proc.stderr, proc.stderr
    assert token not in proc.stdout + proc.stderr
