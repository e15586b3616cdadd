"""`inspect --patterns lerobot`: LeRobot's printed training output, read with the built-in set.

The lines are made by LeRobot 0.4.4's own formatting code, reproduced exactly in LEROBOT below
(a subprocess, its stderr sent to the run's file as `lerobot-train` prints to the console):
`format_big_number` and `init_logging`'s `custom_format` (lerobot/utils/utils.py),
`AverageMeter` and `MetricsTracker.__str__` (lerobot/utils/logging_utils.py), and the training
loop's `logging.info(train_tracker)`, `logging.info(f"Eval policy at step {step}")` and
`logging.info("Suite %s aggregated: %s", suite, suite_info)` over `eval_policy_all`'s
per_task / per_group / overall dict (lerobot/scripts/lerobot_train.py,
lerobot/scripts/lerobot_eval.py). Steps from 1000 on print rounded (`step:2K`), which is said;
the eval's steps print exactly, and the drafted preset reads to a label."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

LEROBOT = r"""
import logging, os, sys
from datetime import datetime


def format_big_number(num, precision=0):  # lerobot/utils/utils.py
    suffixes = ["", "K", "M", "B", "T", "Q"]
    divisor = 1000.0

    for suffix in suffixes:
        if abs(num) < divisor:
            return f"{num:.{precision}f}{suffix}"
        num /= divisor

    return num


class AverageMeter:  # lerobot/utils/logging_utils.py
    def __init__(self, name, fmt=":f"):
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self):
        self.val = 0.0
        self.avg = 0.0
        self.sum = 0.0
        self.count = 0.0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        fmtstr = "{name}:{avg" + self.fmt + "}"
        return fmtstr.format(**self.__dict__)


class MetricsTracker:  # lerobot/utils/logging_utils.py, one process (no accelerator)
    __keys__ = [
        "_batch_size",
        "_num_frames",
        "_avg_samples_per_ep",
        "metrics",
        "steps",
        "samples",
        "episodes",
        "epochs",
        "accelerator",
    ]

    def __init__(self, batch_size, num_frames, num_episodes, metrics, initial_step=0):
        self.__dict__.update(dict.fromkeys(self.__keys__))
        self._batch_size = batch_size
        self._num_frames = num_frames
        self._avg_samples_per_ep = num_frames / num_episodes
        self.metrics = metrics
        self.steps = initial_step
        world_size = 1
        self.samples = self.steps * self._batch_size * world_size
        self.episodes = self.samples / self._avg_samples_per_ep
        self.epochs = self.samples / self._num_frames
        self.accelerator = None

    def __getattr__(self, name):
        if name in self.__dict__:
            return self.__dict__[name]
        elif name in self.metrics:
            return self.metrics[name]
        else:
            raise AttributeError(name)

    def __setattr__(self, name, value):
        if name in self.__dict__:
            super().__setattr__(name, value)
        elif name in self.metrics:
            self.metrics[name].update(value)
        else:
            raise AttributeError(name)

    def step(self):
        self.steps += 1
        world_size = 1
        self.samples += self._batch_size * world_size
        self.episodes = self.samples / self._avg_samples_per_ep
        self.epochs = self.samples / self._num_frames

    def __str__(self):
        display_list = [
            f"step:{format_big_number(self.steps)}",
            f"smpl:{format_big_number(self.samples)}",
            f"ep:{format_big_number(self.episodes)}",
            f"epch:{self.epochs:.2f}",
            *[str(m) for m in self.metrics.values()],
        ]
        return " ".join(display_list)

    def reset_averages(self):
        for m in self.metrics.values():
            m.reset()


def custom_format(record):  # lerobot/utils/utils.py's init_logging
    dt = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    fnameline = f"{record.pathname}:{record.lineno}"
    return f"{record.levelname} {dt} {fnameline[-15:]:>15} {record.getMessage()}"


formatter = logging.Formatter()
formatter.format = custom_format
logger = logging.getLogger()
logger.setLevel(logging.NOTSET)
logger.handlers.clear()
handler = logging.StreamHandler()
handler.setFormatter(formatter)
handler.setLevel("INFO")
logger.addHandler(handler)

