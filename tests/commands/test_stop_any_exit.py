"""A stop this program sent is the attempt's cause whatever exit the trainer chooses for it.

Trainers take SIGINT their own way: Lightning stops gracefully and exits 1, a shell's
convention is 130, some exit 0, plain Python dies of the signal. A [command] run stopped by
`fontaine-tui stop` (detached, and while `launch --plain` watches it) ends "stopped" in
attempts.jsonl, the registry and the watcher's words, never "crashed" and never an ALERT. A
SIGINT someone else sent (no stop line) still reads "from outside the program". Real
subprocesses: the CLI, a Python trainer writing JSONL, and a real Lightning trainer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.slow
TRAINER = """import json, signal, sys, time
from pathlib import Path
out, how = Path(sys.argv[1]), sys.argv[2]
if how != "signal":  # else Python's own KeyboardInterrupt: it dies of SIGINT
    signal.signal(signal.SIGINT, lambda *_: sys.exit(int(how)))
out.mkdir(parents=True, exist_ok=True)
with open(out / "log.jsonl", "a") as f:
    for step in range(1, 100000):
        f.write(json.dumps({"step": step, "train/loss": 1.0 / step}) + "\\n")
        if step % 10 == 0:
            f.write(json.dumps({"step": step, "eval_loss": 0.5}) + "\\n")
        f.flush()
        time.sleep(0.05)
"""
# Lightning's own SIGINT: "Detected KeyboardInterrupt, attempting graceful shutdown", exit 1
LIGHTNING = """import sys, time, warnings
from pathlib import Path
import lightning as L
import torch
from lightning.pytorch.loggers import CSVLogger
warnings.filterwarnings("ignore")
out = Path(sys.argv[1])

class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        self.log("train_loss", 1.0 / (self.global_step + 1))
        time.sleep(0.05)
        return self.lin(batch).pow(2).mean()

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", 0.5)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

data = torch.utils.data.DataLoader(torch.zeros(100000, 2), batch_size=1)
L.Trainer(
    max_steps=100000, val_check_interval=10, limit_val_batches=1, num_sanity_val_steps=0,
    log_every_n_steps=1, accelerator="cpu", enable_checkpointing=False,
    enable_progress_bar=False, enable_model_summary=False,
    logger=CSVLogger(out / "csv", name="", version="", flush_logs_every_n_steps=1),
).fit(Tiny(), data, data)
"""


def _preset(tmp_path: Path, name: str, how: str) -> Path:
    (tmp_path / "trainer.py").write_text(TRAINER)
    path = tmp_path / f"{name}.toml"
    path.write_text(f"""[run]
name = "{name}"
output_dir = "runs/{name}"

[command]
argv = ["{sys.executable}", "{tmp_path / "trainer.py"}", "{{output_dir}}", "{how}"]

[source]
kind = "jsonl"
eval_every = 10

[verdict]
metric = "eval_loss"
anchor_step = 10
endpoint_step = 60000
healthy_max = 0.3
drift_min = 1.0
""")
    return path


def _lightning_preset(tmp_path: Path) -> Path:
    (tmp_path / "lit.py").write_text(LIGHTNING)
    path = tmp_path / "lit.toml"
    path.write_text(f"""[run]
name = "lit"
output_dir = "runs/lit"

[command]
argv = ["{sys.executable}", "{tmp_path / "lit.py"}", "{{output_dir}}"]

[source]
kind = "csv"
path = "csv"

[verdict]
metric = "val_loss"
anchor_step = 9
endpoint_step = 99999
healthy_max = 0.3
drift_min = 1.0
""")
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"}
    env.update(PYTHONUNBUFFERED="1", XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    return env


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
    )


def _wait(pred, what: str, limit_s: float = 90) -> None:
    deadline = time.monotonic() + limit_s
    while not pred():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _logged(folder: Path, name: str = "log.jsonl", probe: str = "eval_loss") -> bool:
    log = folder / name
    return log.exists() and probe.encode() in log.read_bytes()


def _kill(pid: int, script: str) -> None:
    """The trainer's group, where a failed stop left it running (its own pid, checked)."""
    try:
        if any(script in a for a in psutil.Process(pid).cmdline()):
            os.killpg(pid, signal.SIGKILL)
    except (psutil.NoSuchProcess, ProcessLookupError):
        pass


def _events(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "attempts.jsonl").read_text().splitlines()]


def _ends(folder: Path) -> list[dict]:
    return [e for e in _events(folder) if e["event"] == "end"]


