"""What each service receives, read off a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
from email.header import decode_header

import pytest

from fontaine_tui.core.notify.delivery import Notifier, Policy
from fontaine_tui.core.notify.destinations import make_destination
from fontaine_tui.core.notify.payloads import (
    DISCORD_CONTENT,
    DISCORD_DESCRIPTION,
    ELLIPSIS,
    SLACK_TEXT,
    Message,
)

T0 = 1_700_000_000.0
ISO = "2023-11-14T22:13:20+00:00"
MSG = Message(
    level="warn",
    title="loss spike",
    text="train loss 4.2 > 3 × median <x> & y",
    run="demosonly_1gpu",
    step=250,
    time=T0,
    fields={"loss": "4.2", "lr": "3e-4"},
)


def deliver(hook, service, message=MSG, path="/hook"):
    dest = make_destination(hook.url(path), service=service)
    notifier = Notifier([dest], policy=Policy(timeout=2, tries=1))
    assert notifier.send(message) == 1
    assert notifier.close(10)
    assert notifier.failures == []
    assert notifier.stats_of(dest).delivered == 1
    (req,) = hook.wait_for(1)
    assert req.method == "POST" and req.path == path
    return req


def test_slack_text_and_blocks(hook):
    req = deliver(hook, "slack", path="/services/T000/B000/SECRETTOKEN")
    assert req.headers["Content-Type"] == "application/json"
    body = json.loads(req.body)
    assert set(body) == {"text", "blocks"}
    assert body["text"] == "[WARN] loss spike: train loss 4.2 &gt; 3 × median &lt;x&gt; &amp; y"
    header, section, fields, context = body["blocks"]
    assert header == {"type": "header", "text": {"type": "plain_text", "text": "loss spike"}}
    assert section == {
        "type": "section",
        "text": {"type": "mrkdwn", "text": "train loss 4.2 &gt; 3 × median &lt;x&gt; &amp; y"},
    }
    assert fields["fields"] == [
        {"type": "mrkdwn", "text": "*loss*\n4.2"},
        {"type": "mrkdwn", "text": "*lr*\n3e-4"},
    ]
    assert context == {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": f"run demosonly_1gpu · step 250 · {ISO} · WARN"}],
    }


def test_discord_content_and_embed(hook):
    body = json.loads(deliver(hook, "discord", path="/api/webhooks/1/SECRETTOKEN").body)
    assert set(body) == {"content", "embeds", "allowed_mentions"}
    assert body["content"] == "[WARN] loss spike"
    assert body["allowed_mentions"] == {"parse": []}
    (embed,) = body["embeds"]
    assert embed["title"] == "loss spike"
    assert embed["description"] == MSG.text
    assert embed["color"] == 0xE67E22
    assert embed["timestamp"] == ISO
    assert embed["fields"] == [
        {"name": "loss", "value": "4.2", "inline": True},
        {"name": "lr", "value": "3e-4", "inline": True},
    ]
    assert embed["footer"] == {"text": "run demosonly_1gpu · step 250"}


def test_ntfy_body_and_headers(hook):
    req = deliver(hook, "ntfy", path="/my-runs")
    assert req.body.decode() == MSG.text
    assert req.headers["Title"] == "loss spike"
    assert req.headers["Priority"] == "4"
    assert req.headers["Tags"] == "warning"


def test_ntfy_non_ascii_title_is_an_encoded_word(hook):
    req = deliver(hook, "ntfy", Message(level="alert", title="perte × 3", text="é", time=T0))
    ((raw, charset),) = decode_header(req.headers["Title"])
    assert raw.decode(charset) == "perte × 3"
    assert req.headers["Priority"] == "5" and req.body.decode() == "é"


def test_generic_json(hook):
    body = json.loads(deliver(hook, "generic").body)
    assert body == {
        "level": "warn",
        "title": "loss spike",
        "text": MSG.text,
        "run": "demosonly_1gpu",
        "step": 250,
        "time": ISO,
    }


@pytest.mark.parametrize("service", ["slack", "discord"])
def test_long_text_is_cut_with_an_ellipsis(hook, service):
    long = Message(level="info", title="t" * 3000, text="a<" * 5000, time=T0)
    body = json.loads(deliver(hook, service, long).body)
    if service == "slack":
        text = body["blocks"][1]["text"]["text"]
        assert len(text) <= SLACK_TEXT and text.endswith(ELLIPSIS)
        assert len(body["text"]) <= SLACK_TEXT
        assert len(body["blocks"][0]["text"]["text"]) <= 150
    else:
        assert len(body["content"]) <= DISCORD_CONTENT and body["content"].endswith(ELLIPSIS)
        desc = body["embeds"][0]["description"]
        assert len(desc) == DISCORD_DESCRIPTION and desc.endswith(ELLIPSIS)
        assert len(body["embeds"][0]["title"]) <= 256
