"""The one secrets policy: what a credential looks like, and how it is shown.

Every surface that shows, freezes or sends what someone else wrote asks this module: the
`[command]` checks (core/preset/command.py), the launcher's platform delta and its block check
(core/launch/command.py), the key delta beside the banked comparator (core/preset/delta.py),
prereg.json (core/verdict/prereg.py), `presets show`, the processes mode's command cell and
stack lines (model/processes.py), the trainer's alerts and every notification (core/notify).

It is one concept over some 1,200 lines: the forms a credential takes in argv, free text, URLs,
environment, TOML text and parsed documents share one word reader and one set of name rules
(`_mask_words`, `secret_name`), and split apart they would drift, which is what this module
replaced.

What looks like a credential (docs/secrets.md lists it for the user):

- a secret-named flag's, variable's or key's value: `--api-key V`, `--token=V`, `env K=V`,
  `K=V` inside `bash -c "..."`, a Hydra override `a.b.api_key=V` (`+`, `++` too), `"key": V`,
  `Authorization: Bearer V`, a pair in a flag's list (`--opts user=bob,password=V`) or
  value (`--env=HF_TOKEN=V`), a program's own code setting it (`os.environ["K"] = "V"`,
  `os.putenv("K", "V")`), other shells, files and languages setting it (`setenv K V`,
  `set -x K V`, `$env:K = "V"`, `ENV K V`, `K := V`, `k <- "V"`), a key under a path
  (`a/b/api_key=V`), percent-encoded (`?next=%3Ftoken%3DV`), glued by a colon as an
  environment is printed (`HF_TOKEN:V`; `hf_token:V` where V has a credential's mix), a tab
  apart (`HF_TOKEN<TAB>V`), a hash's arrow (`api_key => V`), said in a sentence (`my
  hub_token is V`, `my token is: V`, unless the word after reads as the sentence going on:
  letters alone, no digit nor capital past the first, a variable's name, or a number or a
  size where the key is not a password's); the name says it (`secret_name`: TOKEN, SECRET,
  PASSWORD, API_KEY, a last word KEY, AUTH, CREDENTIAL, COOKIE, WEBHOOK, DSN, PAT, ...), not
  TOKENIZERS_PARALLELISM, MAX_TOKENS, PAD_TOKEN_ID, TEXT_KEY or AUTHOR; in text, not a lone
  key, pass or auth, nor a setting's name (AUTH_MODE, SECRET_SCAN);
- a value of a token's shape, under any name or none: `hf_...`, `sk-...`, `ghp_...`,
  `github_pat_...`, `glpat-...`, `xox?-...`, AWS key ids (and the secret access key right
  after one), Google `AIza...` and `ya29.`, npm's `npm_...`, PyPI's `pypi-AgE...`, Docker's
  `dckr_pat_...`, a Telegram bot's `ID:SECRET` (`/botID:SECRET/` in its API's URL), JSON
  web tokens, and a bare 40-hex string (a W&B key) unless it follows a commit, revision or
  hash, or stands in a path;
- in a URL: user info (`user:***@`, or `***@` for a token alone; percent-encoded in another
  URL's query too), a secret-named query or fragment value (`?token=`, `?key=`, `?sig=`,
  `#access_token=`, and in a query inside a value, `?next=/login?token=`), and a webhook's
  token path (Slack, Discord, ntfy, any `hook` URL: `redact_url`).
- programs' own forms: `mysql -pV`, `docker login -p V`, `curl -u me:V`, `--password:V`, a
  `.netrc` entry's `password V` and `account V` (on one line or a token a line), Azure's
  `AccountKey=V;` (the pairs around it kept), npm's `/:_authToken=V`, a proxy's
  `user:V@host:port`, a private key's body, an argv printed as a list (`["--token", "V"]`,
  `['mysql', '-p', 'V']`) or a word a line: a `-p` is read with its program in view, as a
  program's own password flag is (`redis-cli -a V`, `ldapsearch -w V`); openssl's
  `-passin pass:V`;
  a password said after its word, `password V`, `passwd V`, `passphrase V` (a space or a
  tab apart) or `password:V`, unless the word after reads as the sentence going on (a
  word of letters: `password reset link sent`; a number of 1 to 3 digits).

A line that a backslash continues is read with the next, as the shell reads it: the value of
`--hub_token \\` is on the next line; so is a line that ends in a secret-named flag or a `-p`,
and a run of lines of one word each is read as one command line.
A quote that never closes (the apostrophe of `couldn't`, a stray `"`) is a character, not
the start of a quoted run: the words after it are masked as they would be without it. Two
quotes that close are read three times: as the shell reads them (a quoted run is one word,
`--token "a b"`), as prose pairs them (a quote inside a word is a character: `--token 'it's
V'` is one value, and the apostrophes of `it's --token 'V' don't` make no run), and as prose
reads them (every quote a character, words split on spaces alone: the apostrophes of `don't
share password=V, it's` make no run); a token any reading finds is masked. JSON and a
Python dict's repr are read as pairs too: a secret-named key's value after `": "` or `': '`
(spaced or not; a list `[***]` whole) is masked, quotes kept; so is a call's keyword in a
repr (`Namespace(hub_token='***', lr=3)`).

How it is shown: the token replaced by `***`, every other character of the line kept, so a
masked line still says what ran. Masking is idempotent: masking a masked text changes
nothing, and a text holds a credential exactly when masking changes it. What a user types
for the tool to record as typed (an unblind reason, a review note, an amendment's text, a
bank note) is not masked but refused when it holds one (`recordable`), the refusal naming
where each credential stands, never quoting the text.

Its size: one concept over some 1,500 lines, what a credential looks like. Each written form
is a row of `_KEYED_FORMS` or a word rule, and the checks at load, the masking and the
refusals all read those same rows: split, a form would be recognised in one module and
masked by another, and the next surface would meet a form only one of them knows.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlsplit, urlunsplit

import tomllib

from fontaine_tui.core.errors import InputError

MASK = "***"
_MIN_SECRET = 4  # shorter pieces of a known URL ("T0", "1") are not replaced inside free text

# -- names ----------------------------------------------------------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NOT_WORD = re.compile(r"[^A-Za-z0-9]+")
# words that make a name secret wherever they stand in it
_SECRET_WORDS = frozenset(
    {
        "PASSWORD",
        "PASSWORDS",
        "PASSWD",
        "PASSPHRASE",
        "PASSIN",  # openssl's -passin pass:V, -passout
        "PASSOUT",
        "CREDS",
        "APIKEY",
        "WEBHOOK",
        "WEBHOOKS",
    }
)
_SECRET_PARTS = re.compile(r"SECRET|PASSW|CREDENTIAL|COOKIE|APIKEY|PRIVATEKEY|WEBHOOK")
_AUTH = re.compile(r"AUTH(?!OR(?!IZ))")  # AUTH, OAUTH, AUTHORIZATION; not AUTHOR(S), AUTHORITY
_TOKEN = re.compile(r"TOKEN(?!IZ|IS|S$)")  # not TOKENIZER, TOKENISE, TOKENS
# TOKEN in a model's vocabulary: PAD_TOKEN, TOKEN_ID, MAX_TOKEN_LENGTH
_TOKEN_KINDS = frozenset(
    {
        "PAD", "BOS", "EOS", "UNK", "SEP", "CLS", "MASK", "SPECIAL", "START", "END", "STOP",
        "IMAGE", "VISION", "AUDIO", "VIDEO", "NEW", "MAX", "MIN", "NUM", "TOTAL", "CHAT",
    }
)  # fmt: skip
_TOKEN_MEASURES = frozenset(
    {"ID", "IDS", "LEN", "LENGTH", "TYPE", "TYPES", "COUNT", "DROPOUT", "BUDGET", "LIMIT"}
)
# KEY as the last word is a secret (--key, OPENAI_KEY), but not a data key's name (TEXT_KEY)
_DATA_KEYS = frozenset(
    {
        "SORT", "TEXT", "IMAGE", "IMAGES", "LABEL", "LABELS", "METRIC", "DATASET", "PRIMARY",
        "FOREIGN", "INPUT", "OUTPUT", "COLUMN", "FIELD", "CAPTION", "PROMPT", "TARGET", "SPLIT",
        "GROUP", "CACHE", "LOOKUP", "MONITOR", "RNG", "PRNG", "SEED", "AUDIO", "VIDEO", "ID",
        "NAME", "TASK", "ACTION", "STATE", "OBSERVATION", "CAMERA", "REWARD", "EPISODE",
        "FRAME", "BATCH", "MODEL", "CONFIG", "JSON", "DICT", "HASH", "SHARD", "PARTITION",
        "INDEX", "STEP", "TIME", "SAMPLE", "EVAL", "TRAIN", "LOG", "RESULT",
    }
)  # fmt: skip
_HASH_WORDS = frozenset(
    {"COMMIT", "REVISION", "REV", "SHA", "SHA1", "SHA256", "HASH", "DIGEST", "CHECKSUM", "REF",
     "HEAD", "GIT", "FINGERPRINT", "VERSION"}
)  # fmt: skip
_QUERY_WORDS = frozenset({"SIG", "SIGNATURE", "CODE", "KEY", "PASS", "PWD", "AUTH"})
_BOOLISH = frozenset(
    {"", "true", "false", "yes", "no", "none", "null", "nil", "undef", "0", "1", "on", "off"}
)


def _words(name: str) -> list[str]:
    return [w for w in _NOT_WORD.split(_CAMEL.sub("_", name).upper()) if w]


# PASS as a count of passes over the data (NUM_PASS, SECOND_PASS), not a password
_PASS_COUNTS = frozenset(
    {"NUM", "N", "MAX", "MIN", "FIRST", "SECOND", "THIRD", "LAST", "NEXT", "ONE", "TWO",
     "SINGLE", "MULTI", "EVAL", "TRAIN", "FORWARD", "BACKWARD", "BY", "EACH", "PER"}
)  # fmt: skip
_KEY_KINDS = frozenset({"API", "PRIVATE", "SECRET", "ACCESS"})  # API_KEY, SharedAccessKey
_WHERE_KEPT = frozenset({"FILE", "PATH", "DIR", "FILENAME", "ENV", "VAR"})  # a path, not a value


def _pass_secret(before: str, after: str) -> bool:
    """PASS as the last word, not a count of passes: DB_PASS, --pass; not NUM_PASS."""
    return not after and before not in _PASS_COUNTS


def _last_after_another(before: str, after: str) -> bool:
    """PWD, PAT or DSN as the last word after another: DB_PWD, GH_PAT; not PWD."""
    return bool(before) and not after


def _key_secret(before: str, after: str) -> bool:
    """KEY after its kind (API_KEY; not KeyName), or last (OPENAI_KEY; not TEXT_KEY)."""
    if before in _KEY_KINDS and after not in ("ID", "NAME"):
        return True
    return (not after or after.isdigit()) and before not in _DATA_KEYS


def _url_after(before: str, after: str) -> bool:
    """DATABASE before URL: DATABASE_URL holds the database's password."""
    return after == "URL"


