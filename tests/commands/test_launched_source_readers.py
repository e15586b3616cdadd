"""`get`, `inspect`, `bank add` and `seal` on a launched [command] run read it through the
[source] its prereg.json froze, as `verdict` does: the patterns of a trainer that only prints,
a trackio store under the run folder ({output_dir} filled in), a Trainer's trainer_state.json
with its own rule of which keys are probes. The recorder's telemetry.jsonl in the folder is
never the run's log. Each run is launched for real (`launch --plain`, real subprocesses; the
trackio one logs with the real library); what `get` prints is compared with the log read here
directly."""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fontaine_tui.core.verdict import blind

STEPS, EVERY = 12, 4

PRINTED = """\
import math, time
for step in range(1, 13):
    print(f"step:{step} loss:{2.0 * math.exp(-step / 5) + 0.1:.4f} lr:1.0e-04", flush=True)
    if step % 4 == 0:
        print(f"step:{step} eval_loss:{0.9 + 0.02 * step:.4f}", flush=True)
    time.sleep(0.1)
print("End of training", flush=True)
"""
PATTERNS = [
    r"step:(?P<step>\d+) loss:(?P<loss>\S+)",
    r"step:(?P<step>\d+) eval_loss:(?P<eval_loss>\S+)",
]
LINES_SOURCE = f"""kind = "lines"
eval = ["eval_loss"]
patterns = [{", ".join(f"'{p}'" for p in PATTERNS)}]"""

TRACKIO = """\
import math, time, trackio
trackio.init(project="live", name="live")
for step in range(1, 13):
    values = {"train/loss": 2.0 * math.exp(-step / 5) + 0.1}
    if step % 4 == 0:
        values["eval/loss"] = 0.9 + 0.02 * step
    trackio.log(values, step=step)
    time.sleep(0.1)
trackio.finish()
"""
TRACKIO_SOURCE = 'kind = "trackio"\npath = "{output_dir}/trackio"\nrun = "live"'

# a Trainer's record as transformers writes it: each checkpoint's trainer_state.json, the
# train entries logging `loss`, the eval entries `eval_loss`, the summary `train_loss` last
HF = """\
import json, math, os, sys, time
out, history = sys.argv[1], []
def save(where, step):
    os.makedirs(where, exist_ok=True)
    state = {"global_step": step, "log_history": history, "max_steps": 12}
    with open(os.path.join(where, "trainer_state.json"), "w") as f:
        json.dump(state, f, indent=2, sort_keys=True)
for step in range(1, 13):
    history.append({"epoch": step / 12, "grad_norm": 1.0 / step, "learning_rate": 1e-4,
                    "loss": round(2.0 * math.exp(-step / 5) + 0.1, 4), "step": step})
    if step % 4 == 0:
        history.append({"epoch": step / 12, "eval_loss": 0.9 + 0.02 * step,
                        "eval_runtime": 0.1, "step": step})
        save(os.path.join(out, f"checkpoint-{step}"), step)
    time.sleep(0.1)
history.append({"epoch": 1.0, "step": 12, "train_loss": 0.7, "train_runtime": 1.2})
save(out, 12)
"""
HF_SOURCE = 'kind = "hf_trainer"'

RUNS = {  # name: (trainer, its [source], the metric the verdict reads, a train key)
    "lines": (PRINTED, LINES_SOURCE, "eval_loss", "loss"),
    "trackio": (TRACKIO, TRACKIO_SOURCE, "eval/loss", "train/loss"),
    "hf": (HF, HF_SOURCE, "eval_loss", "loss"),
}


def _preset(root: Path, name: str, blind: bool = False) -> Path:
    trainer, source, metric, _ = RUNS[name.removesuffix("_blind")]
    script = root / f"train_{name}.py"  # never the library's own name (trackio.py)
    script.write_text(trainer)
    env = 'env = { TRACKIO_DIR = "{output_dir}/trackio" }\n' if name == "trackio" else ""
    endpoint = 24 if blind else STEPS  # blinded: the run ends before its endpoint, hidden
    path = root / f"{name}.toml"
    path.write_text(f"""[run]
name = "{name}"
output_dir = "runs/{name}"

[command]
argv = ["{sys.executable}", "{script}", "{{output_dir}}"]
{env}
[source]
{source}
eval_every = {EVERY}

[verdict]
metric = "{metric}"
anchor_step = {EVERY}
endpoint_step = {endpoint}
healthy_max = 0.05
drift_min = 0.5
{"blind = true" if blind else ""}
""")
    return path


