"""Webhook tokens replaced by *** in URLs and in any text quoting them."""

from __future__ import annotations

import pytest

from fontaine_tui.core.notify.delivery import Notifier, Policy
from fontaine_tui.core.notify.destinations import make_destination
from fontaine_tui.core.notify.payloads import Message
from fontaine_tui.core.secrets import redact_text, redact_url, secrets_of
from tests.core.notify.server import dead_port

UUID = "0b9c4e2a-7f1d-4c3b-9a8e-5d6f7a8b9c0d"


@pytest.mark.parametrize(
    "url, shown",
    [
        (
            "https://hooks.slack.com/services/T000/B000/SECRETTOKEN",
            "https://hooks.slack.com/services/***/***/***",
        ),
        (
            "https://discord.com/api/webhooks/123456/SECRETTOKEN",
            "https://discord.com/api/webhooks/123456/***",
        ),
        ("https://user:SECRETTOKEN@example.org/hook", "https://***@example.org/***"),
        (
            "https://example.org/hook?token=SECRETTOKEN&x=1",
            "https://example.org/***?token=***&x=***",
        ),
        ("http://127.0.0.1:18777/hook?BAREQUERYTOKEN", "http://127.0.0.1:18777/***?***"),
        ("https://example.org/hook?a=1&BARETOKEN", "https://example.org/***?a=***&***"),
        ("https://example.org/hook#SECRETTOKEN", "https://example.org/***#***"),
        ("https://ntfy.sh/SECRETTOKEN", "https://ntfy.sh/***"),
        ("ntfy://ntfy.example.org/SECRETTOKEN", "ntfy://ntfy.example.org/***"),
        ("tgram://SECRETTOKEN/chat", "tgram://***/***"),
        ("https://example.org/hook", "https://example.org/***"),
        ("https://chat.example.org/hooks/SECRETTOKEN", "https://chat.example.org/***/***"),
        ("http://127.0.0.1:8080/webhook/SECRET/TOKEN", "http://127.0.0.1:8080/***/***/***"),
        # any other http(s) webhook: the first segment may be the secret as well
        ("http://127.0.0.1:8080/SECRETTOKEN", "http://127.0.0.1:8080/***"),
        (f"https://webhook.site/{UUID}", "https://webhook.site/***"),
        ("https://ntfy.example.com/SECRETTOKEN", "https://ntfy.example.com/***"),
        (
            "https://example.org/SECRETTOKEN/services/T0/B0/X",
            "https://example.org/***/***/***/***/***",
        ),
        ("https://example.org/", "https://example.org/"),
        ("not a url SECRETTOKEN", "***"),
    ],
)
def test_redact_url(url, shown):
    assert redact_url(url) == shown


def test_redact_text_hides_the_url_and_its_pieces():
    url = "https://hooks.slack.com/services/T000/B000/SECRETTOKEN"
    text = f"POST {url} failed; token SECRETTOKEN; quoted services%2FT000%2FB000%2FSECRETTOKEN"
    out = redact_text(text, [url])
    assert "SECRETTOKEN" not in out
    assert out.startswith("POST https://hooks.slack.com/services/***/***/*** failed; token ***")


# (url, service as destinations.py decides it, the label, the secret pieces)
CASES = [
    (
        "https://ntfy.example.com/mytopicSECRET",
        "ntfy",
        "https://ntfy.example.com/***",
        ["mytopicSECRET"],
    ),
    (
        "https://ntfy.example.com/services",
        "ntfy",
        "https://ntfy.example.com/***",
        ["services"],
    ),  # a self-hosted ntfy topic that looks like Slack's path
    ("http://127.0.0.1:8080/SECRETTOKEN", "generic", "http://127.0.0.1:8080/***", ["SECRETTOKEN"]),
    (f"https://webhook.site/{UUID}", "generic", "https://webhook.site/***", [UUID]),
    (
        "https://example.org/api/webhooks/123456/SECRETTOKEN",
        "generic",
        "https://example.org/***/***/***/***",
        ["123456", "SECRETTOKEN"],
    ),
    (
        "https://hooks.slack.com/services/T000/B000/SECRETTOKEN",
        "slack",
        "https://hooks.slack.com/services/***/***/***",
        ["T000", "B000", "SECRETTOKEN"],
    ),
    (
        "https://discord.com/api/webhooks/123456/SECRETTOKEN",
        "discord",
        "https://discord.com/api/webhooks/123456/***",
        ["SECRETTOKEN"],
    ),
    (
        "https://mattermost.example.org/hooks/SECRETTOKEN",
        "slack",  # Slack-compatible
        "https://mattermost.example.org/***/***",
        ["SECRETTOKEN"],
    ),
]