# words that make a name secret by the words beside them: (the word before, the word after),
# each "" at the name's ends
_SECRET_BESIDE: dict[str, Callable[[str, str], bool]] = {
    "PASS": _pass_secret,
    "PWD": _last_after_another,
    "PAT": _last_after_another,
    "DSN": _last_after_another,
    "KEY": _key_secret,
    "DATABASE": _url_after,
}


def _secret_word(word: str, before: str, after: str) -> bool:
    """Whether one word of a name makes it secret, beside the words before and after it."""
    if word in _SECRET_WORDS or _SECRET_PARTS.search(word) or _AUTH.search(word):
        return True
    if _TOKEN.search(word):  # not a model's PAD_TOKEN, TOKEN_ID
        return word != "TOKEN" or not (before in _TOKEN_KINDS or after in _TOKEN_MEASURES)
    beside = _SECRET_BESIDE.get(word)
    return beside is not None and beside(before, after)


@functools.lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """Whether a flag's, variable's or key's name says its value is a credential.

    Dashes, dots, camel case and a leading `--`, `+` or `$` are read as word breaks: HF_TOKEN,
    HFTOKEN, hub-token, apiKey, trainer.logger.api_key, DB_PWD, GH_PAT, SENTRY_DSN are;
    TOKENIZERS_PARALLELISM, MAX_TOKENS, PAD_TOKEN_ID, TEXT_KEY, PWD, AUTHOR are not, nor is
    a name that ends in where the secret is kept (TOKEN_FILE, api-key-path, SECRETS_DIR)."""
    words = _words(name)
    if len(words) > 1 and words[-1] in _WHERE_KEPT:
        return False
    befores, afters = ["", *words[:-1]], [*words[1:], ""]
    return any(map(_secret_word, words, befores, afters))


@functools.lru_cache(maxsize=4096)
def _hashy(name: str) -> bool:
    """Whether a name says its value is a commit, revision or digest (40 hex digits there)."""
    return any(w in _HASH_WORDS for w in _words(name))


# -- values ---------------------------------------------------------------------------------

