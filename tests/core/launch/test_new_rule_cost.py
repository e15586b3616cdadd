"""A new warning rule is one function: added to `RULES`, and nothing else, it is said.

The rule here warns when the learning rate a run logs falls to zero. With the function in
core/watch/alerts.py's `RULES` tuple and no other edit, `replay --plain` says its warning
once, the console model's warnings list holds it, and without it neither does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.run.exits import ExitInfo
from fontaine_tui.core.watch import alerts
from fontaine_tui.core.watch.alerts import RunContext
from tests.logs import records_upto, write_log

WORDS = "the learning rate fell to zero"


def lr_zero(
    store: RunStore,
    telemetry: TelemetrySnapshot | None,
    gates: Mapping[str, object],
    now: float,
    process: ExitInfo | None,
    ctx: RunContext,
) -> alerts.RunWarning | None:
    """The new rule: the last logged learning rate is zero."""
    lrs = store.columns.get("lr")
    if not lrs or not math.isfinite(lrs[-1]) or lrs[-1] != 0.0:
        return None
    return alerts.RunWarning("lr-zero", "warn", now, f"{WORDS} at step {store.last_step}", {})


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)


def _run(tmp_path: Path) -> Path:
    log = tmp_path / "run" / "train_log.jsonl"
    log.parent.mkdir()
    recs = records_upto(300)
    for rec in recs:
        if rec.get("kind") == "train":
            rec["lr"] = 0.0 if rec["step"] >= 250 else 1e-4
    write_log(log, recs)
    return log


@pytest.mark.parametrize("added", [True, False])
def test_a_rule_in_the_table_is_said_with_no_other_edit(tmp_path, capsys, monkeypatch, added):
    if added:
        monkeypatch.setattr(alerts, "RULES", (*alerts.RULES, lr_zero))
    log = _run(tmp_path)
    main(["replay", str(log), "--preset", "demosonly_1gpu", "--plain"])
    said = [ln for ln in capsys.readouterr().out.splitlines() if WORDS in ln]
    # said once, when the replay first reaches a step it holds at
    assert len(said) == (1 if added else 0), said
    assert all(ln.startswith("WARN   lr-zero since ") for ln in said), said
    assert all(ln.endswith(f"{WORDS} at step 250") for ln in said), said
    store = load_log(log)
    ran = alerts.run_rules(store, None, {}, 0.0, None, RunContext(1000, None, 0))
    assert any(w.rule == "lr-zero" for w in ran) is added
