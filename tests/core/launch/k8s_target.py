"""`launch --on k8s:NAMESPACE`: a new launch target, standing in for a cluster.

It runs the run's command on this host under the namespace's name. test_new_target.py adds it
to a copy of fontaine_tui as core/launch/targets/k8s.py, with its one line in targets/pick.py's
KINDS, and nothing else: the exit note, the command's `who`, the telemetry recorder, the
attempt and the registry entry are the launched run's (model/launched.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.launch.engine_argv import run_dir
from fontaine_tui.core.launch.targets.base import Request, Started, vouched
from fontaine_tui.core.run.launcher import EngineProcess, found_again
from fontaine_tui.core.runfolder import RunFolder

if TYPE_CHECKING:
    from fontaine_tui.core.launch.guards import Finding
    from fontaine_tui.core.launch.makers import ArgvMaker
    from fontaine_tui.core.run.attempts import Attempt
    from fontaine_tui.core.runs.registry import Entry

PREFIX = "k8s:"


class K8sStandIn:
    """A namespace of the stand-in cluster: the command started here, in its own session."""

    kind = "k8s"
    remote = False
    starts_here = True

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.host = hostname()

    def folder(self, req: Request) -> RunFolder:
        return RunFolder(run_dir(req.preset, req.output_dir).resolve())

    def check(self, req: Request, folder: RunFolder) -> list[Finding]:
        return []

    def prepare(self, req: Request, folder: RunFolder, argv: list[str]) -> dict[str, object]:
        folder.root.mkdir(parents=True, exist_ok=True)
        return {"k8s": {"namespace": self.namespace}}

    def start(
        self, req: Request, folder: RunFolder | None, argv: list[str], maker: ArgvMaker
    ) -> Started:
        assert folder is not None
        env, cwd = maker.env(req.preset, folder.root), maker.cwd(req.preset, folder.root)
        handle = EngineProcess.start(argv, folder, env=env, cwd=cwd)
        return Started(handle, str(folder.root), handle.pid, handle.started or 0.0)

    def abandon(self, folder: RunFolder) -> None:
        pass

    def unregistered(self, started: Started) -> str | None:
        return None

    def said(self, req: Request, started: Started, sha: str, launched_at: str) -> str:
        return f"launched {req.preset.name} in k8s:{self.namespace}"

    def where(self, started: Started) -> tuple[str, str]:
        return started.run_dir, f"pod of pid {started.pid} in {self.namespace}"

    def hint(self, started: Started) -> str:
        return f"  watch it: fontaine-tui attach {started.run_dir}"


def target_for(on: str | None, ssh_options: Sequence[str] = ()) -> K8sStandIn | None:
    return K8sStandIn(on[len(PREFIX) :]) if on and on.startswith(PREFIX) else None


def reopen_entry(
    entry: Entry, ssh_options: Sequence[str] = (), poll_s: float | None = None
) -> tuple[EngineProcess, Attempt | None]:
    folder, opened = vouched(entry)
    if opened is None:
        raise InputError(f"{entry.run_dir}: no open attempt names pod pid {entry.pid}")
    pod = found_again(folder, opened.pid, opened.pid_started, opened.since, opened.baseline())
    pod.label = f"pod of pid {opened.pid}"  # how `stop` names it (launcher.process_label)
    return pod, opened
