"""The final verdict notice as each service receives it, read off a real HTTP server on
127.0.0.1: the per-dataset breakdown is in the text of the generic JSON POST and the ntfy body,
and stays the fields (not a second copy in the text) of Slack and Discord."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.notify.delivery import Notifier, Policy
from fontaine_tui.core.notify.destinations import make_destination
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.verdict.rules import compute_verdict
from fontaine_tui.core.verdict.text import render, signed
from fontaine_tui.model.notices import RunNotices
from tests.core.notify.server import Hook
from tests.logs import records_upto, write_log

PATHS = {
    "generic": "/SECRETTOKEN",
    "ntfy": "/mytopic",
    "slack": "/services/T0/B0/SECRETTOKEN",
    "discord": "/api/webhooks/1/SECRETTOKEN",
}


@pytest.fixture
def verdict(tmp_path: Path):
    store = load_log(write_log(tmp_path / "train_log.jsonl", records_upto(1000)))
    v = compute_verdict(store, load_preset("demosonly_1gpu"))
    assert set(v.datasets) == {"demos", "rig"}  # tests/logs.py's breakdown
    return v


def final_bodies(hook: Hook, verdict) -> dict[str, bytes]:
    dests = {s: make_destination(hook.url(p), service=s) for s, p in PATHS.items()}
    notices = RunNotices(Notifier(dests.values(), policy=Policy(timeout=5, tries=1)), "demo")
    notices.final(verdict, render(verdict, "train_log.jsonl"), "the log ended at step 1000")
    assert notices.close(10) == []
    by_path = {r.path: r.body for r in hook.wait_for(len(PATHS))}
    return {s: by_path[p] for s, p in PATHS.items()}


def test_generic_and_ntfy_text_carry_each_dataset(hook, verdict):
    bodies = final_bodies(hook, verdict)
    generic = json.loads(bodies["generic"])["text"]
    ntfy = bodies["ntfy"].decode()
    for text in (generic, ntfy):
        assert text.startswith("the log ended at step 1000\n")
        assert "VERDICT: " in text  # the rendered verdict, then the breakdown
        for name, x in verdict.datasets.items():
            assert f"\n  {name}: {verdict.read} {signed(x)}" in text, (name, text)
            assert text.index(f"  {name}: ") > text.index("VERDICT: ")
        assert f"per dataset (the bounds are {verdict.metric}'s):" in text


def test_slack_and_discord_keep_the_datasets_as_fields_only(hook, verdict):
    bodies = final_bodies(hook, verdict)
    want = {
        "verdict": verdict.label,
        **{f"dataset {n}": f"{verdict.read} {signed(x)}" for n, x in verdict.datasets.items()},
    }
    slack = json.loads(bodies["slack"])
    _, section, fields, _ = slack["blocks"]
    assert fields["fields"] == [{"type": "mrkdwn", "text": f"*{k}*\n{v}"} for k, v in want.items()]
    discord = json.loads(bodies["discord"])["embeds"][0]
    assert [(f["name"], f["value"]) for f in discord["fields"]] == list(want.items())
    for text in (section["text"]["text"], slack["text"], discord["description"]):
        assert "per dataset" not in text
        for n, x in verdict.datasets.items():
            assert f"{n}: {verdict.read} {signed(x)}" not in text
