"""Every trainer, end to end: the REAL library writes a tiny run (tests/writers/) while
`fontaine-tui attach RUN --plain --until-end` follows it, both real subprocesses.

For each kind: the endpoint probe is shown live, and each step once; `--until-end` ends by
itself with the verdict's exit code (the one `verdict` gives afterwards); no false alert, in
attach's output nor in `runs`; `runs` shows the run running while it is written and ended
after; the run banked, and a second preset that compares against it gets a verdict. One writer
run per kind serves every check (one Lightning run both of its loggers), all writers side by
side. A check a new kind does not pass yet is a `pytest.param(name, marks=pytest.mark.xfail(
strict=True, reason=...))` in that check's parametrize, naming what the kind lacks.

The writers' threads share this process with pytest, which swaps sys.stdout between a test's
phases and sets and pops PYTEST_CURRENT_TEST, on the main thread: those threads neither read
nor change the process's stdout or environment. The commands after a run (runs, verdict, bank)
run in this process on the main thread, within the first test that asks for the run, and each
writer's environment is copied on the main thread.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from tests.writers import common

# one worker runs the whole module (scripts/test: --dist loadgroup), its writers side by side;
# spread over two, each worker would run every writer
pytestmark = pytest.mark.xdist_group("any_trainer_live")

ROOT = Path(__file__).resolve().parents[2]
LIVE_S = 3.0  # the endpoint probe shown at most this long after the writer finished
GRACE_S = 5.0  # how long after the writer finished attach --until-end may take to end
FIRST = 4  # the verdict of the first preset: AMBIGUOUS (delta 0.16, between 0.05 and 0.5)
COMPARED = 3  # the second preset's, against the banked run: SAME-DRIFT (0.16 >= 0.5 x 0.16)
SIDE_BY_SIDE = 3  # writers at once: fast enough, and leaves the other worker's tests some CPU
FALSE_ALERTS = ("nan-loss", "stalled", "engine.out.log")


@dataclass(frozen=True)
class Kind:
    writer: tuple[str, ...]  # the module under tests.writers and its arguments
    folder: str  # the run folder, under the writer's output folder ("" for the folder itself)
    source: str  # the preset's [source] table
    metric: str
    anchor: int = common.ANCHOR
    endpoint: int = common.ENDPOINT
    stdout: str = ""  # a file in the run folder the writer's stdout goes to
    bank_preset: bool = False  # bank reads it only as the preset's [source] says

    def steps(self) -> range:
        """The train steps it logs (Lightning's from 0)."""
        return range(self.endpoint - common.STEPS + 1, self.endpoint + 1)


PRINTED = r"""kind = "lines"
path = "train.out"
eval = ["eval_loss"]
patterns = ['step:(?P<step>\d+) loss:(?P<loss>\S+)',
            'step:(?P<step>\d+) eval_loss:(?P<eval_loss>\S+)']"""
# Lightning counts steps from 0: its probes land at steps EVERY-1, 2*EVERY-1, ...
LIGHTNING = dict(anchor=common.ANCHOR - 1, endpoint=common.ENDPOINT - 1)
KINDS = {
    "lightning-csv": Kind(("lightning_run",), "csv", 'kind = "csv"', "val_loss", **LIGHTNING),
    "lightning-tb": Kind(("lightning_run",), "tb", 'kind = "tensorboard"', "val_loss", **LIGHTNING),
    "mlflow-sqlite": Kind(("mlflow_store", "sqlite"), "", 'kind = "mlflow"', "eval/loss"),
    "mlflow-file": Kind(("mlflow_store", "file"), "", 'kind = "mlflow"', "eval/loss"),
    # TensorBoard's names: the run `loss_eval` (add_scalars' sub-folder), its tag `loss`
    "tb-add_scalars": Kind(
        ("tb_scalars",),
        "",
        'kind = "tensorboard"\neval = ["loss_eval/*"]\nloss = "loss_train/loss"',
        "loss_eval/loss",
        bank_preset=True,
    ),
    "jsonl": Kind(("jsonl",), "", 'kind = "jsonl"', "eval/loss"),
    "wandb": Kind(("wandb_run",), "", 'kind = "wandb"', "eval/loss"),
    "trackio": Kind(("trackio_run",), "", 'kind = "trackio"\nrun = "live"', "eval/loss"),
    "lines": Kind(("printed",), "", PRINTED, "eval_loss", stdout="train.out", bank_preset=True),
}


@dataclass
class Seen:
    """What one attach made of one kind's run, and what the commands said after it."""

    kind: Kind
    folder: Path
    lines: list[tuple[float, str]] = field(default_factory=list)  # attach's stdout, timed
    stderr: str = ""
    writer_end: float = 0.0
    attach_rc: int | None = None
    ended_itself: bool = False
    runs_during: list[dict] = field(default_factory=list)
    runs_after: list[dict] = field(default_factory=list)
    runs_answer: tuple[int, str] = (0, "")  # `runs --json` after the end, as it printed it
    verdict_rc: int | None = None
    bank: tuple[int, str] = (0, "")
    compared: tuple[int, str] = (0, "")

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)


