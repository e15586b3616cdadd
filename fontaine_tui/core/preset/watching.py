"""A preset's watching sections: `[babysit]`, `[[notify]]` and `[slurm]`.

`[babysit]` says when the run is polled, `[[notify]]` who is sent its news, and `[slurm]` the
time limit of a run submitted to Slurm. None changes what the run means.

```toml
[babysit]
first_poll_steps = 0      # the first poll after this many steps (0: at the first s/step reading)
first_poll_minutes = 0    # ... or after this many minutes since launch, whichever comes first
cadence_minutes = 30      # then a poll every this many minutes

[[notify]]
url_env = "RUN_WEBHOOK"   # the URL from this environment variable: the token stays out of the file
level = "warn"            # info | warn | alert: the least level sent (default info)
# url = "https://ntfy.sh/my-runs"   # or the URL itself
# service = "ntfy"                  # optional: slack | discord | ntfy | generic | apprise
```

`[babysit]` and `[slurm]` enter the canonical form (and prereg.json) only when set away from
their defaults, so presets written before them keep their sha256. A change to either after
launch is not a change of bounds (prereg.compare). `[[notify]]` never enters the canonical
form: prereg.json is written into the run folder and shared, and a webhook URL is a secret.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.childenv import keep_out
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.preset.checks import NUMBER, PresetError, Scalar, Spec, check_section

BABYSIT: Spec = {
    "first_poll_steps": (int, 0),
    "first_poll_minutes": (NUMBER, 0.0),
    "cadence_minutes": (NUMBER, 30.0),
}
SLURM_TIME = re.compile(r"(\d+-)?\d+(:\d{1,2}){0,2}")
NOTIFY_KEYS = ("url", "url_env", "level", "service")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def babysit_section(path: Path, table: object) -> dict[str, Scalar]:
    out = check_section(path, "babysit", table if table is not None else {}, BABYSIT)
    if float(out["cadence_minutes"]) <= 0:
        raise PresetError(
            path,
            "babysit.cadence_minutes",
            f"expected a number of minutes > 0, got {out['cadence_minutes']:g}",
        )
    return out


def slurm_section(path: Path, table: object) -> dict[str, Scalar]:
    """Check `[slurm]` of a preset: the job's time limit.

    `time` is as sbatch --time takes it, the part of a Slurm request that belongs to the
    experiment. The cluster's own asks (account, QOS, memory) are the user's, in config.toml's
    [slurm] (core/slurm/submit.py)."""
    out = check_section(path, "slurm", table if table is not None else {}, {"time": (str, "")})
    if out["time"] and not SLURM_TIME.fullmatch(str(out["time"])):
        raise PresetError(
            path, "slurm.time", f"expected minutes, H:MM:SS or D-HH:MM:SS, got {out['time']!r}"
        )
    return out


def babysit_canonical(table: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """Only the keys set away from their defaults."""
    return {k: v for k, v in table.items() if v != BABYSIT[k][1]}


@dataclass(frozen=True)
class NotifySpec:
    """A `[[notify]]` table of a preset: the URL or the variable that holds it."""

    where: str  # "presets/x.toml: notify[0]"
    url: str = ""
    url_env: str = ""
    level: str = "info"
    service: str | None = None

    def __repr__(self) -> str:  # the URL is a secret
        return f"NotifySpec({self.where}, url_env={self.url_env!r}, level={self.level})"


def notify_section(path: Path, items: object) -> tuple[NotifySpec, ...]:
    """Check each [[notify]] table now.

    A typo is then one line at load, not a silent miss at the end of a run. A `url_env` is read
    when the run is watched."""
    tables = [items] if isinstance(items, dict) else items
    if not isinstance(tables, list):
        raise PresetError(path, "notify", "expected [[notify]] tables")
    return tuple(_notify_table(path, f"notify[{i}]", table) for i, table in enumerate(tables))


def _notify_table(path: Path, where: str, body: object) -> NotifySpec:
    """One [[notify]] table: its keys, its level, and its URL or the variable named for it."""
    from fontaine_tui.core.notify.destinations import LEVELS, make_destination

    table = _notify_keys(path, where, body)
    level = table.get("level", "info")
    if level not in LEVELS:
        raise PresetError(
            path, f"{where}.level", f"expected one of {', '.join(LEVELS)}, got {level!r}"
        )
    env = table.get("url_env", "")
    if env and not _ENV_NAME.fullmatch(env):
        raise PresetError(
            path, f"{where}.url_env", f"expected an environment variable name, got {env!r}"
        )
    if env:
        keep_out(env)  # a webhook URL: no child of this process gets the variable
    url = table.get("url", "").strip()
    if url:
        make_destination(url, level=level, service=table.get("service"), source=f"{path}: {where}")
    return NotifySpec(f"{path}: {where}", url, env, level, table.get("service"))


def _notify_keys(path: Path, where: str, table: object) -> dict[str, str]:
    """The table: of known keys, each a non-empty string, with exactly one of url and url_env."""
    if not isinstance(table, dict):
        raise PresetError(path, where, "expected a table with url or url_env")
    unknown = sorted(set(table) - set(NOTIFY_KEYS))
    if unknown:
        raise PresetError(
            path,
            f"{where}.{unknown[0]}",
            f"unknown key (expected one of: {', '.join(NOTIFY_KEYS)})",
        )
    for key in NOTIFY_KEYS:
        if key in table and (not isinstance(table[key], str) or not table[key].strip()):
            raise PresetError(path, f"{where}.{key}", "expected a non-empty string")
    if ("url" in table) == ("url_env" in table):
        raise PresetError(path, where, "expected exactly one of url and url_env")
    return table


def preset_destinations(
    specs: tuple[NotifySpec, ...], env: Mapping[str, str]
) -> tuple[list, list[str]]:
    """(destinations, one line per table left off: a variable not set)."""
    from fontaine_tui.core.notify.destinations import make_destination

    found, off = [], []
    for spec in specs:
        url = spec.url or env.get(spec.url_env, "").strip()
        if not url:
            off.append(f"{spec.where}.url_env: ${spec.url_env} is not set; this destination is off")
            continue
        try:
            found.append(
                make_destination(url, level=spec.level, service=spec.service, source=spec.where)
            )
        except InputError as exc:
            off.append(str(exc))
    return found, off
