"""Text a user types that the tool records (an unblind reason, a review note, an amendment's
text, a bank note) is refused when it holds a credential (core/secrets.py's `recordable`):
one line, exit 2, nothing written, the credential not echoed. Masking it would record what
was not typed; keeping it would show it in every later reader (the verdict card, verdict -j,
a sealed bundle, bank show). Real subprocesses on real run folders."""

from __future__ import annotations

import json

import pytest

from fontaine_tui.core.errors import InputError
from tests.commands.test_blind import cli, run_folder

TOKEN = "Zq8xP2mK9vR4tL7w"
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
UNBLIND = f"asked by ops, --hub_token={TOKEN} {HF}"
AMEND = f"mirror https://user:Pw9SECRETxyz@example.com ... --env=HF_TOKEN={TOKEN}"


def refused(res, *gone: str) -> None:
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.count("\n") == 1 and "looks like a credential" in res.stderr, res.stderr
    for secret in gone:
        assert secret not in res.stdout + res.stderr, secret


@pytest.mark.parametrize("command", ["verdict", "get", "seal"])
def test_an_unblind_reason_holding_a_token_is_refused_and_nothing_recorded(tmp_path, command):
    root = run_folder(tmp_path, 750)
    more = {"get": ["--metric", "eval_chunk_mae"], "seal": ["-o", str(tmp_path / "b")]}
    res = cli(tmp_path, command, str(root), *more.get(command, []), "--unblind", UNBLIND)
    refused(res, TOKEN, HF[3:])
    assert "(word 4: the value of --hub_token; word 5: a value shaped like a token)" in (
        res.stderr
    ), res.stderr
    assert not (root / "review.jsonl").exists() or TOKEN not in (root / "review.jsonl").read_text()
    assert not (tmp_path / "b").exists()
    card = cli(tmp_path, "verdict", str(root), "--unblind", "GPU budget review")
    assert card.returncode != 2 and "GPU budget review" in card.stdout, card.stderr


def test_an_amendment_text_holding_a_credential_is_refused_and_nothing_written(tmp_path):
    root = run_folder(tmp_path, 300, blind=False)
    res = cli(tmp_path, "amend", str(root), "--extend-to", "1250", "--text", AMEND)
    refused(res, TOKEN, "Pw9SECRETxyz")
    assert not (root / "amendments.jsonl").exists()
    ok = cli(tmp_path, "amend", str(root), "--extend-to", "1250", "--text", "slow warm-up")
    assert ok.returncode in (0, 1), ok.stderr
    assert "slow warm-up" in (root / "amendments.jsonl").read_text()


def test_a_refusal_names_where_each_credential_is_and_quotes_nothing_of_the_text(tmp_path):
    """The refusal says which word holds what, never the text: a credential of a form the
    masker does not know (`the door code is V`) would show in a quote of it, masked or not."""
    root = run_folder(tmp_path, 300, blind=False)
    text = f"HF_TOKEN={HF}; the door code is {TOKEN}, see https://me:Pw9SECRETxyz@x.org"
    res = cli(tmp_path, "amend", str(root), "--extend-to", "950", "--text", text)
    refused(res, TOKEN, HF[3:], "Pw9SECRETxyz", "door", "x.org")
    assert "(word 1: a key named HF_TOKEN; word 8: a URL's user info)" in res.stderr, res.stderr
    assert not (root / "amendments.jsonl").exists()


def test_a_bank_note_holding_a_credential_is_refused_and_nothing_banked(tmp_path):
    root = run_folder(tmp_path, 1000, blind=False)
    bank = {"FONTAINE_BANK": str(tmp_path / "bank")}
    note = f"two ranks; wandb key {'0123456789abcdef' * 2}01234567"
    res = cli(tmp_path, "bank", "add", str(root), "--as", "ref", "--note", note, **bank)
    refused(res, "0123456789abcdef0123")
    assert not (tmp_path / "bank").exists() or not list((tmp_path / "bank").rglob("*.json"))
    ok = cli(tmp_path, "bank", "add", str(root), "--as", "ref", "--note", "two ranks", **bank)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(cli(tmp_path, "bank", "show", "ref", "-j", **bank).stdout)["note"] == (
        "two ranks"
    )


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("GPU budget review", True),
        ("the token expired, asked by ops", True),
        ("half batch after the OOM at step 200", True),
        (UNBLIND, False),
        (AMEND, False),
        ("password=hunter2", False),
    ],
)
def test_recordable_refuses_only_a_text_holding_a_credential(text, ok):
    from fontaine_tui.core.secrets import recordable

    if ok:
        assert recordable(text, "--text") == text
    else:
        with pytest.raises(InputError) as info:
            recordable(text, "--text")
        assert str(info.value).startswith("--text: ") and "\n" not in str(info.value)


def test_a_refusal_of_the_review_s_amendment_names_both_places(tmp_path):
    """The review's amendment: a key set and a redis-cli password in prose. Both found, neither
    echoed, the amendment not written."""
    root = run_folder(tmp_path, 300, blind=False)
    hf = "hf_abcdefghijklmnopqrstuvwxyz0123"
    text = f"HF_TOKEN={hf}; also redis-cli -a Zr8Xy7Wv6Ut5Sr4Qp3"
    res = cli(tmp_path, "amend", str(root), "--extend-to", "950", "--text", text)
    refused(res, hf[3:], "Zr8Xy7Wv6Ut5Sr4Qp3", "redis")
    assert "(word 1: a key named HF_TOKEN; word 5: the value of -a)" in res.stderr, res.stderr
    assert not (root / "amendments.jsonl").exists()