def preset_text(kind: Kind, name: str, comparator: str = "") -> str:
    bounds = "healthy_max = 0.05\ndrift_min = 0.5\n"
    if comparator:
        bounds = (
            f'healthy_max = 0.05\nreference = "base"\ndrift_fraction = 0.5\n'
            f'drift_min = 0.08\n\n[comparators.base]\nbank = "{comparator}"\n'
        )
    return f'''[run]
name = "{name}"
question = "Does the eval loss rise after the first probe?"

[source]
{kind.source}

[verdict]
metric = "{kind.metric}"
anchor_step = {kind.anchor}
endpoint_step = {kind.endpoint}
{bounds}'''


def command(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """One fontaine-tui command in this process (a subprocess would start Python and import
    the readers again for each), in `env`: its exit code, its stdout and stderr together.

    On the main thread only, within a test: `cli.main` writes through sys.stdout, which is the
    process's, and pytest swaps it on the main thread between a test's phases. From a writer's
    thread, a swap landing while the command runs sends its answer to pytest's capture, and
    the command's own comes back empty."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError(f"command {argv}: on the main thread only")
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        for k in ("FONTAINE_REGISTRY", "FONTAINE_BANK"):
            mp.setenv(k, env[k])
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            rc = main(argv)
    return rc, out.getvalue()


def runs_rows(lines: list[str], folders: dict[str, Path]) -> dict[str, list[dict]]:
    """Each kind's rows in `runs --json` lines (its run folder's)."""
    rows: dict[str, list[dict]] = {name: [] for name in folders}
    for line in lines:
        with contextlib.suppress(ValueError):
            doc = json.loads(line)
            for name, folder in folders.items():
                if isinstance(doc, dict) and doc.get("run_dir") == str(folder.resolve()):
                    rows[name].append(doc)
    return rows


def read_lines(attach: subprocess.Popen, into: list[tuple[float, str]]) -> None:
    """Attach's stdout, each line timed as it comes; then its exit, waited for at once.

    Attach ends with the run, often well before the writer's process (Lightning's takes tens
    of seconds to exit): waited for only after the writer, it stays a zombie meanwhile, and a
    test that ends then fails (tests/timeouts.py, `no_unreaped_child`) when the attach was
    started during it (the writers after the first SIDE_BY_SIDE)."""
    for line in attach.stdout:
        into.append((time.monotonic(), line.rstrip("\n")))
    attach.wait()


@dataclass
class Written:
    """One writer's run as its thread saw it (each kind's `Seen`), with the folder its presets
    are in and the environment its commands take."""

    seen: dict[str, Seen]
    root: Path
    env: dict[str, str]


def run_writer(
    writer: tuple[str, ...], names: list[str], root: Path, environ: dict[str, str]
) -> Written:
    """Start the writer, and at once one attach per kind it writes; ask `runs` while it writes
    (a poller, a subprocess). On a writer's thread (`observe`), so `environ` is the process's
    environment as the main thread copied it: os.environ, iterated here, could lose
    PYTEST_CURRENT_TEST between a key and its value (KeyError)."""
    out = root / "out"
    env = {
        k: v
        for k, v in environ.items()
        if not k.startswith(("TRACKIO_", "GRADIO_", "WANDB_", "HF_TOKEN"))
    }
    env.update(
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
        FONTAINE_REGISTRY=str(root / "state" / "babysit.toml"),
        FONTAINE_BANK=str(root / "bank"),
        # nothing online, nothing in the home folder
        HF_HUB_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        TRACKIO_DIR=str(out),
        GRADIO_ANALYTICS_ENABLED="False",
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        WANDB_DIR=str(out),
        WANDB_CONFIG_DIR=str(root / "wandb-config"),
        WANDB_CACHE_DIR=str(root / "wandb-cache"),
        WANDB_DATA_DIR=str(root / "wandb-data"),
    )
    seen = {}
    for name in names:
        kind = KINDS[name]
        folder = out / kind.folder if kind.folder else out
        folder.mkdir(parents=True, exist_ok=True)
        (root / f"{name}.toml").write_text(preset_text(kind, name))
        seen[name] = Seen(kind, folder)
    log = open(root / "writer.log", "w")  # noqa: SIM115 - closed below
    printed = [s.folder / s.kind.stdout for s in seen.values() if s.kind.stdout]
    stdout = open(printed[0], "w") if printed else log  # noqa: SIM115 - closed below
    writer = subprocess.Popen(
        [sys.executable, "-m", f"tests.writers.{writer[0]}", str(out), *writer[1:]],
        cwd=ROOT,
        env=env,
        stdout=stdout,
        stderr=log,
    )
    attaches, threads = {}, []
    for name, s in seen.items():
        p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fontaine_tui",
                "attach",
                str(s.folder),
                "--plain",
                "--until-end",
                "--preset",
                str(root / f"{name}.toml"),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        attaches[name] = p
        t = threading.Thread(target=read_lines, args=(p, s.lines), daemon=True)
        t.start()
        threads.append(t)
    folders = {name: s.folder for name, s in seen.items()}
    looks = open(root / "runs.log", "w")  # noqa: SIM115 - closed below
    poller = subprocess.Popen(
        [sys.executable, "-m", "tests.writers.poll_runs", str(root / "stop")],
        cwd=ROOT,
        env=env,
        stdout=looks,
        stderr=subprocess.STDOUT,
    )
    try:
        # the writer waits, its run begun, until each attach is up (`following ...`) and the
        # poller has asked runs once
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            all(s.lines or attaches[name].poll() is not None for name, s in seen.items())
            and ((root / "runs.log").stat().st_size or poller.poll() is not None)
        ):
            time.sleep(0.02)
        (root / "go").touch()
        begun = time.time()
        writer.wait(120)
        end, finished = time.monotonic(), time.time()
        log.close()
        stdout.close()
        assert writer.returncode == 0, (root / "writer.log").read_text()[-3000:]
        for name, p in attaches.items():
            s = seen[name]
            s.writer_end = end
            try:
                s.attach_rc = p.wait(timeout=max(0.1, end + GRACE_S - time.monotonic()))
                s.ended_itself = True
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGINT)
                try:
                    s.attach_rc = p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    s.attach_rc = p.wait()
            s.stderr = p.stderr.read()
        (root / "stop").touch()
        poller.wait(30)
    finally:
        looks.close()
        for p in (writer, poller, *attaches.values()):
            if p.poll() is None:
                p.kill()
                p.wait()
    for t in threads:
        t.join(5)
    during = [
        line.split(" ", 1)[1]
        for line in (root / "runs.log").read_text().splitlines()
        if " " in line and begun <= float(line.split(" ", 1)[0]) < finished
    ]
    for name, rows in runs_rows(during, folders).items():
        seen[name].runs_during = rows
    return Written(seen, root, env)


def ask_after(written: Written) -> dict[str, Seen]:
    """What the commands say of an ended run: `runs`, then verdict, bank and the compared
    verdict of each kind. On the main thread (`command`)."""
    seen, root, env = written.seen, written.root, written.env
    runs_answer = command(["runs", "--json"], env)
    after = runs_rows(runs_answer[1].splitlines(), {name: s.folder for name, s in seen.items()})
    for name, s in seen.items():
        s.runs_after, s.runs_answer = after[name], runs_answer
        preset = str(root / f"{name}.toml")
        s.verdict_rc, _ = command(["verdict", str(s.folder), "--preset", preset], env)
        bank_name = name.replace("-", "_")
        how = ["--preset", preset] if s.kind.bank_preset else []
        s.bank = command(["bank", "add", str(s.folder), "--as", bank_name, "--ended", *how], env)
        compared = root / f"{name}-compared.toml"
        compared.write_text(preset_text(s.kind, f"{name}-compared", comparator=bank_name))
        s.compared = command(["verdict", str(s.folder), "--preset", str(compared)], env)
    return seen


@pytest.fixture(autouse=True)
def registry_path(tmp_path: Path) -> Path:
    """The registry each command here names itself (`command`'s env): no test here sets one in
    the process's environment."""
    return tmp_path / "state" / "babysit.toml"


@pytest.fixture(autouse=True)
def bank_path(tmp_path: Path) -> Path:
    """The bank, as the registry: each writer's commands name their own."""
    return tmp_path / "bank"


@pytest.fixture(scope="module")
def observe(request, tmp_path_factory):
    """Each writer the selected tests need, SIDE_BY_SIDE at a time (most of a run is sleeping
    and waiting), the slowest (Lightning's) first, started when the first test asks; a test
    waits for its own writer's. The first test that asks for a writer's run asks the commands
    after it (`ask_after`), on the main thread."""
    here = {
        item.callspec.params["name"]
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec")
    }
    writers = list(dict.fromkeys(k.writer for name, k in KINDS.items() if name in here))
    environ = dict(os.environ)  # here, on the main thread: see run_writer
    pool = ThreadPoolExecutor(max_workers=SIDE_BY_SIDE)
    runs = {}
    for writer in writers:
        names = [n for n, k in KINDS.items() if k.writer == writer]
        root = tmp_path_factory.mktemp(names[0])
        runs[writer] = pool.submit(run_writer, writer, names, root, environ)

    asked: dict[tuple[str, ...], dict[str, Seen]] = {}

    def get(name: str) -> Seen:
        writer = KINDS[name].writer
        if writer not in asked:  # a writer's failure fails its tests
            asked[writer] = ask_after(runs[writer].result())
        return asked[writer][name]

    yield get
    pool.shutdown(wait=True)


@pytest.mark.parametrize("name", KINDS)
def test_the_endpoint_probe_is_shown_live(name, observe):
    s = observe(name)
    shown = [t for t, line in s.lines if line.startswith(f"probe step {s.kind.endpoint}:")]
    assert shown, f"no probe at step {s.kind.endpoint} in:\n{s.text()}\n{s.stderr}"
    assert s.kind.metric in next(line for t, line in s.lines if t == shown[0])
    assert shown[0] - s.writer_end <= LIVE_S, (
        f"shown {shown[0] - s.writer_end:.1f} s after the writer finished:\n{s.text()}"
    )
    final = f"verdict: AMBIGUOUS (final, step {s.kind.endpoint} of"
    assert any(line.startswith(final) for _, line in s.lines), s.text()


@pytest.mark.parametrize("name", KINDS)
def test_each_step_is_shown_once(name, observe):
    s = observe(name)
    steps = [int(line.split()[1].split("/")[0]) for _, line in s.lines if line.startswith("step ")]
    assert steps == list(s.kind.steps()), s.text()


@pytest.mark.parametrize("name", KINDS)
def test_until_end_ends_by_itself(name, observe):
    s = observe(name)
    assert s.ended_itself, f"attach --until-end still following after {GRACE_S} s:\n{s.text()}"


@pytest.mark.parametrize("name", KINDS)
def test_until_end_exits_with_the_verdicts_code(name, observe):
    s = observe(name)
    assert s.verdict_rc == FIRST
    assert s.attach_rc == s.verdict_rc, f"{s.text()}\n{s.stderr}"


@pytest.mark.parametrize("name", KINDS)
def test_no_false_alert(name, observe):
    s = observe(name)
    said = "\n".join([s.text(), s.stderr, *map(json.dumps, s.runs_during + s.runs_after)])
    for alert in FALSE_ALERTS:
        assert alert not in said, said
    # the warning rules, as runs judges them while the run goes and after it ended
    rows = s.runs_during + s.runs_after
    assert s.runs_during and s.runs_after, (rows, s.runs_answer)
    assert not [w for row in rows for w in row["warnings"]], rows


@pytest.mark.parametrize("name", KINDS)
def test_runs_shows_it_running_then_ended(name, observe):
    s = observe(name)
    during = [row["state"] for row in s.runs_during]
    assert "running" in during, during
    assert [row["state"] for row in s.runs_after] == ["ended"], (s.runs_after, s.runs_answer)


@pytest.mark.parametrize("name", KINDS)
def test_bank_it_and_compare_against_it(name, observe):
    s = observe(name)
    assert s.bank[0] == 0, s.bank[1]
    assert s.compared[0] == COMPARED, s.compared[1]


def test_a_command_runs_only_on_the_main_thread(tmp_path):
    """A writer's thread cannot run a command: pytest could swap sys.stdout under it."""
    env = {"FONTAINE_REGISTRY": str(tmp_path / "babysit.toml"), "FONTAINE_BANK": str(tmp_path)}
    with ThreadPoolExecutor(1) as pool:
        asked = pool.submit(command, ["--version"], env)
        with pytest.raises(RuntimeError, match="on the main thread only"):
            asked.result(60)
    rc, said = command(["--version"], env)  # and the main thread can
    assert rc == 0 and said.startswith("fontaine-tui "), said


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, exited and not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


STARTER = """import subprocess, sys, time
from pathlib import Path
said = Path(sys.argv[2])
with open(said, "w") as out:
    poller = subprocess.Popen([sys.executable, "-m", "tests.writers.poll_runs", sys.argv[1]],
                              stdout=out, stderr=subprocess.STDOUT)
while not said.stat().st_size and poller.poll() is None:  # until it has asked runs once
    time.sleep(0.02)
print(poller.pid)
"""


def test_the_runs_poller_ends_with_the_process_that_started_it(tmp_path):
    """A test process ended past its time bound never writes the poller's STOP: the poller
    ends by itself once the process that started it is gone, and asks `runs` no more."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FONTAINE_REGISTRY": str(tmp_path / "babysit.toml"),
        "FONTAINE_BANK": str(tmp_path / "bank"),
    }
    said = tmp_path / "runs.log"
    starter = subprocess.run(
        [sys.executable, "-c", STARTER, str(tmp_path / "stop"), str(said)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert starter.returncode == 0, starter.stderr
    pid = int(starter.stdout)
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        assert not alive(pid), said.read_text()[-2000:]
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
