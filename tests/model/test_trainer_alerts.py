"""Alerts the trainer raises itself (`{"kind": "alert"}` in train_log.jsonl): read once each,
shown in the warnings, said by the plain report, posted to a real webhook on 127.0.0.1 with
the destination's secret redacted from the trainer's words, recorded in babysit.jsonl and not
posted again by a watcher that reads the log again; a malformed alert record counted and said
once; and never a change to the verdict."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.log.records import ALERT_REFUSED, TEXT_MAX, Alert, parse_line
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.core.watch.traineralerts import BAD_RULE, is_alert_rule
from fontaine_tui.model.babysitter import Babysitter
from fontaine_tui.model.session import Session
from tests.logs import T0, records_upto, write_log

PRESET = "demosonly_1gpu"


def alert(step: int | None, title: object, text: object = "", level: object = "warn") -> dict:
    rec: dict = {"kind": "alert", "time": T0 + (step or 0) / 2, "level": level, "title": title}
    if step is not None:
        rec["step"] = step
    if text is not None:
        rec["text"] = text
    return rec


def with_alerts(upto: int, alerts: dict[int, list[dict]]) -> list[dict]:
    """The fixture log to `upto`, each alert after the record of its step."""
    out = []
    for rec in records_upto(upto):
        out.append(rec)
        if rec["kind"] == "train":
            out += alerts.get(rec["step"], [])
    return out


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)


def test_alert_records_are_read_with_their_level_words():
    got = parse_line(b'{"kind":"alert","level":"ERROR","title":"t","text":"x","step":3}')
    assert isinstance(got, Alert) and (got.level, got.step, got.title) == ("alert", 3, "t")
    assert parse_line(b'{"kind":"alert","level":"warning","title":"t"}').level == "warn"
    assert parse_line(b'{"kind":"alert","title":"t"}').level == "warn"  # none: warn
    long = parse_line(json.dumps({"kind": "alert", "title": "t", "text": "y" * 5000}).encode())
    assert len(long.text) < TEXT_MAX + 40 and long.text.endswith("(3000 characters cut)")


@pytest.mark.parametrize(
    ("rec", "why"),
    [
        ({"kind": "alert", "text": "no title"}, "'title' is missing"),
        ({"kind": "alert", "title": 7}, "'title' is a JSON int"),
        ({"kind": "alert", "title": "t", "text": ["a"]}, "'text' is a JSON array"),
        ({"kind": "alert", "title": "t", "level": "loud"}, "'level' is 'loud'"),
        ({"kind": "alert", "title": "t", "step": -4}, "expected a non-negative integer"),
        ({"kind": "alert", "title": "t", "text": "z" * (ALERT_REFUSED + 1)}, "at most 65536"),
    ],
)
def test_a_malformed_alert_is_counted_apart_from_the_evidence(tmp_path, rec, why):
    log = tmp_path / "train_log.jsonl"
    write_log(log, with_alerts(120, {60: [rec, rec]}))
    for columns in (True, False):  # the console's read, and the verdict's lean one
        store = load_log(log, columns=columns)
        assert store.bad_alert_count == 2 and why in store.bad_alerts[0].reason
        assert store.malformed_count == 0 and store.alerts == []


def test_a_line_read_again_is_one_alert(tmp_path):
    log = tmp_path / "train_log.jsonl"
    spike = alert(60, "loss spike", "skipped a batch")
    write_log(log, with_alerts(120, {60: [spike, spike]}))
    store = load_log(log)
    assert store.alert_count == 1
    store2 = load_log(log)  # a reconnect's re-read into the same store: still one
    for raw in log.read_bytes().splitlines():
        store2.add_line(raw, 0)
    assert store2.alert_count == 1


def verdict_json(capsys, path: Path) -> dict:
    capsys.readouterr()
    main(["verdict", str(path), "--preset", PRESET, "--json"])
    out = json.loads(capsys.readouterr().out)
    return {k: out[k] for k in ("verdict", "read_step", "delta", "reason", "log")}


def test_alerts_never_change_the_verdict(tmp_path, capsys):
    clean, loud = tmp_path / "clean.jsonl", tmp_path / "loud.jsonl"
    write_log(clean, records_upto(1000))
    noise = [alert(s, "eval_chunk_mae is rising", "x", "error") for s in (250, 500, 1000)]
    write_log(loud, with_alerts(1000, {250: noise[:1], 500: [*noise[1:2], {"kind": "alert"}]}))
    a, b = verdict_json(capsys, clean), verdict_json(capsys, loud)
    assert b["log"]["lines"] == a["log"]["lines"] + 3
    a["log"].pop("lines"), b["log"].pop("lines")
    assert a == b and a["verdict"] != "UNDECIDABLE"


def test_the_plain_report_says_each_alert_once_and_a_bad_one_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FONTAINE_NOTIFY", "https://ntfy.example.com/TOPICSECRET77")
    root = tmp_path / "run"
    root.mkdir()
    spike = alert(60, "loss spike", "skipped a \x1b[31mbatch")
    leak = alert(90, "env", "FONTAINE_NOTIFY=https://ntfy.example.com/TOPICSECRET77")
    bad = {"kind": "alert", "title": ""}
    write_log(
        root / "train_log.jsonl",
        with_alerts(
            300,
            {60: [spike, spike, bad], 90: [leak], 100: [alert(None, "lr cut", None, "info"), bad]},
        ),
    )
    capsys.readouterr()
    main(["replay", str(root / "train_log.jsonl"), "--preset", PRESET, "--plain"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert (
        lines.count("WARN   the trainer's alert at step 60: loss spike: skipped a \\x1b[31mbatch")
        == 1
    )
    assert lines.count("INFO   the trainer's alert: lr cut") == 1
    assert "TOPICSECRET77" not in out and "https://ntfy.example.com/***" in out
    said = [ln for ln in lines if BAD_RULE in ln]
    assert len(said) == 1 and "alert 'title' is '': expected a non-empty string" in said[0]


def test_a_trainer_alert_quoting_a_token_is_said_with_it_masked(tmp_path, capsys):
    hf = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    root = tmp_path / "run"
    root.mkdir()
    leak = alert(90, "hub login failed", f"HF_TOKEN={hf} refused; retry with --token {hf}")
    write_log(root / "train_log.jsonl", with_alerts(300, {90: [leak]}))
    capsys.readouterr()
    main(["replay", str(root / "train_log.jsonl"), "--preset", PRESET, "--plain"])
    out = capsys.readouterr().out
    assert hf[3:] not in out, out
    assert (
        "WARN   the trainer's alert at step 90: hub login failed: HF_TOKEN=*** refused; "
        "retry with --token ***" in out.splitlines()
    ), out


def test_a_trainer_alert_quoting_a_pair_inside_a_flag_value_is_said_masked(tmp_path, capsys):
    """`--env=K=V` and a program setting its variable (`os.environ["K"]="V"`): V masked."""
    root = tmp_path / "run"
    root.mkdir()
    leak = alert(
        90,
        "push failed",
        'ran with --env=HF_TOKEN=Zq8xP2mK9vR4tL7w; os.environ["WANDB_API_KEY"]="V2sEcReT9"',
    )
    write_log(root / "train_log.jsonl", with_alerts(300, {90: [leak]}))
    capsys.readouterr()
    main(["replay", str(root / "train_log.jsonl"), "--preset", PRESET, "--plain"])
    out = capsys.readouterr().out
    assert "Zq8x" not in out and "V2sEcReT9" not in out, out
    assert (
        "WARN   the trainer's alert at step 90: push failed: ran with --env=HF_TOKEN=***; "
        'os.environ["WANDB_API_KEY"]="***"' in out.splitlines()
    ), out


def test_a_trainer_alert_quoting_a_continued_command_line_is_said_masked(tmp_path, capsys):
    """A backslash-newline is the shell's space: the token on the next line is the flag's."""
    root = tmp_path / "run"
    root.mkdir()
    leak = alert(90, "push failed", "ran: push.py --hub_token \\\n    k3ysecretvalue --private")
    write_log(root / "train_log.jsonl", with_alerts(300, {90: [leak]}))
    capsys.readouterr()
    main(["replay", str(root / "train_log.jsonl"), "--preset", PRESET, "--plain"])
    out = capsys.readouterr().out
    assert "k3ysecretvalue" not in out, out
    assert (  # the line's end escaped, as a plain report shows one
        "WARN   the trainer's alert at step 90: push failed: ran: push.py --hub_token \\\\n"
        "    *** --private" in out.splitlines()
    ), out


def test_a_trainer_alert_with_an_apostrophe_is_said_with_its_token_masked(tmp_path, capsys):
    """An apostrophe opens no quoted run: the flag's value after `couldn't` is masked."""
    root = tmp_path / "run"
    root.mkdir()
    leak = alert(90, "couldn't push", "the hub's answer: 401 for --hub_token abc123secret")
    write_log(root / "train_log.jsonl", with_alerts(300, {90: [leak]}))
    capsys.readouterr()
    main(["replay", str(root / "train_log.jsonl"), "--preset", PRESET, "--plain"])
    out = capsys.readouterr().out
    assert "abc123secret" not in out, out
    assert (
        "WARN   the trainer's alert at step 90: couldn't push: the hub's answer: 401 for "
        "--hub_token ***" in out.splitlines()
    ), out


def test_a_trainer_alert_quoting_a_call_is_said_and_the_replay_goes_on(tmp_path, capsys):
    """A call's arguments (`tokenizer(x=1, y=2)`) are no list of secret pairs: said as written."""
    root = tmp_path / "run"
    root.mkdir()
    call = alert(90, "slow", "tokenizer(max_length=512, truncation=True) took 3 s")
    write_log(root / "train_log.jsonl", with_alerts(300, {90: [call]}))
    capsys.readouterr()
    main(["replay", str(root / "train_log.jsonl"), "--preset", PRESET, "--plain"])
    out = capsys.readouterr().out
    assert (
        "WARN   the trainer's alert at step 90: slow: tokenizer(max_length=512, truncation=True) "
        "took 3 s" in out.splitlines()
    ), out


def test_a_trainer_alert_with_paired_apostrophes_or_a_dict_is_said_masked(tmp_path, capsys):
    """Two apostrophes (`won't ... it's`) pair into no quoted run that hides a token, and a
    config printed as JSON has its secret-named key's value masked, spaced or not."""
    root = tmp_path / "run"
    root.mkdir()
    leak = alert(
        90,
        "push failed",
        'won\'t push --hub_token k3ysecretvalue, it\'s read-only; cfg {"api_key":"s3cr3tk3y"}',
    )
    write_log(root / "train_log.jsonl", with_alerts(300, {90: [leak]}))
    capsys.readouterr()
    main(["replay", str(root / "train_log.jsonl"), "--preset", PRESET, "--plain"])
    out = capsys.readouterr().out
    assert "k3ysecretvalue" not in out and "s3cr3tk3y" not in out, out
    assert (
        "WARN   the trainer's alert at step 90: push failed: won't push --hub_token ***, "
        'it\'s read-only; cfg {"api_key":"***"}' in out.splitlines()
    ), out


def test_a_trainer_alert_printing_its_arguments_is_said_masked(tmp_path, capsys):
    """A trainer's arguments as Python prints them (`Namespace(hub_token='V', ...)`), and a
    quoted value with an apostrophe in it, are said with each secret's value masked whole."""
    root = tmp_path / "run"
    root.mkdir()
    leak = alert(
        90,
        "push failed",
        "Namespace(hub_token='hub0secret', lr=3); retried with --token 'it's k3y s3cret' once",
    )
    write_log(root / "train_log.jsonl", with_alerts(300, {90: [leak]}))
    capsys.readouterr()
    main(["replay", str(root / "train_log.jsonl"), "--preset", PRESET, "--plain"])
    out = capsys.readouterr().out
    assert "hub0secret" not in out and "k3y" not in out and "s3cret" not in out, out
    assert (
        "WARN   the trainer's alert at step 90: push failed: Namespace(hub_token='***', lr=3); "
        "retried with --token '***' once" in out.splitlines()
    ), out


def test_a_trainer_alert_quoting_a_netrc_or_an_argv_a_word_a_line_is_said_masked(tmp_path, capsys):
    """A .netrc entry as the file writes it (a token a line, an `account` too), a `-p`
    password an argv's word a line, and a connection string that opens with its key: each
    secret masked, and only it."""
    root = tmp_path / "run"
    root.mkdir()
    leak = alert(
        90,
        "login failed",
        "~/.netrc:\nmachine ftp.x.org\n  login me\n  account Zq9accZ\n  password Zq9secZ\n"
        "argv:\nmysql\n-u\nme\n-p\nZq9pwZ\ndb\n"
        "conn AccountKey=Zq9keyZ==;AccountName=acct;EndpointSuffix=core.windows.net",
    )
    write_log(root / "train_log.jsonl", with_alerts(300, {90: [leak]}))
    capsys.readouterr()
    main(["replay", str(root / "train_log.jsonl"), "--preset", PRESET, "--plain"])
    out = capsys.readouterr().out
    assert "Zq9" not in out, out
    assert (  # the lines' ends escaped, as a plain report shows them
        "WARN   the trainer's alert at step 90: login failed: ~/.netrc:\\nmachine ftp.x.org"
        "\\n  login me\\n  account ***\\n  password ***\\nargv:\\nmysql\\n-u\\nme\\n-p"
        "\\n***\\ndb\\nconn AccountKey=***;AccountName=acct;EndpointSuffix=core.windows.net"
        in out.splitlines()
    ), out


async def _watch(root: Path, url: str | None = None) -> tuple[Session, Babysitter]:
    s = Session(LocalRun(root), load_preset(PRESET), "attach", None, root)
    await s.read_ledger()
    s.store = load_log(root / "train_log.jsonl")
    sitter = Babysitter.for_session(s, "test", "here", print, clock=lambda: T0 + 100)
    s.update_warnings(None, T0 + 100)
    sitter.tick(None, T0 + 100)
    return s, sitter


def test_alerts_reach_the_panel_the_webhook_and_babysit_jsonl_once(tmp_path, hook, monkeypatch):
    url = hook.url("/hooks/SECRETTOKEN42")
    monkeypatch.setenv("FONTAINE_NOTIFY", url)
    root = tmp_path / "run"
    root.mkdir()
    freeze(RunFolder(root), load_preset(PRESET), ["launch"], "here", now=T0 - 10)
    leak = alert(80, "grad norm high", f"posting to {url} failed", "error")
    write_log(root / "train_log.jsonl", with_alerts(120, {60: [alert(60, "lr cut")], 80: [leak]}))

    async def twice():
        s, sitter = await _watch(root)
        shown = [w for w in s.warnings if is_alert_rule(w.rule)]
        sitter.close()
        await s.source.close()
        s2, again = await _watch(root)  # another watcher, the same log read again
        again.close()
        await s2.source.close()
        return shown

    shown = asyncio.run(twice())
    hidden = url.replace("/hooks/SECRETTOKEN42", "/***/***")  # as redact.py hides it
    assert [(w.severity, w.message) for w in shown] == [
        ("alert", f"the trainer's alert at step 80: grad norm high: posting to {hidden} failed"),
        ("warn", "the trainer's alert at step 60: lr cut"),
    ]
    posts = [json.loads(r.body) for r in hook.requests]
    alerts = [p for p in posts if p["title"].endswith("trainer alert")]
    assert sorted(p["step"] for p in alerts) == [60, 80]  # once each, across both watchers
    [grad] = [p for p in alerts if p["step"] == 80]
    assert "grad norm high" in grad["text"] and "SECRETTOKEN42" not in json.dumps(posts)
    lines = [json.loads(line) for line in (root / "babysit.jsonl").read_text().splitlines()]
    told = [t for t in lines if str(t.get("what")).startswith("trainer-alert:")]
    assert sorted(t["step"] for t in told) == [60, 80]
    assert told[0]["said"].startswith(("warn: the trainer's alert", "alert: the trainer's"))
    assert b"SECRETTOKEN42" not in (root / "babysit.jsonl").read_bytes()


def test_blinded_an_alert_naming_the_metric_keeps_its_words_back(tmp_path):
    root = tmp_path / "run"
    root.mkdir()
    freeze(RunFolder(root), load_preset(PRESET), ["launch"], "here", now=T0 - 10)
    named = alert(60, "eval_chunk_mae fell to 0.31", "", "info")
    write_log(root / "train_log.jsonl", with_alerts(120, {60: [named, alert(61, "slow io")]}))

    async def look(blind: bool) -> list[str]:
        s = Session(LocalRun(root), load_preset(PRESET), "attach", None, root)
        s.blind_asked = blind
        await s.read_ledger()
        s.store = load_log(root / "train_log.jsonl")
        s.update_warnings(None, T0 + 100)
        await s.source.close()
        return [w.message for w in s.warnings if is_alert_rule(w.rule)]

    seen, hidden = asyncio.run(look(False)), asyncio.run(look(True))
    assert any("eval_chunk_mae fell to 0.31" in m for m in seen)
    assert not any("0.31" in m for m in hidden)
    assert any("may quote the blinded read" in m for m in hidden)
    assert any("slow io" in m for m in hidden)  # health stays visible


def test_blinded_an_alert_quoting_the_read_however_it_is_spelt_keeps_its_words_back():
    from fontaine_tui.core.verdict.blindwords import rule_metrics
    from fontaine_tui.core.watch.traineralerts import alert_words

    metrics = rule_metrics(load_preset(PRESET).verdict)
    logged = [
        alert(750, "Eval chunk MAE rose", "eval/chunk_mae = 3.5000 (delta 0.4000)"),
        alert(751, "EVAL_CHUNK_MAE 3.5000"),
        alert(752, "the probe rose", "now 3.5"),  # no name, a number
        alert(753, "eval chunk mae went up"),  # a name, no number
        alert(755, "best chunk_mae so far: two point nine"),  # its name less its split, spelt
        alert(756, "new best MAE"),  # one of its words
        alert(754, "slow io"),
    ]
    from fontaine_tui.core.log.read import load_lines

    store = load_lines([b"".join(json.dumps(a).encode() + b"\n" for a in logged)])
    *quoting, health = store.alerts
    assert len(quoting) == 6
    for a in quoting:
        words = alert_words(a, metrics, blinded=True)
        assert "3.5" not in words and "mae" not in words.lower() and "nine" not in words, words
    assert "slow io" in alert_words(health, metrics, blinded=True)
    assert "3.5000" in alert_words(quoting[1], metrics, blinded=False)


def test_a_jsonl_trainer_raises_an_alert_either_way_and_a_bad_one_is_counted():
    from fontaine_tui.core.log.formats.rows import JsonlDecoder

    dec = JsonlDecoder()
    lines = [
        {"step": 1, "loss": 2.0},
        {"step": 1, "alert": {"title": "lr cut", "level": "info"}},
        {"kind": "alert", "title": "shard 3 missing", "level": "warning"},
        {"step": 2, "alert": {"title": ""}},
        {"step": 2, "loss": 1.0},
    ]
    out = dec.feed(b"".join(json.dumps(x).encode() + b"\n" for x in lines)) + dec.finish()
    got = [(a.step, a.level, a.title) for a in out if isinstance(a, Alert)]
    assert got == [(1, "info", "lr cut"), (-1, "warn", "shard 3 missing")]
    assert dec.bad_count == 1 and "alert 'title' is ''" in dec.bad[0][1]


def test_an_alert_with_a_key_written_twice_is_a_bad_alert_not_bad_evidence(tmp_path):
    log = tmp_path / "train_log.jsonl"
    write_log(log, records_upto(120))
    with open(log, "ab") as fh:
        fh.write(b'{"kind":"alert","level":"warn","title":"a","title":"b","step":120}\n')
    for columns in (True, False):  # the console's read, and the verdict's lean one
        store = load_log(log, columns=columns)
        assert store.malformed_count == 0 and store.alerts == []
        assert store.bad_alert_count == 1
        assert "a key written twice" in store.bad_alerts[0].reason


def test_alerts_past_those_kept_take_no_memory_of_their_text():
    """A trainer alerting at every step: the store holds 500 alerts, not every alert's text."""
    import tracemalloc

    from fontaine_tui.core.log.store import RunStore

    store = RunStore()
    words = "grad norm above threshold; " * 70  # about 1.9 KB each
    tracemalloc.start()
    try:
        used = []
        for i in range(8000):
            rec = {"kind": "alert", "step": i, "level": "warn", "title": "spike", "text": words}
            store.add_line(json.dumps(rec).encode(), i + 1)
            if i + 1 in (4000, 8000):
                used.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert store.alert_count == 8000 and len(store.alerts) == 500
    assert used[1] - used[0] < 1_000_000  # 4000 more alerts: their digests, not their text
