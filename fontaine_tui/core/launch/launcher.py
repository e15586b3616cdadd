"""Starting and owning the engine: argv from a preset, the process, its exit.

The engine runs in its own session (process group), so the console can close or crash
without taking a nine-hour run with it; a later console finds it again by pid.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.log.records import Checkpoint, Event, Probe, TrainPoint, parse_line
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.presets import LATER_KEYS, PLATFORM, RECIPE, Preset

# recipe/platform key -> engine flag, in the engine's argv order
RECIPE_FLAGS = ("model_size", "batch_size", "backward_chunks", "seed", "image_augment",
                "recompute_stats", "objective", "insulate_flow", "flow_decoder_init", "init",
                "lr", "warmup_steps", "steps", "eval_every", "eval_dataset_breakdown",
                "save_every", "chunk_grad_allreduce", "micro_batch", "datasets")
PLATFORM_FLAGS = ("num_workers", "prefetch_factor", "device", "precision",
                  "activation_checkpointing", "compile")
TAIL_BYTES = 256 << 10
OOM = re.compile(rb"out of memory|OutOfMemoryError|Cannot allocate memory", re.IGNORECASE)
CHECKPOINT_DIR = re.compile(r"step-(\d+)$")
STOPPED_BY = re.compile(r"stopped by (SIG[A-Z]+)")


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def _value(value: object) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def run_dir(preset: Preset, output_dir: str | Path | None = None,
            cwd: Path | None = None) -> Path:
    """The run folder: --output-dir, else the preset's run.output_dir, against the cwd."""
    target = Path(output_dir) if output_dir else Path(str(preset.run["output_dir"]))
    return (cwd or Path.cwd()) / target if not target.is_absolute() else target


def build_argv(preset: Preset, folder: Path, resume: bool = False,
               python: str = sys.executable) -> list[str]:
    """The engine command, 1:1 from [recipe] and [platform]: booleans are flags present or
    absent, empty strings are omitted, and so is a key added later (presets.LATER_KEYS) at
    its default (the engine's default is the same). More than one rank (nproc per node x
    nnodes) goes through torch.distributed.run, with nnodes > 1 over a c10d rendezvous."""
    plat = preset.platform
    nproc, nnodes = int(plat["nproc"]), int(plat.get("nnodes", 1))
    head = [python, "-m"]
    if nproc > 1 or nnodes > 1:
        head += ["torch.distributed.run", "--nproc-per-node", str(nproc)]
        if nnodes > 1:
            head += ["--nnodes", str(nnodes), "--node-rank", str(plat["node_rank"]),
                     "--rdzv-backend", "c10d", "--rdzv-endpoint", str(plat["rdzv_endpoint"]),
                     "--rdzv-id", str(plat["rdzv_id"]) or preset.run_name]
        head.append("-m")
    argv = [*head, "engine", "train", "--run-name", preset.run_name, "--output-dir", str(folder)]
    data_dir = str(preset.platform["data_dir"])
    if data_dir:
        argv += ["--data-dir", data_dir]

    later = {k: spec[k][1] for spec, keys in ((RECIPE, LATER_KEYS["recipe"]),
                                              (PLATFORM, LATER_KEYS["platform"])) for k in keys}

    def add(table: Mapping[str, object], key: str) -> None:
        value = table.get(key, later.get(key, ""))
        if key in later and value == later[key]:
            return
        if key == "backward_chunks" and table.get("micro_batch") and value == 1:
            return  # left at its default: the engine derives it from micro_batch
        if isinstance(value, bool):
            if value:
                argv.append(_flag(key))
        elif value != "":
            argv.extend((_flag(key), _value(value)))

    for key in RECIPE_FLAGS:
        add(preset.recipe, key)
    for key in PLATFORM_FLAGS:
        add(preset.platform, key)
    if resume:
        argv.append("--resume")
    return argv


def engine_identity(argv: list[str], timeout: float = 60) -> dict[str, object]:
    """What the engine of `argv` (its interpreter and --data-dir) says it is and reads:
    `python -m engine identity`, for prereg.json. {"error": why} when it cannot say: the
    launch goes on, and the run's provenance is the engine's own meta record alone."""
    import json

    cmd = [argv[0], "-m", "engine", "identity"]
    if "--data-dir" in argv:
        cmd += ["--data-dir", argv[argv.index("--data-dir") + 1]]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"python -m engine identity: {exc}"}
    last = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
    if res.returncode != 0:
        return {"error": f"python -m engine identity: {last}"}
    try:
        doc = json.loads(res.stdout)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        return {"error": "python -m engine identity: expected one JSON object"}
    return doc