_TOKENS = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"hf_[A-Za-z0-9]{16,}"
    r"|sk-[A-Za-z0-9_\-]{16,}"
    r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|gh[oprsu]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_\-]{16,}"
    r"|xox[abeprs]-[A-Za-z0-9\-]{10,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|AIza[A-Za-z0-9_\-]{30,}"
    r"|ya29\.[A-Za-z0-9_\-]{16,}"
    r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"
    r"|local-[0-9a-f]{40}(?![0-9a-f])"  # a W&B key of a local server
    r"|npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"
    r"|pypi-AgE[A-Za-z0-9_\-]{40,}"
    r"|dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}"
    r")"
)
# a Telegram bot's token, `ID:SECRET` (in its API's path as `/botID:SECRET/`, `bot` kept):
# the bot's number, a colon, and 34 to 36 letters, digits, `_` and `-`, a capital among them
# (no `ID:HEX` of a commit's)
_TELEGRAM = re.compile(
    r"(?<![A-Za-z0-9])(?P<bot>bot)?"
    r"(?P<token>\d{6,12}:(?=[\w\-]{0,35}[A-Z])[A-Za-z0-9_\-]{34,36})(?![\w\-])"
)
# a bare 40-hex string (a W&B API key); not inside a longer hex run, a path or a name@ref
_TOKEN_CLUES = (
    "hf_", "sk-", "sk_", "rk_", "gho_", "ghp_", "ghr_", "ghs_", "ghu_", "github_pat_", "glpat-",
    "xox", "akia", "asia", "aiza", "ya29.", "eyj", "local-", "npm_", "pypi-", "dckr_",
)  # fmt: skip
_TOKEN_CLUE = re.compile("|".join(map(re.escape, _TOKEN_CLUES)))
_HEX_RUN = re.compile(r"[0-9a-f]{40}")
# 40 hex digits then `.json` or `.lock` name a file by its hash; then `.Word`, a sentence goes on
_HEX40 = re.compile(r"(?<![A-Za-z0-9_/.@\-])[0-9a-f]{40}(?![A-Za-z0-9_/@\-]|\.[a-z0-9])")
_HASH_BEFORE = re.compile(
    r"(?i)(?:commit|revision|rev|sha1?|sha256|hash|digest|checksum|ref|head|git|fingerprint)"
    r"[\w-]*[\s:=\"'(]*$"
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s'\"<>`]+")  # a bounded scheme: linear


def _hex_masked(text: str, hashes: bool) -> str:
    def one(m: re.Match[str]) -> str:
        value = m[0]
        if hashes or not (re.search(r"[a-f]", value) and re.search(r"[0-9]", value)):
            return value
        return value if _HASH_BEFORE.search(text[max(0, m.start() - 40) : m.start()]) else MASK

    return _HEX40.sub(one, text)


# an AWS key id and its secret access key after it (40 base64 characters), as a CSV of keys,
# a printed list or a log line pairs them: the secret has no shape of its own, the pair has
_AWS_ID = r"(?:AKIA|ASIA)[A-Z0-9]{16}"
_AWS_SECRET = r"[A-Za-z0-9/+]{40}"
_AWS_PAIR = re.compile(
    rf"(?<![A-Za-z0-9])(?P<id>{_AWS_ID})(?P<gap>[\"']?[ \t,;:=|]+[\"']?)"
    rf"(?P<secret>{_AWS_SECRET})(?![A-Za-z0-9/+=])"
)
_AWS_ID_WORD = re.compile(rf"""[\["'(]*{_AWS_ID}["',)\]]*""")
_AWS_SECRET_WORD = re.compile(rf"""["']?{_AWS_SECRET}["',)\]]*""")


def _aws_masked(text: str) -> str:
    """`text` with each AWS key id that a secret access key follows, and that secret, as ***."""
    if "AKIA" not in text and "ASIA" not in text:
        return text
    return _AWS_PAIR.sub(lambda m: f"{MASK}{m['gap']}{MASK}", text)


# user info with no scheme before it (a proxy's `user:V@proxy:8080`): the host a name with a
# dot or a port after it, so an image's `name:tag@sha256:...` is no such thing
_USERINFO = re.compile(
    r"(?<![\w/:@.%+\-])(?P<user>[\w.%+\-]+):(?P<value>[^\s@/:'\"]+)@"
    r"(?=(?!sha\d)(?:[A-Za-z0-9\-]+\.[A-Za-z0-9.\-]*[A-Za-z]|[A-Za-z0-9.\-]+:\d+)(?![\w.:\-]))"
)
# an .npmrc's registry line: `//registry.npmjs.org/:_authToken=V` (also _auth, _password)
_NPMRC = re.compile(r"(?<=/:)(?P<name>_[A-Za-z]+)=(?P<value>[^\s\"']+)")


def _plain_masked(text: str, hashes: bool) -> str:
    """`text` (no URL in it) with its token-shaped runs as ***."""
    if _TOKEN_CLUE.search(text.lower()) is not None:
        text = _TOKENS.sub(MASK, _aws_masked(text))
    if ":" in text and _TELEGRAM.search(text) is not None:
        text = _TELEGRAM.sub(rf"\g<bot>{MASK}", text)
    if "@" in text:
        text = _USERINFO.sub(lambda m: m[0] if m["value"] == MASK else f"{m['user']}:{MASK}@", text)
    if "/:_" in text:
        text = _NPMRC.sub(lambda m: f"{m['name']}={MASK}" if secret_name(m["name"]) else m[0], text)
    return _hex_masked(text, hashes) if _HEX_RUN.search(text) else text


def _tokens_masked(text: str, hashes: bool = False) -> str:
    """`text`'s token-shaped runs as ***, URLs masked where they stand (`mask_url`)."""
    if "://" not in text:
        return _plain_masked(text, hashes)
    out: list[str] = []
    at = 0
    for m in _URL.finditer(text):
        out.append(_plain_masked(text[at : m.start()], hashes))
        out.append(mask_url(m[0]))
        at = m.end()
    out.append(_plain_masked(text[at:], hashes))
    return "".join(out)


# -- URLs -----------------------------------------------------------------------------------


def _split(url: str) -> SplitResult | None:
    try:
        return urlsplit(url)
    except ValueError:
        return None


def _webhook(host: str, path: str) -> bool:
    """Whether a URL is a webhook's, whose path is its token (Slack, Discord, ntfy, hooks)."""
    host, path = host.lower(), path.lower()
    return (
        host in ("hooks.slack.com", "ntfy.sh")
        or "hook" in host
        or "hook" in path
        or (host.endswith(("discord.com", "discordapp.com")) and path.startswith("/api/webhooks"))
    )


def _pairs_masked(text: str) -> str:
    """A query's or fragment's `k=v&...`: a secret-named key's value as ***, tokens masked.

    A value that holds a query of its own (`next=/login?token=V`) has its pairs read too."""
    out = []
    for part in text.split("&"):
        key, eq, value = part.partition("=")
        name = unquote(key)
        if eq and value and _query_secret(name):
            out.append(f"{_tokens_masked(key)}={MASK}")
        elif "?" in value:  # a URL's query in the value, unencoded: ?next=/login?token=V
            where, _, query = value.partition("?")
            out.append(f"{_tokens_masked(key)}={_tokens_masked(where)}?{_pairs_masked(query)}")
        else:
            out.append(_tokens_masked(part))
    return "&".join(out)


def _query_secret(name: str) -> bool:
    return secret_name(name) or any(w in _QUERY_WORDS for w in _words(name))


def mask_url(url: str) -> str:
    """A URL found in a text, its credentials as ***, the rest as written.

    User info (`user:***@`, `***@` for a user alone: a token used as one), a secret-named query
    or fragment value, a token-shaped path segment; a webhook's URL as `redact_url` shows it
    (every segment that may be its token)."""
    parts = _split(url)
    if parts is None or not parts.netloc:
        return _TOKENS.sub(MASK, url)
    if _webhook(parts.hostname or "", parts.path):
        return redact_url(url)
    rest = url[len(parts.scheme) + 3 + len(parts.netloc) + len(parts.path) :]
    netloc, path = _netloc_masked(parts.netloc), _tokens_masked(parts.path)
    return f"{parts.scheme}://{netloc}{path}{_query_masked(rest)}"


def _netloc_masked(netloc: str) -> str:
    """A URL's host part, a password in its user info (or a token as its user) as ***.

    So is a Telegram bot's token there (apprise's `tgram://ID:SECRET`)."""
    if "@" in netloc:
        userinfo, _, where = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        return f"{user}:{MASK}@{where}" if colon else f"{MASK}@{where}"
    if ":" in netloc and _TELEGRAM.search(netloc) is not None:
        return _TELEGRAM.sub(rf"\g<bot>{MASK}", netloc)
    return netloc


def _query_masked(rest: str) -> str:
    """What follows a URL's path (`?k=v&...#fragment`), its secret-named values as ***."""
    query, hashmark, fragment = rest.partition("#")
    if query.startswith("?"):
        shown = "?" + _pairs_masked(query[1:])
    else:
        shown = _tokens_masked(query)
    if not hashmark:
        return shown
    return shown + "#" + (_pairs_masked(fragment) if "=" in fragment else _tokens_masked(fragment))


# the fixed part of a webhook's path, before what grants access: (its service, its first
# segments, how many segments are not secret)
_FIXED_PATHS = (
    ("slack", ("services",), 1),  # Slack: /services/T.../B.../TOKEN
    ("discord", ("api", "webhooks"), 3),  # Discord: /api/webhooks/ID/TOKEN (the ID grants nothing)
)


def _secret_segments(scheme: str, segments: list[str], service: str | None = None) -> list[int]:
    """Indexes of a notification URL's path segments that are secret.

    These are all of them but the fixed part of a Slack or Discord webhook's path
    (`_FIXED_PATHS`). With `service` None the service is inferred from the path's shape."""
    named = [i for i, s in enumerate(segments) if s]
    if scheme not in ("http", "https"):  # ntfy://host/topic, apprise URLs: all of the path
        return named
    words = tuple(segments[i] for i in named)
    for fixed_service, fixed, kept in _FIXED_PATHS:
        ahead = len(words) > len(fixed) and words[: len(fixed)] == fixed
        if ahead and service in (None, fixed_service):
            return named[kept:]
    # ntfy (the topic is the password, on ntfy.sh or a host of one's own) and any other
    # webhook (Mattermost /hooks/KEY, n8n /webhook/UUID, webhook.site/UUID, /SECRETTOKEN):
    # any segment may be the key
    return named


def _apprise(scheme: str) -> bool:
    """Whether a notification URL's scheme is apprise's, whose host may be its token."""
    return scheme.lower() not in ("http", "https", "ntfy", "ntfys")


def redact_url(url: str, service: str | None = None) -> str:
    """A URL that is itself a credential (a notification's), as it may be shown.

    What says *where* is kept (scheme, host, port, the fixed part of a Slack or Discord path);
    what grants access is `***`: user info, each path segment that may be the token (a Slack
    webhook's `/services/***/***/***`, Discord's `/api/webhooks/ID/***`, an ntfy topic, any
    other webhook's whole path), query values, the fragment, and the host of an apprise URL
    other than ntfy's (`tgram://BOTTOKEN/CHAT`). `service` is the destination's (slack,
    discord, ntfy, generic, apprise), or None when it is unknown: inferred from the path."""
    parts = _split(url)
    if parts is None or not parts.scheme or not parts.netloc:
        return MASK
    segments = parts.path.split("/")
    secret = _secret_segments(parts.scheme.lower(), segments, service)
    path = "/".join(MASK if i in secret else s for i, s in enumerate(segments))
    fragment = MASK if parts.fragment else ""
    return urlunsplit(
        (parts.scheme, _netloc_redacted(parts), path, _query_redacted(parts.query), fragment)
    )


def _netloc_redacted(parts: SplitResult) -> str:
    """A notification URL's host part: its user info as ***, an apprise URL's host too."""
    if _apprise(parts.scheme) and parts.hostname:
        return MASK  # an apprise URL may carry its token as the "host"
    where = parts.netloc.rpartition("@")[2]
    return f"{MASK}@{where}" if "@" in parts.netloc else where


def _query_redacted(query: str) -> str:
    """A notification URL's query, each value as ***, a pair's name kept (`_key_shown`).

    A part without `=` may be the token itself: *** whole."""
    shown = "&".join(
        f"{_key_shown(k)}={MASK}" if sep else MASK
        for k, sep, _ in (p.partition("=") for p in query.split("&") if p)
    )
    return MASK if query and not shown else shown


def _key_shown(key: str) -> str:
    """A query key of a notification URL: as written, or *** when it holds a credential."""
    name = unquote(key)
    return quote(name, safe="/*") if mask_text(name) == name else MASK


def secrets_of(url: str, service: str | None = None) -> list[str]:
    """The pieces of `url` that `redact_url(url, service)` hides, longest first.

    Each piece is given raw and percent-decoded."""
    parts = _split(url)
    if parts is None:
        return [url]
    found = _userinfo_pieces(parts.netloc)
    if _apprise(parts.scheme) and parts.netloc:
        found.append(parts.netloc)
    segments = parts.path.split("/")
    found += [segments[i] for i in _secret_segments(parts.scheme.lower(), segments, service)]
    found += [v or k for k, v in parse_qsl(parts.query, keep_blank_values=True)]  # a bare ?TOKEN
    found += [whole for whole in (parts.query, parts.fragment) if whole]
    return _longest_first(found)


def _userinfo_pieces(netloc: str) -> list[str]:
    """A URL's user info, whole and each part of it (`me:V`, `me`, `V`); none without `@`."""
    if "@" not in netloc:
        return []
    userinfo = netloc.rpartition("@")[0]
    return [userinfo, *userinfo.split(":")]


def _longest_first(found: list[str]) -> list[str]:
    """A credential's pieces raw and percent-decoded, longest first, the shortest left out."""
    out = {s for s in found if len(s) >= _MIN_SECRET}
    out |= {unquote(s) for s in out if len(unquote(s)) >= _MIN_SECRET}
    return sorted(out, key=len, reverse=True)


def redact_text(text: str, urls: Iterable[str | tuple[str, str | None]] = ()) -> str:
    """`text` with its known URLs' and every other credential masked.

    Each known URL is replaced whole, then each secret piece of it; everything else that looks
    like a credential is masked by `mask_text`. An item of `urls` may be `(url, service)`, with the destination's service (`redact_url`)."""
    pairs = [u if isinstance(u, tuple) else (u, None) for u in urls]
    pairs = [(u, service) for u, service in pairs if u]
    for url, service in sorted(pairs, key=lambda p: len(p[0]), reverse=True):
        text = text.replace(url, redact_url(url, service))
    for url, service in pairs:
        for piece in secrets_of(url, service):
            text = text.replace(piece, MASK)
    return mask_text(text)


# -- command lines and texts ----------------------------------------------------------------

# one shell word: plain characters, escapes and quoted runs that close; a quote that never
# closes in the text is an ordinary character (the apostrophe of "couldn't", a stray mark),
# so it hides no word after it; a backslash-newline (or a line's last backslash) is the
# shell's space between words
_QUOTED = r""""(?:[^"\\]|\\.)*"|'[^']*'"""  # a quoted run that closes
_WORD = re.compile(rf"""(?:[^\s"'\\]|\\(?!\n|\Z).?|{_QUOTED}|["'])+""", re.S)
_CLOSED = re.compile(_QUOTED, re.S)
# one word as prose reads it: quotes are characters, words split on spaces alone (and on a
# backslash-newline, the shell's space, so that both readings see the same lines)
_PROSE_WORD = re.compile(r"(?:[^\s\\]|\\(?!\n|\Z))+")
# a quoted run as prose pairs it: it opens at a quote after no letter or digit and closes at
# the next like quote before none; a quote between two letters or digits is a character in
# it (`'don't V'` is one run, and so is the `'V'` of `it's --token 'V' don't`). A run that
# never closes stops at the next quote that is no such character, so a line is read once
# over, not once for each quote in it
_PAIRED = (
    r"""(?<!\w)"(?:[^"\\\n]|\\.|(?<=\w)"(?=\w))*"(?!\w)"""
    r"""|(?<!\w)'(?:[^'\n]|(?<=\w)'(?=\w))*'(?!\w)"""
)
_PAIRED_WORD = re.compile(rf"""(?:[^\s"'\\]|\\(?!\n|\Z).?|{_PAIRED}|["'])+""")
_INNER_QUOTE = re.compile(r"""\w["']\w""")  # where the shell's and prose's pairing differ
# a quoted string as a value: `"V"`, `'it's V'`, JSON inside a JSON string
_STRING = (
    r'\\"(?:(?!\\")[^\n])*\\"'  # JSON inside a JSON string: {\"key\": \"V\"}
    r"""|"(?:[^"\\\n]|\\.)*"|'(?:[^'\n]|(?<=\w)'(?=\w))*'(?!\w)|'[^'\n]*'"""
)
# a key and its value in JSON or a Python dict's repr (`"api_key": "V"`, `'password':'V'`,
# `api_key": V` with its opening quote cut off): the value a string, a list of them
# (`["V", "W"]`) or a bare word
_KEYED = re.compile(
    r"""(?<![\w.\-])\\?["']?(?P<name>[A-Za-z_][\w.\-]*)\\?["'][ \t]*:[ \t]*"""
    rf"""(?P<value>{_STRING}|\[[^\[\]\n]*\]|[^\s"',;:{{}}\[\]()]+)"""
)
# a variable or key set by a program's own code: `os.environ["HF_TOKEN"] = "V"`,
# `cfg['db']['password']='V'`; the value a string (a bare word there is another variable)
_SUBSCRIPT = re.compile(
    r"""\[[ \t]*(?P<q>\\?["'])(?P<name>[A-Za-z_][\w.\-]*)(?P=q)[ \t]*\][ \t]*=(?!=)[ \t]*"""
    rf"(?P<value>{_STRING})"
)
# or by a call that sets one: `os.environ.setdefault("K", "V")`, `os.putenv("K", "V")`,
# Go's `os.Setenv("K", "V")`, `monkeypatch.setenv("K", "V")`, `localStorage.setItem("K", "V")`
_SET_CALL = re.compile(
    r"""(?<!\w)(?:setdefault|putenv|[Ss]etenv|setItem)\([ \t]*"""
    r"""(?P<q>\\?["'])(?P<name>[A-Za-z_][\w.\-]*)(?P=q)[ \t]*,[ \t]*"""
    rf"(?P<value>{_STRING})"
)
# a pair percent-encoded, as a URL inside another's query carries it (`?next=...%3Ftoken%3DV`,
# twice encoded `%253D` too): the value runs to an encoded or a plain `&`, or an encoded
# `?`, `=` or `#` (a URL's query inside the value: its pairs are read apart)
_ENCODED = re.compile(
    r"(?:(?<![\w.\-%])|(?<=%[0-9A-Fa-f]{2})|(?<=%25[0-9A-Fa-f]{2}))"
    r"(?P<name>[A-Za-z_][\w.\-]*)%(?:25)?3[Dd]"
    r"""(?P<value>(?:[^\s%&"'<>]|%(?!(?:25)?(?:26|3[DdFf]|23))[0-9A-Fa-f]{2})+)"""
)
# user info percent-encoded, as a URL inside another's query carries it
# (`?next=https%3A%2F%2Fme%3AV%40host`, twice encoded too): the password goes, the user stays
_ENCODED_USERINFO = re.compile(
    r"%(?:25)?2[Ff]%(?:25)?2[Ff](?P<name>[^\s%/?#&@:\"'<>]+)%(?:25)?3[Aa]"
    r"(?P<value>(?:[^\s%&/?#@\"'<>]|%(?!(?:25)?(?:40|2[Ff]|3[Ff]|23|26))[0-9A-Fa-f]{2})+)"
    r"(?=%(?:25)?40)"
)
# a key glued to its value by a colon, as an environment is printed (`HF_TOKEN:V`): a
# variable's name in capitals, two words or more, so an image's `auth_service:v2`, a type's
# `api_key:str` and a path's `a/b:c` are no such pair
_GLUED_VALUE = rf"""(?P<value>{_STRING}|[^\s"'`,;:{{}}\[\]()@]+)(?![\w:/\[(])"""
_GLUED = re.compile(r"(?<![\w.\-/:@$%])(?P<name>[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+):" + _GLUED_VALUE)
# and in snake case (`hf_token:V`), where only a credential's mix of characters is a value
_GLUED_LOWER = re.compile(
    r"(?<![\w.\-/:@$%])(?P<name>[a-z][a-z0-9]*(?:_[a-z0-9]+)+):" + _GLUED_VALUE
)
# a key and its value a tab apart, as a table has them (`HF_TOKEN<TAB>V`)
_TABBED = re.compile(
    rf"""(?<![^\s])(?P<name>[A-Za-z_][\w.\-]*)[ ]*\t[ \t]*(?P<value>{_STRING}|[^\s`]+)"""
)
# a hash's pair, Ruby's, Perl's or PHP's (`api_key => V`, `:api_key => "V"`, `'pass' => 'V'`):
# a bare value that a `[` or `(` follows is code (`ENV['X']`), not the secret
_ARROW = re.compile(
    r"""(?<![\w.\-$]):?(?P<q>["']?)(?P<name>[A-Za-z_][\w.\-]*)(?P=q)[ \t]*=>[ \t]*"""
    rf"""(?P<value>{_STRING}|[^\s"'`,;{{}}\[\]()]+(?![^\s"'`,;{{}}\])]))"""
)
# a key said in a sentence (`my hub_token is V`, `the API key was V.`, `my token is: V`): the
# value one word,
# a sentence's mark after it kept
_SAID = re.compile(
    r"(?<![\w.\-$])(?P<name>(?:[Aa]pi|API|[Aa]ccess|ACCESS|[Ss]ecret|SECRET|[Pp]rivate|PRIVATE)"
    r" (?:[Kk]ey|KEY|[Tt]oken|TOKEN)|[A-Za-z_][\w.\-]*)[ \t]+(?:is|was):?[ \t]+"
    rf"(?P<value>{_STRING}|[^\s`]*[^\s.,;:!?)\]}}`])"
)
# a variable set by a shell's or a file's own word, its name and its value a space apart:
# csh's `setenv K V`, fish's `set -x K V` (`-gx`, `--export`), a Dockerfile's `ENV K V`,
# `aws configure set K V`, `git config --global K V`
_SET = re.compile(
    r"(?<![\w.\-$])(?:setenv|ENV|set(?:[ \t]+-{1,2}[A-Za-z]+)+"
    r"|config(?:ure)?(?:[ \t]+(?:set|-{1,2}[A-Za-z][\w\-]*))*)"
    rf"[ \t]+(?P<name>[A-Za-z_][\w.\-]*)[ \t]+(?P<value>{_STRING}|[^\s`;|&]+)"
)
# a variable bound by make (`K := V`, `K ?= V`, `K ::= V`), R (`k <- V`) or PowerShell
# (`$env:K = V`); a bare value that a `(` or `[` follows is code (`Sys.getenv("K")`), and
# `$(shell ...)`, `${K}` and `$K` read the value from elsewhere
_BOUND = re.compile(
    r"(?<![\w.\-$:])(?P<ps>\$(?i:env):)?(?P<name>[A-Za-z_][\w.]*)[ \t]*"
    r"(?(ps)=(?!=)|(?::{1,2}=|\?=|<-))[ \t]*"
    rf"""(?P<value>{_STRING}|\$\{{?\w+\}}?|[^\s"'`,;{{}}\[\]()$]+(?![^\s"'`,;\]}})]))"""
)
_GAP = re.compile(r"(?:\s|\\(?:\n|\Z))*")  # what stands between two words
_SPACE = re.compile(r"\s")
_DEEPEST = 4  # quotes inside quotes read so deep; deeper, token shapes alone are masked
# what any rule needs to see in a text (lower-cased): a text with none of it is shown as it
# is, at once
_CLUES = (
    "secret", "pass", "cred", "key", "hook", "cookie", "auth", "token", "pwd", "_pat", "-pat",
    ".pat", "dsn", "database", "bearer", "://", "curl", *_TOKEN_CLUES,
)  # fmt: skip
_CLUE = re.compile("|".join(map(re.escape, _CLUES)))
# programs whose own short flag takes a password, as `-p` does for mysql's
_PASSWORD_FLAGS = {
    "redis-cli": "-a", "valkey-cli": "-a", "keydb-cli": "-a", "ldapsearch": "-w",
    "ldapmodify": "-w", "ldapadd": "-w", "ldapdelete": "-w", "ldapwhoami": "-w", "zip": "-P",
    "unzip": "-P",
}  # fmt: skip
_SHORT_PASSWORD_FLAGS = frozenset({"-p", *_PASSWORD_FLAGS.values()})
_SHORT_LETTERS = "".join(sorted(flag[1] for flag in _SHORT_PASSWORD_FLAGS))
_SHORT_P = re.compile(rf"(?:^|[\s\"'(;&|`])-[{_SHORT_LETTERS}]")  # -p, -pV, -a: a word of its own


def _maybe(text: str) -> bool:
    """Whether `text` may hold a credential at all (a cheap look before the rules').

    Every secret name holds a clue (but a camel-case ...Pat, whose PAT is not seen), and so
    does every token shape, URL and short -p."""
    return (
        _CLUE.search(text.lower()) is not None
        or _HEX_RUN.search(text) is not None
        or ("-" in text and _SHORT_P.search(text) is not None)
        or ("@" in text and _USERINFO.search(text) is not None)
        or (":" in text and _TELEGRAM.search(text) is not None)
    )


_ASSIGN = re.compile(
    r"^(?P<pre>(?:[A-Za-z_][\w.]*\()?[(;&|{`]*)"
    r"(?P<name>-{1,2}[A-Za-z][\w.\-]*|[+~$]{0,2}(?:[A-Za-z_][\w.\-]*/)*[A-Za-z_][\w.\-]*)="
    r"(?P<value>.*)$",
    re.S,
)
_FLAG = re.compile(r"^-{1,2}[A-Za-z][\w.\-]*$")
_NAME_COLON = re.compile(r"""^["']?(?P<name>[A-Za-z_][\w.\-]*)["']?:$""")  # api_key": too
_PUNCT_END = re.compile(r"[;,&|)}\]]+$")
_PREFIXES = frozenset({"env", "exec", "command", "sudo", "nohup", "time", "!", "if", "while"})
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest"})
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.\-]*$")
# a flag as an element of a printed list: `["--hub_token",`, `'--hub_token',`
_LISTED_FLAG = re.compile(r"""^[\[(]*(?P<q>\\?["'])(?P<flag>-{1,2}[A-Za-z][\w.\-]*)(?P=q),?$""")
_FLAG_COLON = re.compile(r"^(?P<flag>-{1,2}[A-Za-z][\w.\-]*):(?P<value>.+)$", re.S)
_CURL_USER = frozenset({"-u", "--user", "-U", "--proxy-user"})  # curl's user:password
_NETRC = frozenset({"machine", "default"})  # a .netrc line: machine H login U password V
_P_ATTACHED = frozenset(
    {"mysql", "mysqldump", "mysqladmin", "mariadb", "docker login", "podman login"}
)
_LOGINS = frozenset({"docker", "podman", "nerdctl", "buildah", "skopeo"})  # `X login -p V`
# programs whose -p takes no password (mkdir -p, ssh -p PORT, docker run -p PORTS)
_P_NOT_PASSWORD = frozenset(
    {
        "mkdir", "cp", "mv", "tar", "ssh", "scp", "sftp", "docker", "podman", "nc", "ncat",
        "rsync", "ls", "ps", "pgrep", "pkill", "install", "git", "pip", "uv", "conda", "psql",
        "redis-cli", "kubectl", "helm", "nvidia-smi", "torchrun", "xargs", "sort", "patch",
        "read", "pytest", "sbatch", "srun", "salloc", "squeue", "ulimit", "declare", "local",
        "export", "typeset", "readonly", "pushd", "popd", "bash", "sh", "zsh", "timeout",
    }
)  # fmt: skip


