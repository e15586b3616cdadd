"""Webhook tokens replaced by *** in URLs and in any text quoting them."""

from __future__ import annotations

import pytest

from fontaine_tui.core.notify import redact_text, redact_url


@pytest.mark.parametrize("url, shown", [
    ("https://hooks.slack.com/services/T000/B000/SECRETTOKEN",
     "https://hooks.slack.com/services/***/***/***"),
    ("https://discord.com/api/webhooks/123456/SECRETTOKEN",
     "https://discord.com/api/webhooks/123456/***"),
    ("https://user:SECRETTOKEN@example.org/hook", "https://***@example.org/hook"),
    ("https://example.org/hook?token=SECRETTOKEN&x=1", "https://example.org/hook?token=***&x=***"),
    ("https://example.org/hook#SECRETTOKEN", "https://example.org/hook#***"),
    ("https://ntfy.sh/SECRETTOKEN", "https://ntfy.sh/***"),
    ("ntfy://ntfy.example.org/SECRETTOKEN", "ntfy://ntfy.example.org/***"),
    ("tgram://SECRETTOKEN/chat", "tgram://***/***"),
    ("https://example.org/hook", "https://example.org/hook"),
    ("https://chat.example.org/hooks/SECRETTOKEN", "https://chat.example.org/hooks/***"),
    ("http://127.0.0.1:8080/webhook/SECRET/TOKEN", "http://127.0.0.1:8080/webhook/***/***"),
    ("not a url SECRETTOKEN", "***"),
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown


def test_redact_text_hides_the_url_and_its_pieces():
    url = "https://hooks.slack.com/services/T000/B000/SECRETTOKEN"
    text = (f"POST {url} failed; token SECRETTOKEN; quoted "
            "services%2FT000%2FB000%2FSECRETTOKEN")
    out = redact_text(text, [url])
    assert "SECRETTOKEN" not in out
    assert out.startswith("POST https://hooks.slack.com/services/***/***/*** failed; token ***")
