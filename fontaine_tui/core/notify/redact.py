"""Webhook tokens out of every string that could be printed or logged.

A notification URL is a credential: whoever has a Slack or Discord incoming-webhook URL can
post to the channel. `redact_url` keeps what says *where* (scheme, host, port, the fixed part
of the path) and replaces what grants access with `***`; `redact_text` does the same inside
any text (an error message, a reason) that might quote the URL or a piece of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

MASK = "***"
_MIN_SECRET = 4  # shorter pieces ("T0", "1") are not replaced inside free text


def _split(url: str):
    try:
        return urlsplit(url)
    except ValueError:
        return None


def _secret_segments(scheme: str, host: str, segments: list[str]) -> list[int]:
    """Indexes of the path segments that are secret."""
    if scheme not in ("http", "https"):  # ntfy://host/topic, apprise URLs: all of the path
        return [i for i, s in enumerate(segments) if s]
    if "services" in segments:  # Slack: /services/T.../B.../TOKEN
        start = segments.index("services") + 1
        return list(range(start, len(segments)))
    for i in range(len(segments) - 1):  # Discord: /api/webhooks/ID/TOKEN
        if segments[i] == "api" and segments[i + 1] == "webhooks":
            return list(range(i + 3, len(segments)))
    if host == "ntfy.sh" or host.endswith(".ntfy.sh"):  # the topic is the password
        return [i for i, s in enumerate(segments) if s]
    # any other webhook (Mattermost /hooks/KEY, n8n /webhook/UUID, a self-hosted ntfy's
    # topic): what follows the first segment may be the key
    named = [i for i, s in enumerate(segments) if s]
    return named[1:]


def redact_url(url: str) -> str:
    """`url` with its userinfo, secret path segments, query values and fragment as `***`."""
    parts = _split(url)
    if parts is None or not parts.scheme or not parts.netloc:
        return MASK
    host = parts.hostname or ""
    netloc = parts.netloc.rpartition("@")[2]
    if "@" in parts.netloc:
        netloc = f"{MASK}@{netloc}"
    segments = parts.path.split("/")
    secret = _secret_segments(parts.scheme.lower(), host.lower(), segments)
    if parts.scheme.lower() not in ("http", "https") and host:
        # an apprise or ntfy URL may carry its token as the "host" (tgram://BOTTOKEN/CHAT)
        if parts.scheme.lower() not in ("ntfy", "ntfys"):
            netloc = MASK
    path = "/".join(MASK if i in secret else s for i, s in enumerate(segments))
    query = "&".join(f"{quote(k)}={MASK}" for k, _ in parse_qsl(parts.query,
                                                                keep_blank_values=True))
    if parts.query and not query:
        query = MASK
    fragment = MASK if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, path, query, fragment))


def secrets_of(url: str) -> list[str]:
    """The pieces of `url` that `redact_url` hides, longest first (raw and percent-decoded)."""
    parts = _split(url)
    if parts is None:
        return [url]
    found: list[str] = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        found += [userinfo, *userinfo.split(":")]
    if parts.scheme.lower() not in ("http", "https", "ntfy", "ntfys") and parts.netloc:
        found.append(parts.netloc)
    segments = parts.path.split("/")
    secret = _secret_segments(parts.scheme.lower(), (parts.hostname or "").lower(), segments)
    found += [segments[i] for i in secret]
    found += [v for _, v in parse_qsl(parts.query, keep_blank_values=True)]
    if parts.query:
        found.append(parts.query)
    if parts.fragment:
        found.append(parts.fragment)
    out = {s for s in found if len(s) >= _MIN_SECRET}
    out |= {unquote(s) for s in out if len(unquote(s)) >= _MIN_SECRET}
    return sorted(out, key=len, reverse=True)


def redact_text(text: str, urls: Iterable[str]) -> str:
    """`text` with each of `urls` (whole, then each secret piece of it) replaced."""
    urls = [u for u in urls if u]
    for url in sorted(urls, key=len, reverse=True):
        text = text.replace(url, redact_url(url))
    for url in urls:
        for piece in secrets_of(url):
            text = text.replace(piece, MASK)
    return text