def _password_flag(flag: str, program: str) -> bool:
    """Whether a short flag takes a password, its program in view.

    A `-p` does where its program takes nothing else there (not `mkdir -p`, `ssh -p PORT`),
    and a program's own flag does (`redis-cli -a V`, `ldapsearch -w V`)."""
    return (flag == "-p" and program not in _P_NOT_PASSWORD) or _PASSWORD_FLAGS.get(program) == flag


_QUOTES = re.compile("[\"']")
_BREAK = re.compile(r"(\s*\\?\n\s*)")  # a line's end inside a word (a quoted run), spaces kept


def _hidden(word: str) -> str:
    """A value word as *** (its quotes and a trailing `;`/`,`/`)` kept).

    A word across lines (a quoted run with a line's end in it) keeps them: *** on each."""
    end = _PUNCT_END.search(word)
    tail = end[0] if end else ""
    lead, core, trail = _quotes_kept(word[: len(word) - len(tail)])
    if "\n" not in core:
        return f"{lead}{MASK}{trail}{tail}"
    shown = "".join(p if i % 2 or not p else MASK for i, p in enumerate(_BREAK.split(core)))
    return f"{lead}{shown}{trail}{tail}"


def _quotes_kept(core: str) -> tuple[str, str, str]:
    """A value's quotes that stay where they stand when it is hidden: (lead, inside, trail).

    Both of a quoted run's, or the word's one quote at its start or end (`"V`, `V'`, a word
    as prose reads it), which opens or closes no run here: kept, the text's quotes pair as
    they did."""
    if len(core) >= 2 and core[0] == core[-1] and core[0] in "\"'":
        return core[0], core[1:-1], core[-1]
    if len(_QUOTES.findall(core)) == 1 and "\\" not in core and core[0] != core[-1]:
        lead = core[0] if core[0] in "\"'" else ""
        trail = core[-1] if core[-1] in "\"'" else ""
        return lead, core[len(lead) : len(core) - len(trail)], trail
    return "", core, ""


def _value(text: str, hashes: bool = False, depth: int = 0) -> str:
    """A value (one shell word, or its part after `=`), every credential in it masked."""
    text = _keyed(text)  # {"api_key":"V"} written with no space: one word; os.environ["K"]="V"
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" and depth < _DEEPEST:
        return text[0] + mask_line(text[1:-1], hashes, depth + 1) + text[0]
    if "=" in text and ("," in text or ";" in text or _LISTED_KEY.match(text) is not None):
        return _listed(text, hashes)  # a=1,b=2; Azure's K=V;AccountKey=V; --env=K=V
    return _tokens_masked(text, hashes)