def newest_checkpoint(folder: RunFolder) -> tuple[int, Path] | None:
    """(step, path) of the newest complete checkpoint (meta.json is written last)."""
    best = None
    root = folder.checkpoints
    if not root.is_dir():
        return None
    for p in root.iterdir():
        m = CHECKPOINT_DIR.match(p.name)
        if m and (p / "meta.json").is_file():
            step = int(m.group(1))
            if best is None or step > best[0]:
                best = (step, p)
    return best


# -- what the log's tail says ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogTail:
    last_step: int  # newest step with a train or eval record
    last_time: float | None
    last_event: str  # "end", "error", "start", "resume" or ""
    detail: str
    checkpoint_step: int | None
    oom: bool
    output: str  # the last line the engine printed (engine.out.log)


def read_tail(folder: RunFolder, nbytes: int = TAIL_BYTES, since: tuple[int, int] = (0, 0)
              ) -> LogTail:
    """The end of train_log.jsonl and engine.out.log without reading a long log whole.

    `since` = (log offset, output offset) where this start began: events and output from an
    earlier start (before a resume) do not explain this start's exit."""
    last_step, last_time, event, detail, ckpt = 0, None, "", "", None
    pos, data = _tail_bytes(folder.log, nbytes)
    for raw in data.split(b"\n")[:-1]:  # the last piece is torn or empty
        here, pos = pos, pos + len(raw) + 1
        try:
            rec = parse_line(raw)
        except ValueError:
            continue
        if isinstance(rec, (TrainPoint, Probe)):
            last_step, last_time = max(last_step, rec.step), rec.time
        elif isinstance(rec, Event):
            if rec.event == "resume":
                last_step = rec.step
            if here >= since[0]:
                event, detail = rec.event, rec.detail
        elif isinstance(rec, Checkpoint):
            ckpt = rec.step
    _, out = _tail_bytes(folder.engine_out, 16 << 10, since[1])
    oom = bool(OOM.search(detail.encode())) or bool(OOM.search(out))
    last_line = next((ln for ln in reversed(out.splitlines()) if ln.strip()), b"")
    return LogTail(last_step, last_time, event, detail, ckpt, oom,
                   literal(last_line.decode("utf-8", "replace").strip())[:300])


def _tail_bytes(path: Path, nbytes: int, offset: int = 0) -> tuple[int, bytes]:
    """(file offset of the first whole line returned, bytes to EOF)."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(offset, size - nbytes)
            fh.seek(start)
            data = fh.read()
    except OSError:
        return offset, b""
    if start > offset:  # drop the partial first line
        cut = data.find(b"\n") + 1
        start, data = start + cut, data[cut:]
    return start, data


# -- the process ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExitInfo:
    code: int | None  # exit status; None when killed by a signal or not our child
    signal: str | None  # "SIGKILL" when killed by a signal (or 128+N exit after SIGINT/SIGTERM)
    oom: bool
    last_step: int
    checkpoint_step: int | None
    event: str  # the log's last event ("end", "error", ...) or ""
    detail: str
    output: str = ""  # the engine's last printed line (for a failure the log does not explain)

    @property
    def status(self) -> str:
        """finished | stopped | killed | oom | failed | exited (not our child, no end event)."""
        if self.oom:
            return "oom"
        if self.code == 0 or (self.event == "end" and self.detail.startswith("finished")):
            return "finished"
        if self.event == "end" and self.signal in ("SIGINT", "SIGTERM"):
            return "stopped"
        if self.signal is not None and self.code is None:
            return "killed"
        if self.event == "error" or self.code is not None:
            return "failed"
        return "finished" if self.event == "end" else "exited"

    def describe(self) -> str:
        ckpt = ("no checkpoint" if self.checkpoint_step is None
                else f"last checkpoint step {self.checkpoint_step}")
        how = {
            "finished": "finished",
            "stopped": f"stopped by {self.signal}",
            "killed": f"killed by {self.signal}",
            "oom": "out of memory",
            "failed": "failed" if self.code is None else f"failed (exit {self.code})",
            "exited": "exited (exit status unknown: not started by this console)",
        }[self.status]
        text = f"engine {how} at step {self.last_step} ({ckpt})"
        if self.code is not None and self.status != "failed":
            text += f", exit {self.code}"
        if self.status in ("failed", "oom") and (self.detail or self.output):
            text += f": {literal(self.detail or self.output)}"
        if self.status == "killed" and self.signal == "SIGKILL":
            text += "; SIGKILL comes from outside: the kernel's OOM killer, or a user"
        return text


def exit_info(folder: RunFolder, returncode: int | None, since: tuple[int, int] = (0, 0)
              ) -> ExitInfo:
    tail = read_tail(folder, since=since)
    code, sig = returncode, None
    if returncode is not None and returncode < 0:
        code, sig = None, signal.Signals(-returncode).name
    elif returncode is not None and returncode > 128:
        try:
            sig = signal.Signals(returncode - 128).name
        except ValueError:
            sig = None
    if tail.last_event == "end" and code != 0 and (m := STOPPED_BY.search(tail.detail)):
        # This start's log says how it stopped; torchrun around ranks that stopped cleanly
        # exits 1, or aborts on the way out, and that is not the run's story.
        sig = m.group(1)
    return ExitInfo(code, sig, tail.oom and returncode != 0, tail.last_step, tail.checkpoint_step,
                    tail.last_event, tail.detail, tail.output)


def process_started(pid: int) -> float | None:
    """The process's start time (to tell it from a later process given the same pid)."""
    import psutil

    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return None
        return p.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def pid_alive(pid: int, started: float | None = None) -> bool:
    """Is `pid` running, and (if `started` is given) the same process as when registered?"""
    if pid <= 0:
        return False
    now_started = process_started(pid)
    if now_started is None:
        return False
    return started is None or abs(now_started - started) < 1.0