def _cli(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "FONTAINE_REGISTRY": str(root / "state" / "babysit.toml"),
        "FONTAINE_BANK": str(root / "bank"),
        "FONTAINE_TELEMETRY_S": "0.2",  # the recorder writes telemetry.jsonl into the folder
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("FONTAINE_NOTIFY", None)
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each run launched to its end; the folder that holds them."""
    pytest.importorskip("trackio")
    root = tmp_path_factory.mktemp("launched")
    for name in (*RUNS, "lines_blind"):
        res = _cli(root, "launch", str(_preset(root, name, name.endswith("_blind"))), "--plain")
        assert "command finished at step 12, exit 0" in res.stdout, res.stdout[-2000:] + res.stderr
        assert (root / "runs" / name / "prereg.json").is_file()
    return root


def _get(root: Path, name: str, metric: str) -> dict:
    res = _cli(root, "get", f"runs/{name}", "--metric", metric, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _printed(folder: Path) -> dict[str, dict[int, float]]:
    """The printed lines read here with the preset's patterns."""
    out: dict[str, dict[int, float]] = {"loss": {}, "eval_loss": {}}
    for line in (folder / "engine.out.log").read_text().splitlines():
        for pattern in PATTERNS:
            if m := re.fullmatch(pattern, line.split(" lr:")[0]):
                key = next(k for k in m.groupdict() if k != "step")
                out[key][int(m["step"])] = float(m[key])
    return out


def _trackio(folder: Path) -> dict[str, dict[int, float]]:
    """The trackio store read here (its metrics table: a JSON object a step)."""
    out: dict[str, dict[int, float]] = {"train/loss": {}, "eval/loss": {}}
    db = sqlite3.connect(f"file:{folder / 'trackio' / 'live.db'}?mode=ro", uri=True)
    try:
        for step, metrics in db.execute("SELECT step, metrics FROM metrics WHERE run_name='live'"):
            for key, value in json.loads(metrics).items():
                out[key][step] = value
    finally:
        db.close()
    return out


def _trainer_state(folder: Path) -> dict[str, dict[int, float]]:
    """The Trainer's own record read here: its log_history's train and eval entries."""
    out: dict[str, dict[int, float]] = {"loss": {}, "eval_loss": {}}
    for entry in json.loads((folder / "trainer_state.json").read_text())["log_history"]:
        for key in out:
            if key in entry:
                out[key][entry["step"]] = entry[key]
    return out


READ_HERE = {"lines": _printed, "trackio": _trackio, "hf": _trainer_state}


@pytest.mark.parametrize("name", list(RUNS))
def test_get_reads_a_launched_run_through_its_frozen_source(launched: Path, name: str) -> None:
    folder = launched / "runs" / name
    assert (folder / "telemetry.jsonl").is_file()  # the recorder's, beside the run's own log
    logged = READ_HERE[name](folder)
    _, _, metric, train = RUNS[name]
    for key, kind in ((train, "train"), (metric, "probe")):
        doc = _get(launched, name, key)
        assert doc["kind"] == kind, doc
        assert doc["steps"] == sorted(logged[key]), (key, doc)
        assert all(
            math.isclose(v, logged[key][s], rel_tol=1e-12)
            for s, v in zip(doc["steps"], doc["values"], strict=True)
        ), (key, doc, logged[key])
    assert _get(launched, name, metric)["steps"] == list(range(EVERY, STEPS + 1, EVERY))


@pytest.mark.parametrize("name", list(RUNS))
def test_inspect_names_the_launched_runs_log_never_the_telemetry(launched: Path, name: str) -> None:
    folder = launched / "runs" / name
    res = _cli(launched, "inspect", f"runs/{name}", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    frozen = json.loads((folder / "prereg.json").read_text())["preset"]["source"]
    assert doc["format"]["kind"] == frozen["kind"], doc["format"]
    assert doc["format"]["run"] == frozen.get("run", ""), doc["format"]
    want = {"lines": "engine.out.log", "trackio": "live.db", "hf": "trainer_state.json"}[name]
    assert [Path(f).name for f in doc["format"]["files"]] == [want], doc["format"]
    assert not any("telemetry" in str(c) for c in doc["candidates"]), doc["candidates"]
    _, _, metric, train = RUNS[name]
    roles = {k["key"]: k["role"] for k in doc["keys"]}
    assert roles[metric] == "eval" and roles[train] == "loss", roles


def test_get_on_a_trainer_run_separates_the_train_loss_from_the_probes(launched: Path) -> None:
    assert _get(launched, "hf", "loss")["kind"] == "train"  # never "logged by both"
    assert _get(launched, "hf", "eval_loss")["kind"] == "probe"
    res = _cli(launched, "get", "runs/hf", "--metric", "probe:loss")
    assert res.returncode == 2 and res.stdout == "", res.stdout
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "no probe logged 'loss'" in lines[0], res.stderr


def test_get_keeps_a_blinded_launched_runs_probe_hidden(launched: Path) -> None:
    res = _cli(launched, "get", "runs/lines_blind", "--metric", "eval_loss")
    assert res.returncode == blind.EXIT_BLINDED and res.stdout == "", res.stdout
    assert "hidden while the run is blinded" in res.stderr, res.stderr
    train = _get(launched, "lines_blind", "loss")  # a train series is health: shown
    assert train["kind"] == "train" and train["steps"] == list(range(1, STEPS + 1))


def test_bank_add_and_seal_read_a_printed_lines_run(launched: Path) -> None:
    res = _cli(launched, "bank", "add", "runs/lines", "--as", "lines_base")
    assert res.returncode == 0, res.stderr
    assert "engine.out.log (lines)" in res.stdout and "(3 probes" in res.stdout, res.stdout
    res = _cli(launched, "seal", "runs/lines")
    assert res.returncode == 0, res.stderr
    bundle = next((launched / "runs" / "lines").glob("*.seal.zip"))
    with zipfile.ZipFile(bundle) as z:
        names = z.namelist()
    assert any(n.endswith("engine.out.log") for n in names), names
    assert not any(n.endswith("telemetry.jsonl") for n in names), names


def test_a_banked_launched_run_names_the_host_its_prereg_records(launched: Path) -> None:
    """A [command] run writes no meta record: its bank entry names the host prereg.json froze."""
    host = json.loads((launched / "runs" / "hf" / "prereg.json").read_text())["host"]
    assert host
    res = _cli(launched, "bank", "add", "runs/hf", "--as", "hf_base")
    assert res.returncode == 0, res.stderr
    assert f"banked run, {host}, ranks not recorded, device not recorded" in res.stdout, res.stdout
    res = _cli(launched, "bank", "list")
    assert res.returncode == 0, res.stderr
    assert f"banked run, {host}, " in res.stdout and "unknown host" not in res.stdout, res.stdout