def _state(tmp_path: Path, name: str) -> str:
    res = _cli(tmp_path, "runs", "--json")
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in res.stdout.splitlines() if x.strip()]
    [row] = [r for r in rows if r.get("name") == name]
    return row["state"]


def _watched(tmp_path: Path, preset: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fontaine_tui", "launch", str(preset), "--plain", "--poll", "0.3"],
        cwd=tmp_path,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _pids(folder: Path) -> list[int]:
    try:
        return [e["pid"] for e in _events(folder) if e["event"] == "begin"]
    except FileNotFoundError:
        return []


@pytest.mark.parametrize("how", ["1", "130", "0", "signal"])
def test_a_detached_run_stopped_is_stopped_whatever_it_exits(tmp_path, registry_path, how):
    res = _cli(tmp_path, "launch", str(_preset(tmp_path, "s", how)), "--detach", "-j")
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    folder = Path(doc["run_dir"])
    try:
        _wait(lambda: _logged(folder), "the trainer never logged a probe")
        stop = _cli(tmp_path, "stop", "runs/s", "--yes", "--json")
    finally:
        _kill(doc["pid"], "trainer.py")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    out = json.loads(stop.stdout.strip().splitlines()[-1])
    assert (out["cause"], out["status"]) == ("stopped", "stopped"), out
    assert "outside the program" not in out["describe"], out
    assert "command stopped by SIGINT at step" in out["describe"], out
    assert [e["cause"] for e in _ends(folder)] == ["stopped"], _events(folder)
    assert _state(tmp_path, "s") == "stopped"


@pytest.mark.parametrize("how", ["1", "0"])
def test_a_watched_run_stopped_from_outside_is_stopped_whatever_it_exits(
    tmp_path, registry_path, how
):
    folder = tmp_path / "runs" / "w"
    watcher = _watched(tmp_path, _preset(tmp_path, "w", how))
    try:
        _wait(lambda: _logged(folder), "the trainer never logged a probe")
        time.sleep(0.5)  # the watcher has read it
        stop = _cli(tmp_path, "stop", "runs/w", "--yes", "--json")
        said, _ = watcher.communicate(timeout=120)
    finally:
        if watcher.poll() is None:
            watcher.kill()
        for pid in _pids(folder):
            _kill(pid, "trainer.py")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert json.loads(stop.stdout.strip().splitlines()[-1])["cause"] == "stopped", stop.stdout
    assert "command stopped by SIGINT at step" in said, said[-3000:]
    assert "ALERT" not in said and "crashed" not in said and "failed" not in said, said[-3000:]
    assert [e["cause"] for e in _ends(folder)] == ["stopped"], _events(folder)
    assert _state(tmp_path, "w") == "stopped"


def test_a_sigint_nobody_here_sent_is_from_outside_the_program(tmp_path, registry_path):
    folder = tmp_path / "runs" / "o"
    watcher = _watched(tmp_path, _preset(tmp_path, "o", "signal"))
    try:
        _wait(lambda: _logged(folder), "the trainer never logged a probe")
        time.sleep(0.5)
        [pid] = _pids(folder)
        os.killpg(pid, signal.SIGINT)  # a Ctrl-C's, with no stop line: not this program's
        said, _ = watcher.communicate(timeout=120)
    finally:
        if watcher.poll() is None:
            watcher.kill()
        for pid in _pids(folder):
            _kill(pid, "trainer.py")
    assert "SIGINT from outside the program" in said, said[-3000:]
    assert [e["event"] for e in _events(folder)] == ["begin", "end"]
    assert [e["cause"] for e in _ends(folder)] == ["killed"], _events(folder)


def test_lightning_stopped_by_stop_is_stopped_not_crashed(tmp_path, registry_path):
    """Lightning takes SIGINT as a KeyboardInterrupt, shuts down gracefully and exits 1."""
    pytest.importorskip("lightning")
    folder = tmp_path / "runs" / "lit"
    watcher = _watched(tmp_path, _lightning_preset(tmp_path))
    try:
        probed = lambda: _logged(folder, "csv/metrics.csv", "val_loss")  # noqa: E731
        _wait(probed, "Lightning never logged a probe", limit_s=150)
        time.sleep(0.5)
        stop = _cli(tmp_path, "stop", "runs/lit", "--yes", "--json")
        said, _ = watcher.communicate(timeout=120)
    finally:
        if watcher.poll() is None:
            watcher.kill()
        for pid in _pids(folder):
            _kill(pid, "lit.py")
    assert "graceful shutdown" in (folder / "engine.out.log").read_text()
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert json.loads(stop.stdout.strip().splitlines()[-1])["cause"] == "stopped", stop.stdout
    assert "command stopped by SIGINT at step" in said, said[-3000:]
    assert "ALERT" not in said and "failed" not in said, said[-3000:]
    assert [e["cause"] for e in _ends(folder)] == ["stopped"], _events(folder)
    assert _state(tmp_path, "lit") == "stopped"


# a trainer that crashed, then hangs on the way out (wandb.finish, NCCL teardown in atexit)
CRASH_HANG = """import atexit, json, sys, time
from pathlib import Path
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
atexit.register(lambda: (print("wandb: Waiting for W&B process to finish...", flush=True),
                         time.sleep(120)))
with open(out / "log.jsonl", "a") as f:
    for step in range(1, 40):
        f.write(json.dumps({"step": step, "train/loss": 1.0 / step}) + "\\n")
        if step % 10 == 0:
            f.write(json.dumps({"step": step, "eval_loss": 0.5}) + "\\n")
        f.flush()
raise RuntimeError("CUDA error: an illegal memory access was encountered")
"""


def _stopped_once(tmp_path: Path, name: str, trainer: str, ready: bytes, never: str):
    """Launch `trainer` detached, stop it with `stop --json` once its output shows `ready`:
    (its run folder, its output log, the stop's result); the trainer is ended whatever."""
    preset = _preset(tmp_path, name, "1")
    (tmp_path / "trainer.py").write_text(trainer)
    res = _cli(tmp_path, "launch", str(preset), "--detach", "-j")
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    folder = Path(doc["run_dir"])
    out_log = folder / "engine.out.log"
    try:
        _wait(lambda: ready in out_log.read_bytes(), never)
        stop = _cli(tmp_path, "stop", f"runs/{name}", "--yes", "--json")
    finally:
        _kill(doc["pid"], "trainer.py")
    return folder, out_log, stop


def test_a_crash_printed_before_the_stop_stays_a_crash(tmp_path, registry_path):
    """The stop only ended what hung after the crash: the crash is the cause, its line the why."""
    folder, _, stop = _stopped_once(
        tmp_path, "c", CRASH_HANG, b"wandb: Waiting", "the trainer never hung"
    )
    assert stop.returncode == 0, stop.stdout + stop.stderr
    out = json.loads(stop.stdout.strip().splitlines()[-1])
    said = "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert (out["cause"], out["status"]) == ("crashed", "failed"), out
    assert out["cause_detail"] == said, out
    assert said in out["describe"] and "stopped" not in out["describe"], out
    [end] = _ends(folder)
    assert (end["cause"], end["detail"]) == ("crashed", said), _events(folder)
    assert _state(tmp_path, "c") == "failed"


# a trainer that logs a handled exception's traceback at its start, then trains on
HANDLED = """import json, logging, signal, sys, time
from pathlib import Path
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stdout)
signal.signal(signal.SIGINT, lambda *_: sys.exit(1))
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
try:
    import flash_attn_not_here  # noqa: F401
except ImportError:
    logging.exception("flash attention missing, falling back to eager attention")
with open(out / "log.jsonl", "a") as f:
    for step in range(1, 100000):
        f.write(json.dumps({"step": step, "train/loss": 1.0 / step}) + "\\n")
        if step % 10 == 0:
            f.write(json.dumps({"step": step, "eval_loss": 0.5}) + "\\n")
        f.flush()
        logging.info("step %d loss %.4f", step, 1.0 / step)
        time.sleep(0.02)
"""


def test_a_handled_traceback_long_before_the_stop_is_no_crash(tmp_path, registry_path):
    """Training went on after the traceback it printed: it was handled, and the stop is the
    cause."""
    folder, out_log, stop = _stopped_once(
        tmp_path, "h", HANDLED, b"INFO step 60 ", "the trainer never trained"
    )
    assert b"ModuleNotFoundError: No module named" in out_log.read_bytes()
    assert stop.returncode == 0, stop.stdout + stop.stderr
    out = json.loads(stop.stdout.strip().splitlines()[-1])
    assert (out["cause"], out["status"]) == ("stopped", "stopped"), out
    assert "command stopped by SIGINT at step" in out["describe"], out
    assert [e["cause"] for e in _ends(folder)] == ["stopped"], _events(folder)
    assert _state(tmp_path, "h") == "stopped"