# a key in a comma-separated list of pairs, as some trainers take (--opts user=bob,password=V),
# or a semicolon-separated one (an Azure connection string's AccountName=a;AccountKey=V)
_LISTED_KEY = re.compile(r"(?:^|(?<=[,;]))([A-Za-z_][\w.\-]*)=")


# where a secret's value ends in a connection string that it opens (`AccountKey=V;Account
# Name=a`): at the first `;` before another pair, outside a quoted run (`password="a;b=c"`
# is one value); a comma does not end it, a value may hold one
_PAIR_CUT = re.compile(rf"{_QUOTED}|;(?=[A-Za-z_][\w.\-]*=)", re.S)


def _pair_cut(value: str) -> int | None:
    """Where the pairs after a secret's value begin (its `;`), or None: it is all the value."""
    if ";" not in value:
        return None
    for m in _PAIR_CUT.finditer(value):
        if m[0] == ";":
            return m.start()
    return None


def _listed(text: str, hashes: bool) -> str:
    """A value that may list `k=v` pairs by commas: each secret-named key's value as ***.

    A pair's value runs to the next `,k=` (or `;k=`); all else is masked as any value is."""
    keys = list(_LISTED_KEY.finditer(text))
    if not keys:  # "=" and "," but no pair where a list's stands (tokenizer(x=1, y=2))
        return _tokens_masked(text, hashes)
    out: list[str] = []
    at = 0
    for key, after in zip(keys, [*keys[1:], None], strict=True):
        end = after.start() - 1 if after is not None else len(text)  # the comma or semicolon
        value = text[key.end() : end]
        plain = value.strip("\"'")
        if not secret_name(key[1]) or plain.lower() in _BOOLISH or plain == MASK:
            continue
        if _reference(plain):
            continue
        out += [_tokens_masked(text[at : key.end()], hashes), _hidden(value)]
        at = end
    out.append(_tokens_masked(text[at:], hashes))
    return "".join(out)


def _assigned(name: str, value: str) -> bool:
    """Whether a word's `name=value` sets a secret: the last part of its name names one.

    A lone `key` that is a folder of a path is no secret's name, as a sweep names its folders
    (`outputs/key=3/seed=1`, `key=3/seed=1`)."""
    last = name.rpartition("/")[2]
    return secret_name(last) and not (
        _words(last) == ["KEY"] and ("/" in name or _PATH_PAIR.search(value) is not None)
    )


_PATH_PAIR = re.compile(r"/[A-Za-z_][\w.\-]*=[^=]")  # a value that goes on as a path: 3/seed=1


def _base(word: str) -> str:
    """A program's name without its folder, quotes, or a printed list's marks (`['mysql',`)."""
    return word.lstrip("[(").rstrip(",)]").strip("\"'").rsplit("/", 1)[-1]


def _bare_flag(word: str) -> str:
    """A flag as written, less a printed list's marks and quotes: `'-p',` is `-p`."""
    return word.lstrip("(;&|{`[").rstrip(",").strip("\"'")


class _WordAt(NamedTuple):
    """One shell word and what is in view around it, as each written form reads it."""

    word: str
    prev: str  # the word before, as shown
    following: str  # the word after, as written
    program: str  # the program of the command the word stands in
    hashes: bool  # 40 hex digits here are a commit or a digest
    depth: int  # how deep in quotes inside quotes
    reader: re.Pattern[str]  # what split the text into words

    @property
    def bare(self) -> str:
        """The word without what opens a command or a group before it (`(`, `;`, `{`)."""
        return self.word.lstrip("(;&|{`")

    @property
    def lead(self) -> str:
        """What `bare` leaves off the word's start."""
        return self.word[: len(self.word) - len(self.bare)]


def _curl_user(at: _WordAt) -> tuple[str, bool] | None:
    """curl's user and password, `curl -u me:V`, `--user=me:V`: the password as ***."""
    if at.program != "curl" or ":" not in at.word:
        return None
    if at.prev not in _CURL_USER and not at.word.startswith("--user="):
        return None
    head, _, value = at.word.partition(":")
    return (f"{head}:{_hidden(value)}", False) if value and value != MASK else None


def _no_clue(at: _WordAt) -> tuple[str, bool] | None:
    """A word that holds nothing any rule looks for, as it is."""
    return None if _maybe(at.word) else (at.word, False)


def _line_in_word(at: _WordAt) -> tuple[str, bool] | None:
    """An argv element that is a command line of its own (`bash -c "K=V cmd"`), as a line."""
    if _SPACE.search(at.word) is None or len(at.reader.findall(at.word)) <= 1:
        return None
    return mask_line(at.word, at.hashes, at.depth + 1), False


def _unclosed_quote(at: _WordAt) -> tuple[str, bool] | None:
    """A word after a quote that never closes (`"password=V`, `'Bearer V`), as read without it."""
    if at.word[0] not in "\"'" or _CLOSED.match(at.word) is not None:
        return None
    shown, hide = _word(at._replace(word=at.word[1:]))
    return at.word[0] + shown, hide


def _assignment(at: _WordAt) -> tuple[str, bool] | None:
    """`NAME=V`, `--flag=V`, `a.b.key=V`: a secret's value as ***, any other value masked.

    A secret's value that opens a connection string (`AccountKey=V;AccountName=a`) is ***
    up to the next pair; the pairs after it are read as a list."""
    if "=" not in at.word or (m := _ASSIGN.match(at.word)) is None:
        return None
    name, value = m["name"], m["value"]
    plain = _PUNCT_END.sub("", value).strip("\"'")  # f(use_auth=True, ...) too
    if not _assigned(name, value) or plain.lower() in _BOOLISH:
        return f"{m['pre']}{name}={_value(value, at.hashes or _hashy(name), at.depth)}", False
    if (cut := _pair_cut(value)) is None:  # a/b/api_key=V
        return f"{m['pre']}{name}={_hidden(value)}", False
    head, rest = value[:cut], value[cut:]  # AccountKey=V;AccountName=a;...
    shown = head if head.strip("\"'").lower() in _BOOLISH else _hidden(head)
    return f"{m['pre']}{name}={shown}{_listed(rest, at.hashes)}", False


def _listed_flag(at: _WordAt) -> bool:
    """`["--hub_token", "V"]`, `['mysql', '-p', 'V']`: a flag of an argv printed as a list."""
    listed = _LISTED_FLAG.match(at.word)
    return listed is not None and (
        secret_name(listed["flag"]) or _password_flag(listed["flag"], at.program)
    )


def _secret_flag(at: _WordAt) -> bool:
    """`--api-key V`: a secret-named flag."""
    return _FLAG.match(at.bare) is not None and secret_name(at.bare)


def _program_password_flag(at: _WordAt) -> bool:
    """`sshpass -p V`, `redis-cli -a V`: a program's own password flag."""
    return _password_flag(at.bare, at.program)


def _secret_key_colon(at: _WordAt) -> bool:
    """`"api_key": V`, `Authorization: V`: a secret-named key and its colon."""
    named = _NAME_COLON.match(at.bare) if at.bare.endswith(":") else None
    return named is not None and secret_name(named["name"])


def _bearer(at: _WordAt) -> bool:
    """`Authorization: Bearer V`."""
    return at.bare.lower() == "bearer"


def _netrc_password(at: _WordAt) -> bool:
    """`machine H login U password V`: a .netrc entry's password on one line."""
    return at.program in _NETRC and at.bare in ("password", "passwd")


def _said_password(at: _WordAt) -> bool:
    """`password hunter2`: a password said after its word (`_spoken_password`)."""
    return at.bare.lower() in _PASSWORD_WORDS and _spoken_password(at.following)


def _secret_key_spaced(at: _WordAt) -> bool:
    """`api_key = V`, `api_key : V`: a secret-named key, its `=` or `:` a word of its own."""
    spaced = at.following in ("=", ":") and _IDENTIFIER.match(at.bare) is not None
    return spaced and secret_name(at.bare)


# what says the word after it is a secret's value (no two of them read the same word)
_BEFORE_VALUE: tuple[Callable[[_WordAt], bool], ...] = (
    _listed_flag,
    _secret_flag,
    _program_password_flag,
    _secret_key_colon,
    _bearer,
    _netrc_password,
    _said_password,
    _secret_key_spaced,
)


def _before_value(at: _WordAt) -> tuple[str, bool] | None:
    """A word that says the next is a secret's value (`_BEFORE_VALUE`), as it is."""
    return (at.word, True) if any(says(at) for says in _BEFORE_VALUE) else None


def _secret_flag_colon(at: _WordAt) -> tuple[str, bool] | None:
    """`--password:V`: a secret-named flag glued to its value by a colon."""
    m = _FLAG_COLON.match(at.bare)
    if m is None or not secret_name(m["flag"]):
        return None
    return f"{at.lead}{m['flag']}:{_hidden(m['value'])}", False


def _attached_password(at: _WordAt) -> tuple[str, bool] | None:
    """`mysql -pV`: a password glued to its program's `-p`."""
    bare = at.bare
    if not bare.startswith("-p") or not bare[2:].strip("\"'") or at.program not in _P_ATTACHED:
        return None
    return f"{at.lead}-p{_hidden(bare[2:])}", False


def _password_colon(at: _WordAt) -> tuple[str, bool] | None:
    """`password:V`: a password glued to its word by a colon, where V grants something."""
    said = _PASSWORD_COLON.match(at.bare)
    if said is None or not _granting(said["value"]):
        return None
    return f"{at.lead}{said['name']}:{_hidden(said['value'])}", False


# each form a word may take, in the order they are tried: the first that reads it shows it
_WORD_FORMS: tuple[Callable[[_WordAt], tuple[str, bool] | None], ...] = (
    _curl_user,
    _no_clue,
    _line_in_word,
    _unclosed_quote,
    _assignment,
    _before_value,
    _secret_flag_colon,
    _attached_password,
    _password_colon,
)


def _word(at: _WordAt) -> tuple[str, bool]:
    """One shell word as shown, and whether the word after it is a secret's value.

    The first of `_WORD_FORMS` that reads the word shows it; a word none reads is a value,
    its tokens masked (40 hex digits kept after a commit's or a revision's name).
    `at.reader` split the text into words: a word that it reads as one is no command line,
    even with spaces in it (`password='don't V'` as prose pairs its quotes)."""
    for form in _WORD_FORMS:
        if (shown := form(at)) is not None:
            return shown
    word, prev = at.word, at.prev
    hashes = at.hashes or (_HEX_RUN.search(word) is not None and _hashy(prev.strip("\"'(:=,")))
    return _value(word, hashes, at.depth), False


