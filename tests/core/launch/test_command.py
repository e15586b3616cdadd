"""A [command] made ready to run: argv, environment, folder, the provenance frozen at launch
(real git repositories in tmp_path), the launcher block check, and what --resume finds
changed."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from fontaine_tui.core import childenv
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.launch import guards
from fontaine_tui.core.launch.command import (
    check_block,
    code_changes,
    command_argv,
    command_cwd,
    command_env,
    command_provenance,
    git_state,
    script_args,
)
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze

TAIL = (
    '[source]\nkind = "hf_trainer"\n[verdict]\nmetric = "eval_loss"\nanchor_step = 10\n'
    "endpoint_step = 20\nhealthy_max = 0.0\ndrift_min = 0.2\n"
)
MARK = "# ---- command block ----"


def preset_at(where: Path, command: str):
    path = where / "own.toml"
    path.write_text(f'[run]\nname = "own"\noutput_dir = "runs/own"\n[command]\n{command}\n{TAIL}')
    return load_preset(path)


def git(where: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(where), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with train.py committed and outputs ignored."""
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q")
    (root / "train.py").write_text("print('train')\n")
    (root / ".gitignore").write_text("ignored/\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    return root


ARGV = (
    'argv = ["python", "train.py", "--output_dir", "{output_dir}", "--x", "{{a}}"]\n'
    'resume_argv = ["python", "train.py", "--output_dir", "{output_dir}", "--resume"]\n'
    'env = { TOKENIZERS_PARALLELISM = "false", LOGS = "{output_dir}/logs" }'
)


def test_argv_and_env_carry_the_run_folder(tmp_path, monkeypatch):
    preset = preset_at(tmp_path, ARGV)
    run = tmp_path / "runs" / "own"
    assert command_argv(preset, run, False) == [
        "python",
        "train.py",
        "--output_dir",
        str(run),
        "--x",
        "{a}",
    ]
    assert command_argv(preset, run, True)[-1] == "--resume"
    monkeypatch.setenv("FONTAINE_NOTIFY", "https://hooks.example/secret")
    monkeypatch.setenv("KEEP_ME", "1")
    env = command_env(preset, run)
    assert env["FONTAINE_OUTPUT_DIR"] == str(run) and env["LOGS"] == f"{run}/logs"
    assert env["TOKENIZERS_PARALLELISM"] == "false" and env["KEEP_ME"] == "1"
    assert "FONTAINE_NOTIFY" not in env and childenv.NOTIFY_ENV not in env


def test_resume_without_resume_argv_is_refused(tmp_path):
    preset = preset_at(tmp_path, 'argv = ["python", "train.py"]')
    with pytest.raises(
        InputError,
        match=r"\[command\] has no resume_argv: this run cannot be "
        "resumed",
    ):
        command_argv(preset, tmp_path / "run", True)


def test_a_script_runs_with_bash_and_its_cwd(tmp_path):
    (tmp_path / "src").mkdir()
    preset = preset_at(tmp_path, 'script = "go.sh"\ncwd = "src"')
    cwd = command_cwd(preset, tmp_path)
    assert cwd == (tmp_path / "src").resolve()
    assert command_argv(preset, tmp_path / "run", False, cwd) == ["bash", str(cwd / "go.sh")]
    with pytest.raises(InputError, match="command.cwd"):
        command_cwd(preset, tmp_path / "elsewhere")


def test_provenance_of_a_clean_repository(repo, tmp_path):
    preset = preset_at(tmp_path, ARGV)
    run = repo / "runs" / "own"
    argv = command_argv(preset, run, False)
    prov = command_provenance(preset, argv, repo, run)
    assert prov["command"] == {
        "argv": argv,
        "cwd": str(repo),
        "env": {
            "FONTAINE_OUTPUT_DIR": str(run),
            "LOGS": f"{run}/logs",
            "TOKENIZERS_PARALLELISM": "false",
        },
    }
    digest = hashlib.sha256((repo / "train.py").read_bytes()).hexdigest()
    assert prov["files"] == {"train.py": {"sha256": digest, "size": 15}}
    code = prov["code"]
    assert code["commit"] == git(repo, "rev-parse", "HEAD")
    assert Path(code["root"]).resolve() == repo.resolve()
    assert code["dirty"] is False and code["untracked"] == 0


def test_provenance_of_a_dirty_repository_changes_with_each_edit(repo):
    clean = git_state(repo)["diff_sha256"]
    (repo / "ignored").mkdir()
    (repo / "ignored" / "big.bin").write_bytes(b"x" * 100)
    assert git_state(repo)["diff_sha256"] == clean  # an ignored file is not the code
    run = repo / "runs" / "other"  # an untracked run folder is not the code either
    run.mkdir(parents=True)
    (run / "prereg.json").write_text("{}")
    (run / "trainer_state.json").write_text("{}")
    assert git_state(repo)["diff_sha256"] == clean
    (repo / "train.py").write_text("print('train, edited')\n")
    edited = git_state(repo)
    assert edited["dirty"] is True and edited["diff_sha256"] != clean
    (repo / "helper.py").write_text("x = 1\n")
    untracked = git_state(repo)
    assert untracked["diff_sha256"] != edited["diff_sha256"]
    (repo / "helper.py").write_text("x = 2\n")  # an untracked file's bytes count
    assert git_state(repo)["diff_sha256"] != untracked["diff_sha256"]


def test_provenance_outside_a_repository_and_without_git(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("print(1)\n")
    preset = preset_at(tmp_path, ARGV)
    argv = command_argv(preset, tmp_path / "run", False)
    assert command_provenance(preset, argv, tmp_path, tmp_path / "run")["code"] == {
        "git": "not a git checkout"
    }
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no git on PATH: said, not a crash
    assert "git not found" in str(git_state(tmp_path)["git"])


def write_pair(where: Path, head: str, ref_head: str, block: str, ref_block: str):
    script, ref = where / "launch_box.sh", where / "box_launcher.sh"
    script.write_text(f"{head}{MARK}\n{block}")
    ref.write_text(f"{ref_head}{MARK}\n{ref_block}")
    return script, ref


def test_an_equal_block_gives_the_platform_delta(tmp_path):
    block = 'python train.py --output_dir "$FONTAINE_OUTPUT_DIR"\n'
    script, ref = write_pair(
        tmp_path,
        "#!/bin/bash\nexport NCCL_IB_DISABLE=1\nmodule load x\n",
        "#!/bin/bash\nmodule load x\n",
        block,
        block,
    )
    delta = check_block(script, ref, MARK)
    assert delta[2:] == ["@@ -1,0 +2 @@", "+export NCCL_IB_DISABLE=1"]
    assert check_block(ref, ref, MARK) == []


def test_a_block_one_byte_off_is_refused_naming_both_lines(tmp_path):
    script, ref = write_pair(
        tmp_path,
        "#!/bin/bash\nset -e\n",
        "#!/bin/bash\n",
        "a\npython train.py --lr 3e-4\nb\n",
        "a\npython train.py --lr 3e-3\nb\n",
    )
    with pytest.raises(InputError) as info:
        check_block(script, ref, MARK)
    text = str(info.value)
    assert "line 5 is 'python train.py --lr 3e-4'" in text, text
    assert "line 4 of the reference is 'python train.py --lr 3e-3'" in text, text
    assert "\n" not in text
    script.write_text(f"#!/bin/bash\n{MARK}\na\n")  # shorter than the reference
    with pytest.raises(InputError, match="line 4 is \\(end of file\\)"):
        check_block(script, ref, MARK)


TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"


@pytest.mark.parametrize(
    "line",
    [
        "exec python other.py",
        "set -e; exec /bin/sh evil.sh",
        "if true; then exec evil; fi",
        "FOO=1 exec -a python evil.py",
        "command exec evil",
        'eval "exec evil"',
        "export A=1 \\\n  && exec evil",  # a continued line
    ],
)
def test_a_line_above_the_block_that_execs_another_program_is_refused(tmp_path, line):
    block = "python train.py\n"
    script, ref = write_pair(tmp_path, f"#!/bin/bash\n{line}\n", "#!/bin/bash\n", block, block)
    with pytest.raises(InputError) as info:
        check_block(script, ref, MARK)
    text = str(info.value)
    assert "line 2" in text and "execs another program" in text, text
    assert "\n" not in text


def test_an_exec_line_is_shown_with_its_token_masked_not_dropped(tmp_path):
    block = "python train.py\n"
    line = f"HF_TOKEN={TOKEN} exec python other.py --token k3y"
    script, ref = write_pair(tmp_path, f"#!/bin/bash\n{line}\n", "#!/bin/bash\n", block, block)
    with pytest.raises(InputError) as info:
        check_block(script, ref, MARK)
    text = str(info.value)
    assert "'HF_TOKEN=*** exec python other.py --token ***'" in text, text
    assert TOKEN[3:] not in text and "k3y" not in text


def test_an_exec_that_only_redirects_is_a_platform_delta(tmp_path):
    block = "python train.py\n"
    head = '#!/bin/bash\nexec > "$FONTAINE_OUTPUT_DIR/launcher.log" 2>&1\nexec 3<&-\n'
    script, ref = write_pair(tmp_path, head, "#!/bin/bash\n", block, block)
    assert check_block(script, ref, MARK)[3:] == [
        '+exec > "$FONTAINE_OUTPUT_DIR/launcher.log" 2>&1',
        "+exec 3<&-",
    ]


def test_the_platform_delta_masks_the_token_and_keeps_the_line(tmp_path):
    block = "python train.py\n"
    head = f"#!/bin/bash\nexport HF_TOKEN={TOKEN}\nhuggingface-cli login --token {TOKEN} --yes\n"
    script, ref = write_pair(tmp_path, head, "#!/bin/bash\n", block, block)
    assert check_block(script, ref, MARK)[3:] == [
        "+export HF_TOKEN=***",
        "+huggingface-cli login --token *** --yes",
    ]


def test_the_platform_delta_masks_a_value_on_a_continued_line(tmp_path):
    """A backslash-newline is the shell's space: the value on the next line is the flag's,
    masked whether or not the line with the flag differs; a removed line that starts with
    `--` is a line, not the diff's header."""
    block = "python train.py\n"
    head = (
        "#!/bin/bash\nhuggingface-cli login --token \\\n    k3ysecret \\\n  --yes\n"
        "mysql -u me -p \\\npw-new db\n"
    )
    ref_head = (
        "#!/bin/bash\nhuggingface-cli login --token \\\n    $HF_TOKEN \\\n  --yes\n"
        "psql \\\n--password pw-old db\n"
    )
    script, ref = write_pair(tmp_path, head, ref_head, block, block)
    delta = check_block(script, ref, MARK)
    assert [ln for ln in delta[2:] if not ln.startswith("@@")] == [
        "-    $HF_TOKEN \\",
        "+    *** \\",
        "-psql \\",
        "---password *** db",
        "+mysql -u me -p \\",
        "+*** db",
    ], delta


def test_a_missing_marker_is_refused_in_either_file(tmp_path):
    script, ref = write_pair(tmp_path, "", "", "x\n", "x\n")
    script.write_text("x\n")
    with pytest.raises(InputError, match="launch_box.sh: no line"):
        check_block(script, ref, MARK)
    script.write_text(f"{MARK}\nx\n")
    ref.write_text("x\n")
    with pytest.raises(InputError, match="box_launcher.sh: no line"):
        check_block(script, ref, MARK)


def test_resume_finds_the_code_changed_and_warns(repo, tmp_path):
    preset = preset_at(tmp_path, ARGV)
    folder = RunFolder(repo / "runs" / "own")
    folder.root.mkdir(parents=True)
    argv = command_argv(preset, folder.root, False)
    freeze(
        folder, preset, argv, "host", provenance=command_provenance(preset, argv, repo, folder.root)
    )
    (folder.root / "checkpoint-10").mkdir()  # the run's own output changes nothing
    (folder.root / "checkpoint-10" / "trainer_state.json").write_text("{}")
    assert [f.level for f in guards.check_command(preset, folder, True, repo)] == ["ok"]
    (repo / "train.py").write_text("print('edited')\n")
    findings = guards.check_command(preset, folder, True, repo)
    warned = [f.message for f in findings if f.level == "warn"]
    assert len(warned) == 2, findings
    assert warned[0].startswith("--resume: train.py changed under the run: launched with sha256 ")
    assert "the uncommitted changes changed under the run" in warned[1]
    git(repo, "commit", "-qam", "edit")
    changes = code_changes(folder_provenance(folder), preset, argv, repo, folder.root)
    assert any(
        c.startswith("the commit changed under the run: launched with git ") for c in changes
    ), changes
    assert guards.refusal(guards.check_all(preset, folder, None, resume=True, cwd=repo)) is None
    # the engine's checkpoints are not looked for: the command's own trainer resumes
    assert [f.level for f in guards.check_folder(preset, folder, True)] == ["ok"]


def folder_provenance(folder: RunFolder):
    from fontaine_tui.core.verdict.prereg import read_prereg

    return read_prereg(folder).provenance


def test_the_guards_refuse_a_missing_program_script_or_block(tmp_path):
    folder = RunFolder(tmp_path / "run")
    preset = preset_at(tmp_path, 'argv = ["no-such-program-here", "x"]')
    (refused,) = guards.check_command(preset, folder, False, tmp_path)
    assert refused.level == "refuse" and "no-such-program-here" in refused.message
    preset = preset_at(
        tmp_path,
        f'script = "launch_box.sh"\nblock_reference = "box_launcher.sh"\nblock_marker = "{MARK}"',
    )
    (refused,) = guards.check_command(preset, folder, False, tmp_path)
    assert refused.level == "refuse" and "command.script" in refused.message
    write_pair(tmp_path, "", "", "x\n", "y\n")
    (refused,) = guards.check_command(preset, folder, False, tmp_path)
    assert refused.level == "refuse" and "differs from" in refused.message
    write_pair(tmp_path, "export A=1\n", "", "x\n", "x\n")
    found = guards.check_command(preset, folder, False, tmp_path)
    assert [f.level for f in found] == ["ok", "ok"] and "1 line(s)" in found[1].message
    run = RunFolder(tmp_path / "run")
    argv = command_argv(preset, run.root, False, tmp_path)
    prov = command_provenance(preset, argv, tmp_path, run.root)
    assert prov["platform_delta"][2:] == ["@@ -0,0 +1 @@", "+export A=1"]
    assert set(prov["files"]) == {"launch_box.sh", "box_launcher.sh"}
    assert os.path.isabs(argv[1])


def test_a_script_starts_in_its_folder_with_the_run_folder(tmp_path, monkeypatch):
    import time

    from fontaine_tui.core.run.launcher import EngineProcess

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "go.sh").write_text(
        'echo "cwd=$PWD out=$FONTAINE_OUTPUT_DIR notify=${FONTAINE_NOTIFY:-none} a=$A"\n'
    )
    preset = preset_at(tmp_path, 'script = "go.sh"\ncwd = "src"\nenv = { A = "{output_dir}/a" }')
    monkeypatch.setenv("FONTAINE_NOTIFY", "https://hooks.example/secret")
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    cwd = command_cwd(preset, tmp_path)
    engine = EngineProcess.start(
        command_argv(preset, folder.root, False, cwd),
        folder,
        env=command_env(preset, folder.root),
        cwd=cwd,
    )
    deadline = time.monotonic() + 30
    while (done := engine.poll()) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert done is not None and done.code == 0, done
    assert folder.engine_out.read_text() == (
        f"cwd={cwd} out={folder.root} notify=none a={folder.root}/a\n"
    )


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (("python", "train.py", "--out", "{output_dir}"), [1]),
        (("/usr/bin/python3.11", "-u", "-X", "dev", "train.py"), [4]),
        (("python", "-m", "trainer.main", "--cfg", "cfg.py"), []),  # a module: no script
        (("python", "-m", "pkgdir", "--save", "out.py"), []),
        (("python", "-um", "pkgdir"), []),
        (("python", "-Wignore", "train.py"), [2]),
        (("python", "src/train.py", "--export-script", "exported_model.py"), [1]),
        (("python", "src/train.py", "--config=conf/extra.py"), [1]),
        (("python", "src/pkgdir"), [1]),  # a folder Python runs by its __main__.py
        (("python", "-", "x.py"), []),  # the script on stdin
        (("bash", "-c", "echo hi"), []),
        (("bash", "-c", "cd src && python train.py"), []),
        (("bash", "-ec", "python train.py"), []),
        (("bash", "-e", "run.sh", "x"), [2]),
        (("bash", "-o", "pipefail", "run.sh", "x.sh"), [3]),
        (("torchrun", "--nproc_per_node", "2", "train.py"), []),  # no interpreter
        (("python", "{output_dir}/train.py"), []),  # the run's own: not there before launch
        (("./train", "--data", "d.jsonl"), []),
    ],
)
def test_the_scripts_an_argv_names(argv, named):
    assert script_args(argv) == named
