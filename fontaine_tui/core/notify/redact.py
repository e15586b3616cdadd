"""Webhook tokens out of every string that could be printed or logged.

A notification URL is a credential: whoever has a Slack or Discord incoming-webhook URL, or a
generic webhook's URL, or an ntfy topic, can post there. `redact_url` keeps what says *where*
(scheme, host, port, and the fixed part of a Slack or Discord path) and replaces what grants
access with `***`:

- Slack (`/services/T.../B.../TOKEN`): `/services/***/***/***`;
- Discord (`/api/webhooks/ID/TOKEN`): `/api/webhooks/ID/***`;
- ntfy (`https://ntfy.sh/TOPIC`, a self-hosted `https://ntfy.example.com/TOPIC`, whose topic
  is the password) and any other http(s) webhook (`/hooks/KEY`, `/SECRETTOKEN`,
  `/UUID`): every path segment, `/***`, `/***/***`;
- other schemes (`ntfy://HOST/TOPIC`, apprise URLs): every path segment, and the host
  unless ntfy (`tgram://BOTTOKEN/CHAT`);
- everywhere: user info, query values, the fragment.

The destination's service (destinations.py) says which: given, a Slack or Discord path is
kept only for that service (a self-hosted ntfy topic named `services` is hidden); not given,
it is inferred from the path's shape. `redact_text` does the same inside any text (an error
message, a reason) that might quote the URL or a piece of it: `secrets_of` gives it the
pieces `redact_url` hides.
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


def _named(segments: list[str]) -> list[int]:
    return [i for i, s in enumerate(segments) if s]


def _secret_segments(scheme: str, segments: list[str], service: str | None = None) -> list[int]:
    """Indexes of the path segments that are secret.

    These are all of them but the fixed part of a Slack or Discord webhook's path. With
    `service` None the service is inferred from the path's shape."""
    named = _named(segments)
    if scheme not in ("http", "https"):  # ntfy://host/topic, apprise URLs: all of the path
        return named
    words = [segments[i] for i in named]
    if service in (None, "slack") and len(words) > 1 and words[0] == "services":
        return named[1:]  # Slack: /services/T.../B.../TOKEN
    if service in (None, "discord") and len(words) > 2 and words[:2] == ["api", "webhooks"]:
        return named[3:]  # Discord: /api/webhooks/ID/TOKEN (the ID alone grants nothing)
    # ntfy (the topic is the password, on ntfy.sh or a host of one's own) and any other
    # webhook (Mattermost /hooks/KEY, n8n /webhook/UUID, webhook.site/UUID, /SECRETTOKEN):
    # any segment may be the key
    return named


def redact_url(url: str, service: str | None = None) -> str:
    """`url` with its userinfo, secret path segments, query values and fragment as `***`.

    `service` is the destination's service (slack, discord, ntfy, generic, apprise), or None
    when it is unknown."""
    parts = _split(url)
    if parts is None or not parts.scheme or not parts.netloc:
        return MASK
    host = parts.hostname or ""
    netloc = parts.netloc.rpartition("@")[2]
    if "@" in parts.netloc:
        netloc = f"{MASK}@{netloc}"
    segments = parts.path.split("/")
    secret = _secret_segments(parts.scheme.lower(), segments, service)
    if parts.scheme.lower() not in ("http", "https") and host:
        # an apprise or ntfy URL may carry its token as the "host" (tgram://BOTTOKEN/CHAT)
        if parts.scheme.lower() not in ("ntfy", "ntfys"):
            netloc = MASK
    path = "/".join(MASK if i in secret else s for i, s in enumerate(segments))
    # a name=value pair keeps its name; a part without "=" may be the token itself
    query = "&".join(
        f"{quote(unquote(k))}={MASK}" if sep else MASK
        for k, sep, _ in (p.partition("=") for p in parts.query.split("&") if p)
    )
    if parts.query and not query:
        query = MASK
    fragment = MASK if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, path, query, fragment))


def secrets_of(url: str, service: str | None = None) -> list[str]:
    """The pieces of `url` that `redact_url(url, service)` hides, longest first.

    Each piece is given raw and percent-decoded."""
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
    secret = _secret_segments(parts.scheme.lower(), segments, service)
    found += [segments[i] for i in secret]
    found += [v or k for k, v in parse_qsl(parts.query, keep_blank_values=True)]  # a bare ?TOKEN
    if parts.query:
        found.append(parts.query)
    if parts.fragment:
        found.append(parts.fragment)
    out = {s for s in found if len(s) >= _MIN_SECRET}
    out |= {unquote(s) for s in out if len(unquote(s)) >= _MIN_SECRET}
    return sorted(out, key=len, reverse=True)


def redact_text(text: str, urls: Iterable[str | tuple[str, str | None]]) -> str:
    """`text` with each of `urls` replaced: whole, then each secret piece of it.

    An item may be `(url, service)`, with the destination's service (see `redact_url`)."""
    pairs = [u if isinstance(u, tuple) else (u, None) for u in urls]
    pairs = [(u, service) for u, service in pairs if u]
    for url, service in sorted(pairs, key=lambda p: len(p[0]), reverse=True):
        text = text.replace(url, redact_url(url, service))
    for url, service in pairs:
        for piece in secrets_of(url, service):
            text = text.replace(piece, MASK)
    return text