@pytest.mark.parametrize("url, service, shown, secrets", CASES)
def test_the_label_text_and_pieces_hide_the_secret(url, service, shown, secrets):
    dest = make_destination(url, service=service)
    assert dest.service == service
    assert dest.label == redact_url(url, service) == shown
    assert set(secrets) <= set(secrets_of(url, service))
    text = f"POST {url} failed: {secrets[-1]} refused; quoted {url.partition('//')[2]}"
    for out in (redact_text(text, [(url, service)]), repr(dest)):
        for secret in secrets:
            assert secret not in out


def test_a_self_hosted_ntfy_and_a_bare_path_are_hidden_from_the_url_alone():
    for url in (
        "https://ntfy.example.com/mytopicSECRET",
        "http://127.0.0.1:9/SECRETTOKEN",
        f"https://webhook.site/{UUID}",
    ):
        assert redact_url(url).count("/") == 3 and redact_url(url).endswith("/***")
        out = redact_text(f"{url} said no: {url.rpartition('/')[2]}", [url])
        assert url.rpartition("/")[2] not in out


def test_a_service_detected_by_url_is_redacted_by_it():
    assert make_destination("https://ntfy.sh/SECRETTOKEN").label == "https://ntfy.sh/***"
    assert make_destination("ntfy://ntfy.example.org/SECRETTOKEN").label == (
        "ntfy://ntfy.example.org/***"
    )
    assert make_destination(f"http://127.0.0.1:8080/{UUID}").label == "http://127.0.0.1:8080/***"


def test_a_failure_names_neither_a_self_hosted_topic_nor_a_first_segment_token():
    port = dead_port()
    dests = [
        make_destination(f"http://127.0.0.1:{port}/mytopicSECRET", service="ntfy"),
        make_destination(f"http://127.0.0.1:{port}/SECRETTOKEN"),
    ]
    notifier = Notifier(dests, policy=Policy(timeout=2, tries=1))
    assert notifier.send(Message(level="info", title="t", text="x")) == 2
    assert notifier.close(10)
    assert {f.destination for f in notifier.failures} == {f"http://127.0.0.1:{port}/***"}
    for f in notifier.failures:
        assert "cannot connect" in f.reason
        assert "mytopicSECRET" not in repr(f) and "SECRETTOKEN" not in repr(f)
    assert "SECRET" not in repr(notifier)


def test_every_message_goes_out_with_its_tokens_masked(hook):
    """Whatever a notification quotes (a trainer's alert, an error), the policy masks it."""
    hf = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    hexkey = "0123456789abcdef0123456789abcdef01234567"
    dests = [
        make_destination(hook.url("/SECRETTOKEN"), service="generic"),
        make_destination(hook.url("/services/T0/B0/SECRETTOKEN"), service="slack"),
    ]
    notifier = Notifier(dests, policy=Policy(timeout=5, tries=1))
    notifier.send(
        Message(
            level="warn",
            title=f"r: trainer alert {hf}",
            text=f"wandb: WANDB_API_KEY=k3y refused; retry with --token {hf}",
            run="r",
            fields={"note": f"key {hexkey}"},
            detail="sent with Bearer abcdefghijk",
        )
    )
    assert notifier.close(10)
    bodies = [r.body.decode() for r in hook.wait_for(2)]
    for body in bodies:
        for token in (hf[3:], "k3y", hexkey, "abcdefghijk"):
            assert token not in body, body
        assert "WANDB_API_KEY=***" in body and "--token ***" in body, body