# a password said after its word and a space or a tab (`password hunter2`, `passwd V`), or
# glued to it by a colon (`password:V`); `password: V` is a key and its value (_NAME_COLON)
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase"})
_PASSWORD_COLON = re.compile(r"(?i)(?P<name>password|passwd|passphrase):(?P<value>[^:].*)", re.S)
# a word of a sentence: letters, lower case after the first (an apostrophe or a hyphen
# inside: `isn't`, `re-entered`), or all capitals (`OK`, `NOT`)
_PROSE = re.compile(r"[A-Za-z][a-z]*(?:['\u2019\-][a-z]+)*|[A-Z]+")
_SAID_END = re.compile(r"[.,;:!?)\]}]+$")


def _granting(value: str) -> bool:
    """Whether a secret's value grants something: not a boolean, *** or $REFERENCE."""
    plain = _PUNCT_END.sub("", value).strip("\"'")
    return plain.lower() not in _BOOLISH and plain != MASK and not _reference(plain)


def _spoken_password(word: str) -> bool:
    """Whether the word after a bare `password` (a space or a tab apart) is its value.

    It is unless it reads as the sentence going on: a word of prose (`password reset link
    sent`, `the password is wrong`, `Password incorrect,`), a number of one to three digits
    (`password 2 of 3`), a flag, a `(`, a boolean or a reference to the environment."""
    if not word or word[0] in "-(" or not _granting(word):
        return False
    plain = _SAID_END.sub("", word.strip("\"'")).strip("\"'")
    if not any(c.isalnum() for c in plain) or _PROSE.fullmatch(plain) is not None:
        return False
    return not (plain.isdigit() and len(plain) < _MIN_SECRET)


def _gap(word: str) -> bool:
    """Whether a word is spacing: blank, or a backslash-newline (a line's last backslash)."""
    return not word or word.isspace() or ("\\" in word and _GAP.fullmatch(word) is not None)


class _Command:
    """The command the words read so far stand in: its program, and whether one may start."""

    __slots__ = ("program", "starts")

    def __init__(self) -> None:
        self.program = ""
        self.starts = True

    def read(self, word: str, following: str) -> None:
        """Take one word (as written) into view: its program's name, or a command's end."""
        name = _base(word.lstrip("(;&|{`"))  # a printed list's `[` opens no program
        # `also redis-cli -a V` in a note names it too
        if (self.starts or name in _PASSWORD_FLAGS) and _program_named(name, word):
            self.program, self.starts = name, False
            if name in _LOGINS and _base(following) == "login":
                self.program = f"{name} login"  # its -p is a password
        if word[-1] in ";&|()" or word in ("then", "do", "else"):
            self.starts = True


def _program_named(name: str, word: str) -> bool:
    """Whether a word where a command starts names its program: not `env`, `sudo`, `K=V`."""
    return bool(name) and name not in _PREFIXES and not ("=" in word and _ASSIGN.match(word))


def _aws_secret_after_id(word: str, before: str) -> bool:
    """Whether a word is an AWS key's secret after its id (`before`): argv elements apart."""
    return (
        _AWS_SECRET_WORD.fullmatch(word) is not None and _AWS_ID_WORD.fullmatch(before) is not None
    )


def _no_secret_value(word: str, plain: str, prev: str) -> bool:
    """Whether a word where a secret's value stands grants nothing (`plain`: its text).

    Another flag (`psql --password -h db`), a boolean, ***, a reference to the environment,
    or a number, a port or a path after a `-p` (`python train.py -p 0.5`)."""
    return (
        word.startswith("--")
        or plain.lower() in _BOOLISH
        or plain == MASK
        or _reference(plain)
        or _SHORT_FLAG.fullmatch(plain) is not None
        or (_bare_flag(prev) == "-p" and _NOT_A_PASSWORD.fullmatch(plain) is not None)
    )


def _secret_value(at: _WordAt) -> tuple[str, bool]:
    """A word where a secret's value stands as shown, and whether the value is still to come.

    An `=`, a `:` or an auth scheme stands before the value (`api_key = V`, `Authorization:
    Bearer V`); a word that grants nothing (`_no_secret_value`) is read as any word is;
    anything else is the value, ***."""
    word = at.word
    closed = len(word) >= 2 and word[0] == word[-1] and word[0] in "\"'"
    plain = word.strip("\"'")
    if not closed:  # `true,` and `null}` of JSON grant nothing either
        plain = _PUNCT_END.sub("", plain).strip("\"'[")  # and [***] of a list
    if word in ("=", ":") or plain.lower() in _AUTH_SCHEMES:
        # the value is the word after, unless this one closes a quoted run (`Bearer"` as
        # prose reads it)
        return word, closed or word[-1] not in "\"'"
    if _no_secret_value(word, plain, at.prev):
        return _word(at)
    return _hidden(word), False


def _mask_words(
    words: Sequence[str], hashes: bool = False, depth: int = 0, reader: re.Pattern[str] = _WORD
) -> list[str]:
    """The one state machine behind `mask_argv` and `mask_line`.

    Each word is read as a word (`_word`) or, after one that says so, as a secret's value
    (`_secret_value`), with its command's program in view (`_Command`). Blank words (a
    line's spacing) are kept; `hashes`: 40 hex digits here are a commit."""
    solid = [i for i, w in enumerate(words) if not _gap(w)]
    following = {a: words[b] for a, b in zip(solid, solid[1:], strict=False)}
    before = {b: words[a] for a, b in zip(solid, solid[1:], strict=False)}  # as written
    out = list(words)
    hide = False  # this word is the value of a secret-named flag or key before it
    command, prev = _Command(), ""
    for i in solid:
        word = words[i]
        at = _WordAt(word, prev, following.get(i, ""), command.program, hashes, depth, reader)
        hide = hide or _aws_secret_after_id(word, before.get(i, ""))
        out[i], hide = _secret_value(at) if hide else _word(at)
        command.read(word, at.following)
        prev = out[i]  # as shown: a hidden word gives no context to the next
    return out


_REFERENCE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")  # $HF_TOKEN, ${HF_TOKEN}
# what a short -p's value is when it is a program's own (python train.py -p 0.5, -p 8080:80,
# -p ./out): a number, a port mapping or a path is never a password
_NOT_A_PASSWORD = re.compile(r"[-+]?[0-9][0-9.eE+:/-]*|\.{0,2}/[^\s]*")
# a short option after a -p or a --password that takes no value (mysql -p -h db, psql
# --password -h db): the next option, not a password
_SHORT_FLAG = re.compile(r"-[A-Za-z]")


def _reference(word: str) -> bool:
    """Whether a secret's value is a reference to the environment, not the secret itself."""
    return _REFERENCE.fullmatch(word) is not None


def mask_argv(words: Sequence[str]) -> list[str]:
    """An argv with every credential in it masked; the same length, each other word as it was.

    A secret-named `--flag=V`, `NAME=V` (`env K=V`, a Hydra `a.b.api_key=V`) keeps its name;
    after a secret-named `--flag` (or `-p`, or `Bearer`) the next word is hidden whole unless
    it is another `--flag` or a boolean; an element that is itself a command line
    (`bash -c "K=V cmd"`) is masked as a line; token-shaped values and URLs are masked where
    they stand. An element with spaces in it is read again as a line (`mask_line`), so its
    prose's apostrophes hide nothing either."""
    return [mask_line(w) if _SPACE.search(w) is not None else w for w in _mask_words(list(words))]


def mask_line(line: str, hashes: bool = False, depth: int = 0) -> str:
    """One line of text (a shell line, a stack line, an error) with every credential masked.

    It is split into shell words (quoted runs kept together), masked as an argv, and joined
    with its own spacing; that is read again as prose (`_prose`), so a token either reading
    finds is masked."""
    if not line or line.isspace():
        return line
    if "-----BEGIN" in line:
        line = _pem_masked(line)
    if "machine" in line or "default" in line:
        line = _netrc_masked(line)
    line = _aws_masked(line)  # an AWS key's id and secret, words apart
    if not _maybe(line):
        return line
    if depth > _DEEPEST:
        return _tokens_masked(line, hashes)
    before, shown = line, _readings(line, hashes, depth)
    for _ in range(_DEEPEST):  # a value hidden with a quote in it (`--token it's`) or the
        # context of another (`--revision`): the line is read again until it holds, so that
        # masking a masked line changes nothing
        if shown == before:
            break
        before, shown = shown, _readings(shown, hashes, depth)
    return shown


def _readings(line: str, hashes: bool, depth: int) -> str:
    """`line` masked by each reading in turn, the widest first.

    Its keyed pairs, its quoted runs as prose pairs them (`'don't V'` one word, hidden
    whole), as the shell reads it, and as prose reads it (`_prose`). Each one hides only what
    it finds, so the next still sees the rest; a run hidden whole keeps its quotes, so the
    next pairs the rest as written."""
    line = _keyed(line)  # first: a list or a value with an apostrophe in it is hidden whole
    if _INNER_QUOTE.search(line) is not None:  # else the paired runs are the shell's
        line = _read(line, _PAIRED_WORD, hashes, depth)
    return _prose(_read(line, _WORD, hashes, depth), hashes, depth)


def _read(line: str, reader: re.Pattern[str], hashes: bool, depth: int) -> str:
    """`line` split into words by `reader`, masked as an argv, joined with its own spacing."""
    words: list[str] = []
    at = 0
    for m in reader.finditer(line):
        words += [line[at : m.start()], m[0]]
        at = m.end()
    words.append(line[at:])
    return "".join(_mask_words(words, hashes, depth, reader))


def _prose(text: str, hashes: bool, depth: int) -> str:
    """`text` (masked as the shell reads it) masked as prose reads it, and its keyed pairs.

    Every quote is a character, so words split on spaces alone: two apostrophes that the shell
    reads as one quoted run (`don't share password=V, it's`) hide no word between them. What
    the shell's reading masked reads as *** here and stays so; nothing else changes."""
    text = _keyed(text)  # first: a quoted value with spaces in it is hidden whole
    if "'" in text or '"' in text or "\\" in text:  # else the two readings split alike
        # 40 hex digits were judged by the shell's reading, with their context (`--revision
        # "..." HEX`, a commit inside a quoted run): this one keeps them
        text = _read(text, _PROSE_WORD, True, depth)
    return text


def _keyed(text: str) -> str:
    """`text`'s keyed pairs in each written form (`_KEYED_FORMS`): a secret's value as ***."""
    low = text.lower()
    for clues, form, named, grants in _KEYED_FORMS:
        if any(clue in low for clue in clues):
            text = form.sub(functools.partial(_keyed_pair, named=named, grants=grants), text)
    return text


def _keyed_pair(
    m: re.Match[str], named: Callable[[str], bool], grants: Callable[[str], bool]
) -> str:
    """One keyed pair as shown: its value *** where the key and the value say a secret.

    `named` judges the key, `grants` each value; a string or a list keeps its quotes."""
    value = m["value"]
    if not named(m["name"]):
        return m[0]
    head = m[0][: m.start("value") - m.start()]
    if value.startswith('\\"'):  # an escaped string: \"V\"
        return head + f'\\"{MASK}\\"' if grants(value[2:-2]) else m[0]
    if not any(grants(item) for item in _value_items(value)):
        return m[0]
    quoted = value[0] in "\"'["  # a string, or a list: [***]
    return head + (f"{value[0]}{MASK}{value[-1]}" if quoted else MASK)


