"""A command line's secrets masked before it is shown (core/secrets.py): the processes mode's
command cell and its stack pane."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from fontaine_tui.core.host.proctree import TreeLook
from fontaine_tui.core.host.stacks import py_spy
from fontaine_tui.model.processes import shown_argv, stacks

SECRETS = ("hf_SECRET1", "wk_SECRET2", "cr_SECRET3", "k_SECRET4", "p_SECRET5", "XSECRET6")
ARGV = (
    "train.py",
    "--hf_token",
    "hf_SECRET1",
    "--wandb-key=wk_SECRET2",
    "--credentials",
    "cr_SECRET3",
    "--key",
    "k_SECRET4",
    "-p",
    "p_SECRET5",
    "--notify",
    "https://hooks.slack.com/services/T0/B0/XSECRET6",
    "--lr=3e-4",
)


def test_the_command_cell_masks_every_form_through_the_policy():
    hf = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    cell = shown_argv(
        (
            "/usr/bin/bash",
            "-c",
            f"HF_TOKEN={hf} python t.py trainer.logger.api_key=k3y --lr 3 {hf}",
        )
    )
    assert cell == "bash -c HF_TOKEN=*** python t.py trainer.logger.api_key=*** --lr 3 ***"


def test_the_command_cell_masks_a_secret_in_a_list_of_pairs():
    cell = shown_argv(("train.py", "--opts", "user=bob,password=s3cret,host=db", "--lr=3"))
    assert cell == "train.py --opts user=bob,password=***,host=db --lr=3"


def test_the_command_cell_masks_a_pair_inside_a_flag_value():
    cell = shown_argv(
        (
            "python3",
            "-c",
            'import os; os.environ["HF_TOKEN"]="Zq8xP2mK9vR4tL7w"',
            "--env=WANDB_API_KEY=Zq8xP2mK9vR4tL7w",
            "--opts=token=Zq8xP2mK9vR4tL7w",
        )
    )
    assert "Zq8x" not in cell, cell
    assert cell.endswith('os.environ["HF_TOKEN"]="***" --env=WANDB_API_KEY=*** --opts=token=***'), (
        cell
    )


def test_the_command_cell_hides_every_secret():
    cell = shown_argv(ARGV)
    assert not [s for s in SECRETS if s in cell], cell
    assert cell.startswith("train.py --hf_token *** --wandb-key=*** --credentials *** --key ***")


@pytest.mark.skipif(py_spy() is None, reason="py-spy is not installed (pip install py-spy)")
def test_the_stack_pane_hides_what_the_cell_hides():
    argv = [sys.executable, "-c", "import time; time.sleep(60)", *ARGV[1:]]
    proc = subprocess.Popen(argv, start_new_session=True)
    try:
        time.sleep(0.5)  # py-spy needs the interpreter up
        tree = TreeLook().look(proc.pid, "engine", gpus=(None, "no GPU"))
        got = stacks(tree, tree.members[0])
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    shown = got.text + got.error
    assert f"Process {proc.pid}: " in got.text, shown  # the dump, its first line the argv
    assert not [s for s in SECRETS if s in shown], shown
    assert "--hf_token *** --wandb-key=*** --credentials *** --key *** -p ***" in shown, shown
    assert "https://hooks.slack.com/services/***/***/*** --lr=3e-4" in shown, shown