class EngineProcess:
    """An engine run: started here (a child) or found again by pid (reattached)."""

    def __init__(self, folder: RunFolder, pid: int, popen: subprocess.Popen | None,
                 started: float | None, since: tuple[int, int] = (0, 0)) -> None:
        self.folder, self.pid, self._popen, self.started = folder, pid, popen, started
        self.since = since  # where this start begins in train_log.jsonl and engine.out.log
        self._exit: ExitInfo | None = None

    @classmethod
    def start(cls, argv: list[str], folder: RunFolder, env: Mapping[str, str] | None = None
              ) -> EngineProcess:
        """Start the engine in its own session, stdout+stderr appended to engine.out.log."""
        run_env = dict(os.environ if env is None else env)
        run_env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            log_size = folder.log.stat().st_size
        except FileNotFoundError:
            log_size = 0
        with open(folder.engine_out, "ab") as out:
            since = (log_size, out.seek(0, os.SEEK_END))
            popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env=run_env, close_fds=True)
        return cls(folder, popen.pid, popen, process_started(popen.pid), since)

    @classmethod
    def reattach(cls, folder: RunFolder, pid: int, started: float | None = None
                 ) -> EngineProcess:
        """A run started by an earlier console; exit codes are then unknown, the log tells."""
        return cls(folder, pid, None, started)

    @property
    def is_child(self) -> bool:
        return self._popen is not None

    def poll(self) -> ExitInfo | None:
        """None while running; the exit, once, then the same answer."""
        if self._exit is not None:
            return self._exit
        if self._popen is not None:
            rc = self._popen.poll()
            if rc is None:
                return None
            self._exit = exit_info(self.folder, rc, self.since)
        else:
            if pid_alive(self.pid, self.started):
                return None
            self._exit = exit_info(self.folder, None)
        return self._exit

    def wait(self, timeout: float | None = None, interval: float = 0.1) -> ExitInfo | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (info := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(interval)
        return info

    def signal_group(self, sig: int) -> bool:
        """Send `sig` to the engine's process group (torchrun and its ranks, loader workers)."""
        if self.poll() is not None:
            return False
        try:
            os.killpg(self.pid, sig)  # its own session: the group id is its pid
        except ProcessLookupError:
            return False
        return True

    def stop(self, grace_int: float = 60.0, grace_term: float = 30.0) -> ExitInfo:
        """SIGINT (the engine checkpoints and exits), then SIGTERM, then SIGKILL."""
        for sig, grace in ((signal.SIGINT, grace_int), (signal.SIGTERM, grace_term)):
            self.signal_group(sig)
            info = self.wait(grace)
            if info is not None:
                return info
        self.signal_group(signal.SIGKILL)
        info = self.wait(10.0)
        if info is None:  # pragma: no cover - a process that survives SIGKILL (D state)
            raise RuntimeError(f"engine pid {self.pid} survived SIGKILL")
        return info