def _value_items(value: str) -> list[str]:
    """What a keyed pair's value holds: a list's items unquoted, a string's text, a word."""
    if value[0] == "[":
        return [item.strip(" \t\"'") for item in value[1:-1].split(",")]
    return [value[1:-1] if value[0] in "\"'" else value]


def _named_in_text(name: str) -> bool:
    """Whether a key written in text (glued, a tab apart, arrowed, said) names a secret.

    Not a lone `key`, `pass` or `auth`, words of prose (`AUTH => FAILED`), nor a setting's
    name (`AUTH_MODE:OAuth2`, `SECRET_SCAN:Enabled`, `AUTH_TYPE => Bearer`)."""
    words = _words(name)
    return secret_name(name) and words not in _LONE and words[-1] not in _SETTING_WORDS


_LONE = (["KEY"], ["PASS"], ["AUTH"])  # secret names as a flag or a URL's key; words in text


def _named_in_code(name: str) -> bool:
    """Whether a key that a program's code sets names a secret.

    A lone `key` is a dict's or a sample's (`d['key'] = 'ModelV2'`, WebDataset's
    `sample["__key__"] = "000123"`)."""
    return secret_name(name) and _words(name) != ["KEY"]


def _encoded_secret(name: str) -> bool:
    """Whether a percent-encoded pair's key names a secret, as a URL's query key does.

    A lone `key`, `pass` or `auth` is a search's word there (`?q=pass%3Dfail+rate`,
    `?next=%2Fsearch%3Fkey%3DLearningRate`)."""
    return _query_secret(name) and _words(name) not in _LONE


# a setting's name says how a secret is used, not what it is: AUTH_MODE, SECRET_SCAN
_SETTING_WORDS = frozenset(
    {"MODE", "TYPE", "SCAN", "METHOD", "SCHEME", "PROVIDER", "BACKEND", "KIND", "LEVEL", "ENABLED"}
)


def _glued_value(value: str) -> bool:
    """Whether a value glued to its key by a colon grants one: not a type (`HF_TOKEN:str`)."""
    return _granting(value) and value.strip("\"'").lower() not in _TYPE_NAMES


def _mixed(value: str) -> bool:
    """Whether a value has a credential's mix of characters (`Zr8Xy7Wv6Ut5`).

    That is 12 or more, a digit, a capital and a small letter among them; an image's tag
    (`v2`, `1.2.3-alpine`) and a type (`str`) have not."""
    return _MIXED.fullmatch(_SAID_END.sub("", value.strip("\"'"))) is not None


_MIXED = re.compile(r"(?=\S*\d)(?=\S*[A-Z])(?=\S*[a-z])[\w\-+/=]{12,}")
_TYPE_NAMES = frozenset(
    {"str", "string", "int", "float", "bool", "bytes", "any", "path", "secretstr", "object"}
)


def _said_value(word: str) -> bool:
    """Whether the word after a key said in a sentence or a table is its value.

    It is as a password's is (`_spoken_password`), and it holds a digit or a capital after
    its first character, as a credential does: `eos_token`, `<pad>`, `user_id` are words.
    A variable's name in capitals is where the value is kept, not the value
    (`the API key is WANDB_API_KEY`)."""
    plain = _SAID_END.sub("", word.strip("\"'")).strip("\"'")
    return (
        _spoken_password(word)
        and any(c.isdigit() or c.isupper() for c in plain[1:])
        and _VARIABLE.fullmatch(plain) is None
    )


def _said_token(word: str) -> bool:
    """Whether the word after a key other than a password's, said in text, is its value.

    It is as `_said_value` says, unless it is a number, alone or with a unit (a token's id,
    `the eos token is 128001`; a size, `the cookie was 4KB`), or a word with a number after
    it (`the access token was Expired2`): a password may be a number, a token is not."""
    plain = _SAID_END.sub("", word.strip("\"'")).strip("\"'")
    return _said_value(word) and _NOT_A_TOKEN.fullmatch(plain) is None


def _password_named(name: str) -> bool:
    """Whether a key said in text is a password's (`DB_PASSWORD`, `passphrase`, `db_pwd`)."""
    return _named_in_text(name) and any(w.startswith("PASS") or w == "PWD" for w in _words(name))


# a variable's name in capitals, two words or more (WANDB_API_KEY, SECRET_KEY_BASE)
_VARIABLE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
# a number, alone or with a unit of up to 3 letters (50256, 4KB, 1.5e-3, 12ms, 90%), or a
# word with a number after it (Expired2, llama3)
_NOT_A_TOKEN = re.compile(
    r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?:[A-Za-z]{1,3}|%)?|[A-Za-z][a-z]+\d{1,4}"
)


def _any_user(name: str) -> bool:
    """Whether a URL's user holds a password after it: any user does (`me:V@host`)."""
    return True


# each written form of a key and its value, read over a whole text: (clues, one of which the
# lower-cased text must hold, the form, whether the key names a secret, whether the value
# grants one)
_KEYED_FORMS: tuple[
    tuple[tuple[str, ...], re.Pattern[str], Callable[[str], bool], Callable[[str], bool]], ...
] = (
    ((":",), _KEYED, secret_name, _granting),  # "api_key": "V", {'password':'V'}
    (("[",), _SUBSCRIPT, _named_in_code, _granting),  # os.environ["HF_TOKEN"] = "V"
    (("default(", "env(", "item("), _SET_CALL, _named_in_code, _granting),  # putenv("K", "V")
    (("%",), _ENCODED, _encoded_secret, _granting),  # ?next=%3Ftoken%3DV
    (("%40", "%2540"), _ENCODED_USERINFO, _any_user, _granting),  # ?next=https%3A%2F%2Fme%3AV%40h
    ((":",), _GLUED, _named_in_text, _glued_value),  # HF_TOKEN:V
    ((":",), _GLUED_LOWER, _named_in_text, _mixed),  # hf_token:V
    (("=>",), _ARROW, _named_in_text, _granting),  # api_key => V
    (("\t",), _TABBED, _password_named, _said_value),  # DB_PASSWORD<TAB>12345678
    (("\t",), _TABBED, _named_in_text, _said_token),  # HF_TOKEN<TAB>V
    (("setenv", "set ", "env ", "config"), _SET, secret_name, _said_value),  # setenv K V
    ((":=", "?=", "<-", "$env:"), _BOUND, secret_name, _said_value),  # K := V, $env:K = "V"
    ((" is", " was"), _SAID, _password_named, _said_value),  # the password was 12345678
    ((" is", " was"), _SAID, _named_in_text, _said_token),  # my hub_token is V
)


def mask_text(text: str, hashes: bool = False) -> str:
    """A text of any number of lines, each masked (`mask_line`); as many lines back.

    A line that ends in a backslash is read with the next, as the shell reads it (the value
    of `--hub_token \\` is on the next line). `hashes`: 40 hex digits are a commit or a
    digest here (a value under a `commit` key).

    A line that ends in a secret-named flag or a `-p` is read with the next too: the value is
    its first word. Lines of one word each (an argv printed a word a line, or a list an
    element a line) are read as one command line, so a `-p`'s program is in view. A
    `.netrc` entry is read across lines, as the file is (`_netrc_masked`). A private key's
    body is *** whole."""
    if "-----BEGIN" in text:
        text = _pem_masked(text)
    if "machine" in text or "default" in text:
        text = _netrc_masked(text)
    lines = text.split("\n")
    out: list[str] = []
    run: list[str] = []  # the lines of one shell line
    for i, line in enumerate(lines):
        run.append(line)
        if i + 1 < len(lines) and (
            (len(line) - len(line.rstrip("\\"))) % 2 == 1
            or _flag_at_end(line)
            or (_one_word(line) and _one_word(lines[i + 1]))
        ):
            continue
        out.append(mask_line("\n".join(run), hashes))
        run = []
    return "\n".join(out)


def recordable(text: str, what: str) -> str:
    """`text`, to be recorded as typed; InputError naming `what` when it holds a credential.

    A reason, a note or an amendment's text is kept word for word (a hash-chained trail, a
    bank document) and every later reader shows it: masked, the record would say what was
    not typed; kept, it would show the credential. So it is refused in one line, and nothing
    is written. The line says where each credential stands and under what name
    (`_found_in`), never the text: a credential of a form the masker does not know would
    show in it whole."""
    shown = mask_text(text)
    if shown == text:
        return text
    raise InputError(
        f"{what}: not recorded: it holds what looks like a credential "
        f"({_found_in(text, shown)}); it would be kept and shown as typed: say it without "
        "the secret (docs/secrets.md)"
    )


_LISTED_MOST = 4  # places a refusal names; past them, how many more
# the name a hidden value was given under, just before it as masked: `HF_TOKEN=`,
# `"api_key": "`, `--hub_token `, `-p`, `api_key => `, `my hub_token is `
_NAME_BEFORE = re.compile(
    r"(?P<name>-{0,2}[A-Za-z_][\w.\-]*)\\?[\"'\]]*[ \t]*"
    r"(?:=>|:=|\?=|<-|%(?:25)?3[Dd]|[=:,\t ]|[ \t](?:is|was):?)?[ \t]*\\?[\"'\[]*$"
)
_IN_USERINFO = re.compile(r"://[^\s/@]*$")  # https://me:*** or https://***


def _found_in(text: str, shown: str) -> str:
    """Where `mask_text` hid something in `text` (`shown`): `word 1: a key named HF_TOKEN`.

    A hidden value is named by the secret-named key or flag just before it, or else by its
    shape; nothing of it, nor of the words around it, is quoted."""
    places: dict[int, str] = {}
    matcher = difflib.SequenceMatcher(None, text, shown, autojunk=False)
    for tag, i1, _, j1, _ in matcher.get_opcodes():
        if tag != "equal":
            word = _word_number(text[:i1])
            places.setdefault(word, f"word {word}: {_hidden_kind(shown, j1)}")
    listed = list(places.values())
    more = len(listed) - _LISTED_MOST
    return "; ".join(listed[:_LISTED_MOST]) + (f"; and {more} more" if more > 0 else "")


def _word_number(before: str) -> int:
    """The number of the word that starts or goes on where `before` ends, from 1."""
    return len(before.split()) + (0 if before and not before[-1].isspace() else 1)


def _hidden_kind(shown: str, at: int) -> str:
    """What was hidden at `at` in `shown`, as a refusal names it.

    The value of a flag or of a key (by its name just before it), a URL's user info, or else
    a value shaped like a token."""
    m = _NAME_BEFORE.search(shown[max(0, at - 80) : at])
    name = m["name"] if m is not None else ""
    flag = name.startswith("-") and (len(name) == 2 or secret_name(name))  # -p, --token
    if (flag or _query_secret(name)) and mask_text(name) == name:
        return f"the value of {name}" if flag else f"a key named {name}"
    if _IN_USERINFO.search(shown, max(0, at - 80), at) is not None:
        return "a URL's user info"
    return "a value shaped like a token"