STEPS, LOG_FREQ, EVAL_FREQ = 6000, 500, 2000
NUM_FRAMES, NUM_EPISODES, BATCH = 20000, 50, 8
train_metrics = {
    "loss": AverageMeter("loss", ":.3f"),
    "grad_norm": AverageMeter("grdn", ":.3f"),
    "lr": AverageMeter("lr", ":0.1e"),
    "update_s": AverageMeter("updt_s", ":.3f"),
    "dataloading_s": AverageMeter("data_s", ":.3f"),
}
train_tracker = MetricsTracker(BATCH, NUM_FRAMES, NUM_EPISODES, train_metrics)
for step in range(1, STEPS + 1):
    train_tracker.dataloading_s = 0.004
    train_tracker.loss = 2.0 / (1 + step / 500)
    train_tracker.grad_norm = 1.5
    train_tracker.lr = 1e-4
    train_tracker.update_s = 0.12
    train_tracker.step()
    if step % LOG_FREQ == 0:
        logging.info(train_tracker)
        train_tracker.reset_averages()
    if step % EVAL_FREQ == 0:
        logging.info(f"Eval policy at step {step}")
        success = [0.2, 0.5, 0.6][step // EVAL_FREQ - 1]
        metrics = {"sum_rewards": [10 * success], "max_rewards": [1.0], "successes": [success]}
        eval_info = {
            "per_task": [{"task_group": "pusht", "task_id": 0, "metrics": metrics}],
            "per_group": {"pusht": {"avg_sum_reward": 10 * success, "avg_max_reward": 1.0,
                                    "pc_success": success * 100, "n_episodes": 1,
                                    "video_paths": []}},
            "overall": {"avg_sum_reward": 10 * success, "avg_max_reward": 1.0,
                        "pc_success": success * 100, "n_episodes": 1, "eval_s": 3.2,
                        "eval_ep_s": 3.2, "video_paths": []},
        }
        for suite, suite_info in eval_info.items():
            logging.info("Suite %s aggregated: %s", suite, suite_info)
logging.info("End of training")
"""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def lerobot_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("lerobot")
    with open(run / "train.log", "w") as out:
        subprocess.run([sys.executable, "-c", LEROBOT], stderr=out, check=True, timeout=60)
    return run


def test_the_lines_are_lerobots(lerobot_run):
    text = (lerobot_run / "train.log").read_text()
    assert (
        " step:2K smpl:16K ep:40 epch:0.80 loss:0.446 grdn:1.500 lr:1.0e-04 updt_s:0.120 " in text
    )
    assert "Eval policy at step 2000\n" in text
    assert "Suite overall aggregated: {'avg_sum_reward': 2.0, 'avg_max_reward': 1.0, " in text


def test_inspect_reads_them_with_the_lerobot_set(lerobot_run):
    before = cli("inspect", str(lerobot_run), "--kind", "lines", "--path", "train.log")
    assert "(no keys)" in before.stdout  # no patterns: nothing read
    doc = json.loads(
        cli(
            "inspect", str(lerobot_run), "--path", "train.log", "--patterns", "lerobot", "--json"
        ).stdout
    )
    keys = {k["key"]: k for k in doc["keys"]}
    assert keys["eval_pc_success"]["role"] == "eval"
    assert (keys["eval_pc_success"]["first"], keys["eval_pc_success"]["last"]) == (2000, 6000)
    assert keys["eval_pc_success"]["count"] == 3 and keys["eval_avg_sum_reward"]["count"] == 3
    assert keys["loss"]["role"] == "loss" and keys["loss"]["first"] == 500
    assert doc["probes"]["every"] == 2000 and doc["probes"]["off_grid"] == []
    assert any("rounded where they were printed" in n for n in doc["notices"])


def test_the_drafted_preset_names_the_set_and_reads_to_a_label(lerobot_run, tmp_path):
    preset = tmp_path / "lerobot.toml"
    wrote = cli(
        "inspect",
        str(lerobot_run),
        "--path",
        "train.log",
        "--patterns",
        "lerobot",
        "--preset-out",
        str(preset),
    )
    assert wrote.returncode == 0, wrote.stderr
    text = preset.read_text()
    assert 'kind = "lines"' in text and 'patterns = "lerobot"' in text
    assert 'metric = "eval_avg_sum_reward"' in text and 'direction = "higher"' in text
    assert "anchor_step = 2000 " in text and "endpoint_step = 6000 " in text
    preset.write_text(
        text.replace('healthy_min = "COMPLETE: a number"', "healthy_min = 1.0").replace(
            'drift_max = "COMPLETE: a number"', "drift_max = -1.0"
        )
    )
    read = cli("verdict", str(lerobot_run), "--preset", str(preset))
    assert "read at step 6000 (anchor 2000, endpoint 6000, " in read.stdout, (
        read.stdout + read.stderr
    )
    assert "VERDICT: HEALTHY" in read.stdout


def test_a_patterns_file_and_a_bad_one(lerobot_run, tmp_path):
    mine = tmp_path / "mine.txt"
    mine.write_text(
        "# eval lines only\n\nEval policy at step (?P<step>\\d+)$\n"
        "overall aggregated: .*'pc_success': (?P<eval_success>[^,}]+)\n"
    )
    doc = json.loads(
        cli(
            "inspect", str(lerobot_run), "--path", "train.log", "--patterns", str(mine), "-j"
        ).stdout
    )
    assert [(k["key"], k["first"], k["last"]) for k in doc["keys"]] == [
        ("eval_success", 2000, 6000)
    ]
    mine.write_text("loss:(?P<loss>\\S+)\n")
    bad = cli("inspect", str(lerobot_run), "--path", "train.log", "--patterns", str(mine))
    assert bad.returncode == 2 and "has no named group `step`" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def _refused(res: subprocess.CompletedProcess[str], *words: str) -> str:
    """The one line a refusal says (exit 2), checked to hold each of `words`."""
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def test_a_patterns_file_that_is_no_regular_file_is_refused_at_once(lerobot_run, tmp_path):
    import os
    import time

    fifo = tmp_path / "pats.fifo"
    os.mkfifo(fifo)
    for given in ("/dev/zero", str(fifo), str(tmp_path)):
        start = time.monotonic()
        res = cli("inspect", str(lerobot_run), "--path", "train.log", "--patterns", given)
        _refused(res, given, "--patterns", "not a regular file")
        assert time.monotonic() - start < 30


def test_a_patterns_file_too_big_or_of_too_many_patterns_is_refused(lerobot_run, tmp_path):
    from fontaine_tui.core.limits import PATTERN_COUNT, PATTERN_FILE_BYTES

    many = tmp_path / "many.txt"
    many.write_text("".join(f"step:(?P<step>\\S+) x{n}:(?P<x{n}>\\S+)\n" for n in range(3000)))
    res = cli("inspect", str(lerobot_run), "--path", "train.log", "--patterns", str(many))
    _refused(res, str(many), "--patterns", "3000 patterns", f"more than the {PATTERN_COUNT}")
    big = tmp_path / "big.txt"
    big.write_text("# " + "x" * PATTERN_FILE_BYTES + "\nstep:(?P<step>\\S+) loss:(?P<loss>\\S+)\n")
    res = cli("inspect", str(lerobot_run), "--path", "train.log", "--patterns", str(big))
    _refused(res, str(big), "--patterns", f"over the {PATTERN_FILE_BYTES} bytes")


def test_a_preset_of_too_many_patterns_is_refused(lerobot_run, tmp_path):
    from fontaine_tui.core.limits import PATTERN_COUNT

    pats = ", ".join(f'"step:(?P<step>\\\\S+) x{n}:(?P<x{n}>\\\\S+)"' for n in range(3000))
    preset = tmp_path / "many.toml"
    preset.write_text(
        f'[run]\nname = "many"\n\n[source]\nkind = "lines"\npath = "train.log"\n'
        f"patterns = [{pats}]\n\n[verdict]\n"
        'metric = "eval_pc_success"\nanchor_step = 2000\nendpoint_step = 6000\n'
        "healthy_max = 0.05\ndrift_min = 0.5\n"
    )
    res = cli("verdict", str(lerobot_run), "--preset", str(preset))
    _refused(res, "source.patterns", "3000 patterns", f"more than the {PATTERN_COUNT}")


def test_a_slow_pattern_names_its_line_in_the_patterns_file(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_text("step:1 loss:0.5\n" + "a" * 40 + "\n")
    pats = tmp_path / "pats.txt"
    pats.write_text("# mine\nstep:(?P<step>\\d+) loss:(?P<loss>\\S+)\n\n(?P<step>(a|aa)+b)\n")
    res = cli("inspect", str(run), "--path", "train.log", "--patterns", str(pats))
    said = _refused(res, f"{pats} line 4", "(a|aa)+b", "takes too long", "train.log line 2")
    assert not said.startswith("line "), said
