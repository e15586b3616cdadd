"""`fontaine-tui launch PRESET`: guards, freeze, start, register, then babysit."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.text import literal

ORDER = 10
EPILOG = ("--plain exits with the verdict's code (as `fontaine-tui verdict`) when the engine "
          "finished, 1 when it did not, 2 when the launch was refused, 130 when detached by "
          "Ctrl-C (the run keeps going)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("launch", help="check the host, freeze the pre-registration, start and "
                       "watch a run", description="Check the host, freeze prereg.json, start the "
                       "engine in its own session, register it, and watch it.", epilog=EPILOG)
    p.add_argument("preset", help="preset name or path")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in its folder from its newest checkpoint")
    p.add_argument("--output-dir", metavar="DIR", help="run folder (default: the preset's "
                   "run.output_dir, relative to the current folder)")
    p.add_argument("--plain", action="store_true",
                   help="print records, warnings and the verdict line by line (no console)")
    p.add_argument("--yes-ram", action="store_true",
                   help="launch even if the RAM check would refuse")
    p.add_argument("--stop-on-exit", action="store_true",
                   help="with --plain: Ctrl-C stops the engine instead of detaching")
    p.add_argument("--poll", type=float, default=2.0, metavar="S",
                   help="seconds between process/telemetry polls (default 2)")
    p.add_argument("--detach", action="store_true",
                   help="start, register and exit: the run goes on unwatched (babysit, attach)")
    p.add_argument("--json", action="store_true",
                   help="with --detach: print the launched run as one JSON line")
    p.add_argument("--on", metavar="HOST",
                   help="launch on HOST over SSH (its [hosts.HOST] in config.toml: project, "
                   "python, env), then watch it from here; slurm:PARTITION submits the run "
                   "as a Slurm batch job ([slurm] in config.toml: time, account, qos, ...)")
    p.add_argument("--ssh-config", metavar="FILE", help="with --on: ssh client config file")
    p.set_defaults(func=run)


def prepare(preset_name: str, output_dir: str | None, resume: bool, yes_ram: bool,
            registry=None):
    """Everything before starting: (preset, folder, findings, argv, registry, telemetry).
    Writes nothing."""
    from fontaine_tui.core.host.memory import hostname
    from fontaine_tui.core.host.telemetry import sample
    from fontaine_tui.core.launch import guards
    from fontaine_tui.core.launch.launcher import build_argv, pid_alive, run_dir
    from fontaine_tui.core.launch.registry import Registry
    from fontaine_tui.core.runfolder import RunFolder
    from fontaine_tui.core.verdict.presets import load_preset

    preset = launchable(load_preset(preset_name))
    folder = RunFolder(run_dir(preset, output_dir).resolve())
    registry = registry or Registry()
    entry = registry.find(folder.root, hostname())
    running = (entry.pid if entry is not None and entry.status in ("running", "attached")
               and pid_alive(entry.pid, entry.pid_started or None) else None)
    telemetry = sample()
    findings = guards.check_all(preset, folder, telemetry, resume=resume, yes_ram=yes_ram,
                                running_pid=running)
    return preset, folder, findings, build_argv(preset, folder.root, resume), registry, telemetry


def launchable(preset):
    """The preset, if `launch` can start its run (the engine's recipe or its [command])."""
    if not preset.launchable and preset.source is not None:
        raise InputError(f"{preset.path}: source.kind: {preset.source.kind!r}: this preset reads "
                         "a run another trainer writes; it cannot be launched (attach, replay, "
                         "verdict or bank the run's folder with it, or give it a [command] "
                         "that starts the run)")
    return preset


def run(args: argparse.Namespace) -> int:
    from fontaine_tui.core.host.memory import hostname
    from fontaine_tui.core.launch import guards
    from fontaine_tui.core.launch.launcher import EngineProcess, engine_identity, label
    from fontaine_tui.core.launch.registry import Entry
    from fontaine_tui.core.verdict.prereg import freeze, read_prereg, utc_iso

    if args.poll <= 0:
        raise InputError(f"--poll: expected a positive number of seconds, got {args.poll}")
    if args.on:
        return run_on(args)
    preset, folder, findings, argv, registry, telemetry = prepare(
        args.preset, args.output_dir, args.resume, args.yes_ram)
    if (why := guards.refusal(findings)) is not None:
        raise InputError(why)  # one line, exit 2, nothing written
    for f in findings:
        if f.level in ("warn", "info"):
            print(f"{f.level}: {f.message}", file=sys.stderr)
    folder.root.mkdir(parents=True, exist_ok=True)
    host = hostname()
    prereg = (read_prereg(folder) if args.resume else
              freeze(folder, preset, argv, host,
                     provenance={**engine_identity(argv), "device": {
                         "requested": preset.platform["device"],
                         "gpus": [f"{g.name} {g.uuid}" for g in telemetry.gpus or ()],
                         "gpu_status": telemetry.gpu_status}}))
    try:
        engine = EngineProcess.start(argv, folder)
    except OSError as exc:
        if not args.resume:  # nothing ran: the folder is not a launched run
            folder.prereg.unlink(missing_ok=True)
        raise InputError(f"cannot start the engine ({argv[0]}): {exc.strerror or exc}") from None
    attempt = record_attempt(folder, "resume" if args.resume else "launch", engine, host)
    entry = Entry(name=preset.run_name, run_dir=str(folder.root), host=host, preset=preset.name,
                  preset_sha256=prereg.preset_sha256, pid=engine.pid,
                  pid_started=engine.started or 0.0, launched_at=prereg.launched_at,
                  status="running", last_step=0, poll_cadence_s=args.poll,
                  updated_at=utc_iso(time.time()))
    try:
        if engine.started is None:  # `stop` would have no way to tell it from a reused pid
            raise InputError(f"engine pid {engine.pid}: its start time could not be read, "
                             "so `stop` could not tell it from a later process with that pid")
        registry.upsert(entry)
    except (InputError, OSError) as exc:
        print(f"warn: run not registered ({exc})", file=sys.stderr)
    what = "resumed" if args.resume else "launched"
    if args.detach and args.json:
        import json

        print(json.dumps({"run_dir": str(folder.root), "pid": engine.pid,
                          "pid_started": engine.started, "host": host, "attempt": attempt,
                          "preset_sha256": prereg.preset_sha256,
                          "launched_at": prereg.launched_at}), flush=True)
        return 0
    print(f"{what} {preset.name}: engine pid {engine.pid} in {literal(str(folder.root))} "
          f"(prereg sha256 {prereg.preset_sha256[:12]}, launched {prereg.launched_at})",
          flush=True)
    if args.detach:
        announce(preset, str(folder.root), label(engine), prereg.preset_sha256)
        print(f"  watch it: fontaine-tui attach {literal(str(folder.root))}  (or: fontaine-tui babysit)")
        return 0
    if not args.plain:
        try:
            from fontaine_tui.console import run_console
            from fontaine_tui.core.follow.local import LocalRun
        except ImportError as exc:  # pragma: no cover - the console lands separately
            print(f"no console ({exc}); following with --plain", file=sys.stderr)
        else:
            from fontaine_tui.core.host.telemetry import sample

            def telemetry():
                return sample(pid=None if engine.poll() else engine.pid)

            closed: list = []
            finisher = Finisher(preset, folder, engine, registry, host, prereg, attempt)
            code = run_console(source=LocalRun(folder.root), preset=preset, mode="launch",
                               process=engine, registry=registry, telemetry=telemetry,
                               keep=closed.append, on_exit=finisher,
                               announce=(str(folder.root), label(engine),
                                         prereg.preset_sha256))
            sitter = closed[0].launch_babysitter if closed else None
            return after_console(code, preset, folder, engine, registry, host, prereg, sitter,
                                 attempt, finisher)
    from fontaine_tui.model.plain import babysit

    return babysit(preset, folder, engine, registry, host, prereg, args.poll, args.stop_on_exit,
                   attempt)


def record_attempt(folder, kind: str, engine, host: str) -> int | None:
    """This start as an attempt in attempts.jsonl; None (said) when it cannot be written."""
    from fontaine_tui.core.launch import attempts

    try:
        return attempts.begin(folder, kind, engine, host)
    except OSError as exc:
        print(f"warn: {folder.attempts}: attempt not recorded ({exc.strerror or exc})",
              file=sys.stderr)
        return None


def announce(preset, folder: str, what: str, sha: str) -> None:
    """The launch post of a run nobody watches from here (--detach): sent, then waited for
    (at most notices.DRAIN_S); a failure is one line on stderr."""
    from fontaine_tui.model.notices import RunNotices

    def say(text: str) -> None:
        print(text, file=sys.stderr)

    notices = RunNotices.configured(preset.run_name, say, preset)
    if notices is not None:
        notices.launched(preset.name, folder, what, sha)
        for line in notices.close():
            say(line)


class Finisher:
    """The launch console's end of the run, done the moment the console sees the engine exit
    (not when it quits, which may be hours later): the registry, the attempt's end and its
    incident post, verdict.json and the verdict post. Its lines wait for the console to
    close; `after_console` prints them."""

    def __init__(self, preset, folder, engine, registry, host: str, prereg,
                 attempt: int | None) -> None:
        import io
        import threading

        self.preset, self.folder, self.engine, self.registry = preset, folder, engine, registry
        self.host, self.prereg, self.attempt = host, prereg, attempt
        self.out = io.StringIO()
        self.code: int | None = None
        self._lock = threading.Lock()

    def __call__(self, babysitter=None) -> bool:
        """Finish once, if the engine has exited (any thread); True when finished."""
        from fontaine_tui.model.plain import PlainWatch, finish

        with self._lock:
            if self.code is not None:
                return True
            info = self.engine.poll()
            if info is None:
                return False
            watch = PlainWatch(self.preset, self.folder, self.engine, self.prereg, self.out)
            watch.babysitter, watch.attempt = babysitter, self.attempt
            self.code = finish(watch, self.registry, self.host, info)
            return True


def after_console(code: int, preset, folder, engine, registry, host: str, prereg,
                  babysitter=None, attempt: int | None = None,
                  finisher: Finisher | None = None) -> int:
    """The console closed: record an exit it saw (unless it already did, `finisher`); a run
    left going stays registered (and unwatched: `fontaine-tui babysit` keeps its
    notifications coming)."""
    from fontaine_tui.model.plain import PlainWatch, finish

    if finisher is not None and finisher(babysitter):  # waits for a finish under way
        sys.stdout.write(finisher.out.getvalue())
        return finisher.code if finisher.code is not None else 1
    info = engine.poll()
    if info is None:  # detached: the console said so; the registry keeps it as running
        if babysitter is not None:
            for line in babysitter.close():
                print(line, file=sys.stderr)
            if babysitter.notices is not None:
                print("notifications stop with the console: `fontaine-tui babysit` keeps "
                      "them coming for detached runs", file=sys.stderr)
        return code
    watch = PlainWatch(preset, folder, engine, prereg)
    watch.babysitter, watch.attempt = babysitter, attempt
    return finish(watch, registry, host, info)


def run_on(args: argparse.Namespace) -> int:
    """launch --on HOST: launched there (core/launch/remote.py), registered here with its
    host, then watched over SSH; quitting the console asks to stop it (over SSH) or detach."""
    import asyncio

    from fontaine_tui.core.follow.ssh import SshRun
    from fontaine_tui.core.follow.target import SshTarget
    from fontaine_tui.core.launch.hosts import host_settings
    from fontaine_tui.core.launch.registry import Entry, Registry
    from fontaine_tui.core.launch.remote import RemoteEngine, check_host, launch_on
    from fontaine_tui.core.launch.slurm import parse_target
    from fontaine_tui.core.notify.destinations import config_path
    from fontaine_tui.core.verdict.prereg import utc_iso
    from fontaine_tui.core.verdict.presets import load_preset

    target = parse_target(args.on)
    if target is not None and target.host is None:
        return run_slurm(args, target.partition)
    host = args.on if target is None or target.host is None else target.host
    check_host(host)
    preset = load_preset(args.preset)
    settings = host_settings(host, config_path())
    options = ("-F", args.ssh_config) if args.ssh_config else ()
    registry = Registry()
    done = asyncio.run(launch_on(settings, preset, registry.path.parent,
                                 output_dir=args.output_dir, resume=args.resume,
                                 yes_ram=args.yes_ram, ssh_options=options,
                                 on=None if target is None else f"slurm:{target.partition}"))
    entry = Entry(name=preset.run_name, run_dir=done.run_dir, host=host, preset=preset.name,
                  preset_sha256=done.preset_sha256, pid=done.pid, pid_started=done.pid_started,
                  launched_at=done.launched_at, status="running", poll_cadence_s=args.poll,
                  updated_at=utc_iso(time.time()), job=done.job)
    try:
        if not done.job and not done.pid_started > 0:
            raise InputError(f"engine pid {done.pid} on {host}: its start time was not "
                             "reported, so `stop` could not tell it from a later process")
        registry.upsert(entry)
    except (InputError, OSError) as exc:
        print(f"warn: run not registered ({exc})", file=sys.stderr)
    what = "resumed" if args.resume else "launched"
    how = f"slurm job {done.job} via {host}" if done.job else f"engine pid {done.pid}"
    print(f"{what} {preset.name} on {args.on}: {how} in {literal(str(done.run_dir))} "
          f"(prereg sha256 {done.preset_sha256[:12]}, launched {done.launched_at}; "
          f"kept here as {done.local_prereg})", flush=True)
    where = f"{host}:{done.run_dir}"
    what = f"slurm job {done.job} via {host}" if done.job else f"engine pid {done.pid} on {host}"
    if args.detach:
        announce(preset, where, what, done.preset_sha256)
        print(f"  watch it: fontaine-tui attach {literal(str(where))}")
        return 0
    source = SshRun(SshTarget(host, done.run_dir), ssh_options=options)
    if args.plain:
        from fontaine_tui.core.host.memory import hostname
        from fontaine_tui.model.babysitter import Babysitter
        from fontaine_tui.model.plain import PlainReport
        from fontaine_tui.model.session import Session

        report = PlainReport(Session(source, preset, "attach"))
        # the log's end posts the final read; the watcher's polls are kept beside the registry
        report.babysitter = Babysitter.for_session(report.session, "launch --plain",
                                                   hostname(), report.say, auto_final=True,
                                                   since=time.time() - 1.0)
        report.babysitter.launched(preset.name, where, what, done.preset_sha256)
        try:
            code = asyncio.run(report.follow(until_end=True))
            # the log's end: its warnings and the final read posted (auto_final)
            report.session.update_warnings(None, time.time())
            report.babysitter.tick(None)
            return code
        except KeyboardInterrupt:
            print(f"detached: the run goes on on {host}; fontaine-tui attach {literal(str(where))}")
            return 130
        finally:
            for line in report.babysitter.close():
                print(line, file=sys.stderr)
    engine = RemoteEngine(settings, done.run_dir, done.pid, options, job=done.job)
    return watch_remote(source, preset, engine, registry,
                        announce=(where, what, done.preset_sha256))


def watch_remote(source, preset, engine, registry=None,
                 announce: tuple[str, str, str] | None = None) -> int:
    """The console on a run launched on another host (`launch --on`, or `attach HOST:PATH`
    of one): quitting asks to stop it there (over SSH) or detach; an exit it saw goes into
    the registry here."""
    from fontaine_tui.console import run_console
    from fontaine_tui.core.launch.registry import Registry

    registry = registry if registry is not None else Registry()
    try:
        code = run_console(source=source, preset=preset, mode="attach", process=engine,
                           registry=registry, announce=announce,
                           ssh_options=engine.ssh.ssh_options)
    finally:
        engine.close()
    info = record_remote_exit(engine, registry)
    if info is not None:
        print(info.describe())
    return code


def record_remote_exit(engine, registry):
    """remote.record_exit after the console; a registry that cannot take it is a warning."""
    from fontaine_tui.core.launch.remote import record_exit

    try:
        return record_exit(engine, registry)
    except (InputError, OSError) as exc:
        print(f"warn: exit not recorded in the registry ({exc})", file=sys.stderr)
        return engine.poll()


def run_slurm(args: argparse.Namespace, partition: str) -> int:
    """launch --on slurm:PARTITION: the folder's guards, prereg.json frozen, job.sbatch written
    into the run folder and submitted (core/launch/slurm.py), registered with its job id,
    then watched here (the run folder on a filesystem the nodes share)."""
    import dataclasses
    import hashlib
    import json

    from fontaine_tui.core.host.memory import hostname
    from fontaine_tui.core.launch import guards, slurm
    from fontaine_tui.core.launch.launcher import build_argv, engine_identity, run_dir
    from fontaine_tui.core.launch.registry import Entry, Registry
    from fontaine_tui.core.notify.destinations import config_path
    from fontaine_tui.core.runfolder import RunFolder
    from fontaine_tui.core.verdict.prereg import freeze, read_prereg, utc_iso
    from fontaine_tui.core.verdict.presets import load_preset

    preset = launchable(load_preset(args.preset))
    settings = slurm.slurm_settings(config_path())
    if preset.slurm.get("time"):  # the experiment's time limit, frozen with it, over the user's
        settings = dataclasses.replace(settings, time=str(preset.slurm["time"]))
    slurm.tool("sbatch")  # before anything is written
    folder = RunFolder(run_dir(preset, args.output_dir).resolve())
    registry, host = Registry(), hostname()
    entry = registry.find(folder.root, host)
    if entry is not None and entry.job and entry.status in ("running", "attached"):
        state = slurm.query(entry.job)
        if state is not None and state.active:
            raise InputError(f"refusing to launch: {folder.root}: this run is still slurm job "
                             f"{entry.job} ({state.state}; fontaine-tui stop it first)")
    # the folder's guards here; the node's GPUs and RAM are Slurm's request, not this host's
    findings = [*guards.check_folder(preset, folder, args.resume), *guards.check_init(preset)]
    if (why := guards.refusal(findings)) is not None:
        raise InputError(why)
    for f in findings:
        if f.level in ("warn", "info"):
            print(f"{f.level}: {f.message}", file=sys.stderr)
    argv = build_argv(preset, folder.root, args.resume)
    text = slurm.render_script(argv, preset.platform, settings, preset.run_name)
    created = not folder.root.exists()
    folder.root.mkdir(parents=True, exist_ok=True)
    script = slurm.write_script(folder, text)
    sha = hashlib.sha256(text.encode()).hexdigest()
    prereg = (read_prereg(folder) if args.resume else
              freeze(folder, preset, argv, host, provenance={**engine_identity(argv), "device": {
                  "requested": preset.platform["device"], "gpus": [],
                  "gpu_status": "on the node Slurm picks"},
                  "slurm": {"partition": partition, "script": script.name,
                            "script_sha256": sha}}))
    since = slurm.offsets(folder)
    try:
        job = slurm.submit(folder, script, partition, preset.run_name)
    except InputError:
        if not args.resume:  # nothing was submitted: the folder is not a launched run
            folder.prereg.unlink(missing_ok=True)
        script.unlink(missing_ok=True)
        if created:
            with contextlib.suppress(OSError):  # only when empty: nothing else is removed
                folder.root.rmdir()
        raise
    engine = slurm.SlurmJob(folder, job, since, poll_s=min(args.poll, slurm.POLL_S))
    attempt = record_attempt(folder, "resume" if args.resume else "launch", engine, host)
    entry = Entry(name=preset.run_name, run_dir=str(folder.root), host=host, preset=preset.name,
                  preset_sha256=prereg.preset_sha256, pid=0, launched_at=prereg.launched_at,
                  status="running", poll_cadence_s=args.poll, updated_at=utc_iso(time.time()),
                  job=job)
    try:
        registry.upsert(entry)
    except (InputError, OSError) as exc:
        print(f"warn: run not registered ({exc})", file=sys.stderr)
    if args.detach and args.json:
        engine.close()
        print(json.dumps({"run_dir": str(folder.root), "pid": 0, "job": job, "host": host,
                          "attempt": attempt, "preset_sha256": prereg.preset_sha256,
                          "launched_at": prereg.launched_at}), flush=True)
        return 0
    what = "resumed" if args.resume else "submitted"
    print(f"{what} {preset.name} as slurm job {job} (partition {partition}) in {literal(str(folder.root))} "
          f"(prereg sha256 {prereg.preset_sha256[:12]}, launched {prereg.launched_at}; "
          f"script {script.name})", flush=True)
    if args.detach:
        engine.close()
        announce(preset, str(folder.root), engine.label, prereg.preset_sha256)
        print(f"  watch it: fontaine-tui attach {literal(str(folder.root))}  (stop it: fontaine-tui stop "
              f"{folder.root})")
        return 0
    if not args.plain:
        from fontaine_tui.console import run_console
        from fontaine_tui.core.follow.local import LocalRun

        closed: list = []
        finisher = Finisher(preset, folder, engine, registry, host, prereg, attempt)
        try:
            code = run_console(source=LocalRun(folder.root), preset=preset, mode="launch",
                               process=engine, registry=registry, keep=closed.append,
                               on_exit=finisher,
                               announce=(str(folder.root), engine.label,
                                         prereg.preset_sha256))
        finally:
            engine.close()
        sitter = closed[0].launch_babysitter if closed else None
        return after_console(code, preset, folder, engine, registry, host, prereg, sitter,
                             attempt, finisher)
    from fontaine_tui.model.plain import babysit

    try:
        return babysit(preset, folder, engine, registry, host, prereg, args.poll,
                       args.stop_on_exit, attempt)
    finally:
        engine.close()