def _one_word(line: str) -> bool:
    """Whether a line is one shell word, its quotes paired (`-p`, `'-p',`, `[`)."""
    word = line.strip()
    return (
        bool(word)
        and _WORD.fullmatch(word) is not None
        and word.count('"') % 2 == 0
        and word.count("'") % 2 == 0
    )


# a .netrc entry, its tokens apart by any spacing (the file writes one or a few a line):
# `machine HOST` or `default`, then a token and its value, again and again; a value may be
# quoted, spaces and all
_NETRC_VALUE = r""""(?:[^"\\\n]|\\.)*"|\S+"""
_NETRC_PAIR = re.compile(
    rf"\s+(?P<key>login|password|passwd|account|port|protocol)\s+(?P<value>{_NETRC_VALUE})"
)
_NETRC_ENTRY = re.compile(
    rf"""(?<![^\s"'(\[:;,])(?:machine\s+\S+|default)(?P<pairs>(?:{_NETRC_PAIR.pattern})+)"""
)
_NETRC_SECRETS = frozenset({"password", "passwd", "account"})  # account: a second password


def _netrc_masked(text: str) -> str:
    """`text` with each `.netrc` entry's password and account values as ***.

    An entry is one only if it names a login or a password (`machine learning account
    settings` is prose); its tokens may stand a line apart, as the file writes them."""

    def entry(m: re.Match[str]) -> str:
        pairs = list(_NETRC_PAIR.finditer(m["pairs"]))  # one after another, as matched
        if not any(p["key"] in ("login", "password", "passwd") for p in pairs):
            return m[0]
        text, at = m["pairs"], 0
        out = [m[0][: m.start("pairs") - m.start()]]
        for p in pairs:
            if p["key"] in _NETRC_SECRETS and p["value"].strip("\"'") != MASK:
                out += [text[at : p.start("value")], _hidden(p["value"])]
                at = p.end("value")
        out.append(text[at:])
        return "".join(out)

    return _NETRC_ENTRY.sub(entry, text)


# a private key's armour (PEM, OpenSSH): the body between BEGIN and END (or the text's end,
# where it was cut off) is the key
_PEM = re.compile(
    r"(?P<begin>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)(?P<body>(?:(?!-----END )[\s\S])*)"
)
# a line that ends in a flag (its value on the next line): `--hub_token`, `"--hub_token",`
_FLAG_AT_END = re.compile(r"""(?:^|[\s\[(])\\?["']?-{1,2}[A-Za-z][\w.\-]*\\?["']?,?[ \t]*$""", re.M)


def _flag_at_end(line: str) -> bool:
    """Whether `line`'s last word is a secret-named flag or a `-p` (`-a`): a value next line.

    The two lines are read together, with the line's program in view (`ssh -p` then `2222`
    is a port)."""
    m = _FLAG_AT_END.search(line)
    if m is None:
        return False
    flag = m[0].strip().lstrip("[(").rstrip(",").strip("\\\"'")
    return flag in _SHORT_PASSWORD_FLAGS or secret_name(flag)


def _pem_masked(text: str) -> str:
    """`text` with each private key's body as ***, its spacing at each end kept."""

    def one(m: re.Match[str]) -> str:
        body = m["body"]
        core = body.strip()
        if not core or core == MASK:
            return m[0]
        lead = body[: len(body) - len(body.lstrip())]
        trail = body[len(body.rstrip()) :]
        return f"{m['begin']}{lead}{MASK}{trail}"

    return _PEM.sub(one, text)


def mask_lines(lines: Sequence[str]) -> list[str]:
    """A text's lines (a launcher script's) masked as `mask_text` masks them, as many back.

    A line that a backslash continues is read with the next."""
    return mask_text("\n".join(lines)).split("\n") if lines else []


def env_secret(name: str, value: str) -> bool:
    """Whether an environment variable holds a credential: by its name, or by its value.

    40 hex digits under a commit's or revision's name (GIT_COMMIT) are not a key."""
    return secret_name(name) or mask_text(value, _hashy(name)) != value


# -- documents ------------------------------------------------------------------------------


def _walk(
    obj: object, path: str, key: str, found: list[str] | None
) -> object:  # the masked copy; each secret's path appended to `found`
    if isinstance(obj, Mapping):
        return {
            k: _walk(v, f"{path}.{k}" if path else str(k), str(k), found) for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return _walked_list(obj, path, key, found)
    if isinstance(obj, str):
        return _walked_string(obj, path, key, found)
    return obj


def _walked_list(
    items: list[object] | tuple[object, ...], path: str, key: str, found: list[str] | None
) -> list[object]:
    """A document's list masked: a list of strings as an argv, any other item by item."""
    if not items or not all(isinstance(v, str) for v in items):
        return [_walk(v, f"{path}[{i}]", key, found) for i, v in enumerate(items)]
    words = mask_argv([str(v) for v in items])
    if found is not None:
        found += [
            f"{path}[{i}]" for i, (a, b) in enumerate(zip(items, words, strict=True)) if a != b
        ]
    return list(words)


def _walked_string(text: str, path: str, key: str, found: list[str] | None) -> str:
    """A document's string under `key`, masked.

    A secret-named key's is *** whole where it grants anything; any other is masked as a
    text (a commit-named key's 40 hex digits kept)."""
    if secret_name(key) and text.lower() not in _BOOLISH and text != MASK:
        masked = MASK
    else:
        masked = mask_text(text, _hashy(key))
    if masked != text and found is not None:
        found.append(path)
    return masked


def mask_tree(doc: object) -> object:
    """A JSON-like document with every credential in it masked.

    A secret-named key's string is *** whole; every other string is masked as a text (a
    commit-named key's 40 hex digits kept); a list of strings is masked as an argv."""
    return _walk(doc, "", "", None)


def tree_secrets(doc: object) -> list[str]:
    """The dotted paths (`run.question`, `command.argv[3]`) of a document's credentials."""
    found: list[str] = []
    _walk(doc, "", "", found)
    return found


# -- a TOML file as written -----------------------------------------------------------------

# a multi-line string closes with 3 to 5 quotes, up to two of them its own (`"""a "b""""`):
# all of them are the string's, or the one or two left over would open a string that hides
# the comment after it
_TOML_OPAQUE = re.compile(
    r'"""(?:\\[\s\S]|[^\\])*?"{3,5}|\'\'\'[\s\S]*?\'{3,5}'
    r'|"(?:\\.|[^"\\\n])*"|\'[^\'\n]*\'|#[^\n]*'
)


def _toml_string(value: str) -> str:
    """A TOML basic string holding `value` (JSON's escapes, which TOML reads; DEL escaped)."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def mask_toml(text: str, doc: Mapping[str, object], known: Callable[[str], str | None]) -> str:
    """A TOML file's text with every credential masked by its parsed value, all else as written.

    `doc` is the text parsed. Each string literal is read as TOML reads it (escapes, line
    continuations), and one that holds a credential is written again as a one-line string with
    the credential masked: a secret-named key's value whole, a token where it stands, a
    known URL as `known(value)` shows it (a notification URL's redacted form; None for any
    other string). Comments are masked as text, token shapes in bare keys too; numbers, names
    and layout are kept. A text whose masked form still parses to a credential (a literal this
    reading did not find) raises ValueError: it is not shown."""
    shown: dict[str, str] = {}  # each string that holds a credential, as it is shown
    seen: set[str] = set()  # and the strings that hold none

    def collect(obj: object, key: str) -> None:
        if isinstance(obj, Mapping):
            for k, v in obj.items():
                collect(v, str(k))
        elif isinstance(obj, list):
            if obj and all(isinstance(v, str) for v in obj):
                for a, b in zip(obj, mask_argv(obj), strict=True):
                    if a != b:
                        shown[a] = b
            for v in obj:
                collect(v, key)
        elif isinstance(obj, str):
            redacted = known(obj)
            masked = str(_walk(obj, "", key, None))
            if redacted is not None:
                shown[obj] = redacted
            elif masked != obj:
                shown.setdefault(obj, masked)
            elif mask_text(obj) == obj:
                seen.add(obj)

    collect(doc, "")

    opaque = list(_TOML_OPAQUE.finditer(text))
    comments = _comments_masked(text, opaque)

    def literal(raw: str, start: int) -> str:
        if raw.startswith("#"):
            return "#" + comments[start]
        if raw[:3] not in ('"""', "'''") and (raw[0] == "'" or "\\" not in raw):
            value = raw[1:-1]  # a one-line string with no escape reads as written
        else:
            try:
                value = tomllib.loads(f"v = {raw}")["v"]
            except tomllib.TOMLDecodeError:
                return mask_line(raw)
        if value in shown:
            return _toml_string(shown[value])
        if value in seen:  # read and found clean while collecting
            return raw
        masked = mask_text(value)
        return _toml_string(masked) if masked != value else raw

    out: list[str] = []
    at = 0
    for m in opaque:
        out += [_tokens_masked(text[at : m.start()], True), literal(m[0], m.start())]
        at = m.end()
    out.append(_tokens_masked(text[at:], True))
    masked = "".join(out)
    if masked == text:  # the document holds no credential only if none was collected
        if shown:
            raise ValueError("a credential in it was not found where it is written")
        return masked
    try:  # what the masked text says, read as TOML reads it: it must hold no credential
        again = tomllib.loads(masked)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"masked, it is no longer TOML ({exc})") from None
    if tree_secrets(again) or _known_left(again, known):
        raise ValueError("a credential in it was not found where it is written")
    return masked


_NEXT_LINE = re.compile(r"[ \t]*\r?\n[ \t]*")


def _comments_masked(text: str, opaque: Sequence[re.Match[str]]) -> dict[int, str]:
    """Each comment's text after its `#`, masked, by where the comment starts.

    The comments on lines next to each other are masked as one text, as `mask_text` reads it:
    a `.netrc` entry or a printed argv written down a comment a line is read whole."""
    runs: list[list[re.Match[str]]] = []
    for m in opaque:
        if not m[0].startswith("#"):
            continue
        last = runs[-1][-1] if runs else None
        if last is not None and _NEXT_LINE.fullmatch(text, last.end(), m.start()) is not None:
            runs[-1].append(m)
        else:
            runs.append([m])
    out: dict[int, str] = {}
    for run in runs:
        shown = mask_text("\n".join(m[0][1:] for m in run)).split("\n")  # as many lines
        out.update((m.start(), b) for m, b in zip(run, shown, strict=True))
    return out


def _known_left(obj: object, known: Callable[[str], str | None]) -> bool:
    if isinstance(obj, Mapping):
        return any(_known_left(v, known) for v in obj.values())
    if isinstance(obj, list):
        return any(_known_left(v, known) for v in obj)
    return isinstance(obj, str) and (shown := known(obj)) is not None and shown != obj
