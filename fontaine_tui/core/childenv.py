"""The environment every child process gets: this process's, less every notification secret.

A webhook URL is a credential. It reaches this program as FONTAINE_NOTIFY or as the variable
a preset's `[[notify]] url_env` names; a child (the engine, `python -m fontaine_engine identity`, a
re-score, sbatch and the job it starts, ssh, squeue) has no use for it, and an engine's
output, a job's environment dump or a remote shell would carry it further. Each place that
starts a child passes `child_env(...)` as its environment.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

NOTIFY_ENV = "FONTAINE_NOTIFY"
_NAMED: set[str] = {NOTIFY_ENV}  # and each url_env of a preset loaded in this process


def keep_out(name: str) -> None:
    """Keep the variable `name` out of every child's environment from now on.

    `name` holds a notification URL (a preset's `url_env`).
    """
    _NAMED.add(name)


def child_env(base: Mapping[str, str] | None = None, also: Iterable[str] = ()) -> dict[str, str]:
    """Return `base` without the notification secrets and without the names in `also`.

    `base` is this process's environment when None. The result lacks FONTAINE_NOTIFY and
    every url_env variable named so far.
    """
    env = dict(os.environ if base is None else base)
    for name in (*_NAMED, *also):
        env.pop(name, None)
    return env
