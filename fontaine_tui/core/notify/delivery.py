"""Delivery in the background: one daemon thread and one bounded queue per destination.

`Notifier.send` only appends to the queues (the oldest message is dropped, and counted, when
one is full), so the console, the follower or the run never waits on a webhook. Each worker
POSTs with urllib within a deadline over the whole request (a server that trickles its
answer a byte at a time has its connection shut when the deadline passes). It retries
connection errors, 5xx and 429 with exponential back-off (429's Retry-After seconds honoured,
capped). Each worker masks every credential in a message before it sends it (the destinations' URLs,
and whatever else the secrets policy, core/secrets.py, names). After the last try it records
a `Failure` (its reason redacted) and
calls `on_failure(label, reason)`.
`close(timeout)` lets the queues drain for at most `timeout` seconds.
"""

from __future__ import annotations

import collections
import http.client
import importlib
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime

from fontaine_tui.core.notify.destinations import Destination
from fontaine_tui.core.notify.payloads import APPRISE_TYPE, Message, request_body
from fontaine_tui.core.secrets import redact_text

USER_AGENT = "fontaine-tui-notify"
RESPONSE_CAP = 64 * 1024  # bytes of a response read (and thrown away)


@dataclass(frozen=True)
class Policy:
    timeout: float = 5.0  # seconds per request, the whole of it (connect, send, answer)
    tries: int = 4
    backoff: float = 0.5  # the first wait; doubled after each try (0.5, 1, 2)
    max_backoff: float = 4.0
    retry_after_cap: float = 60.0
    queue_size: int = 100  # per destination

    def wait(self, try_number: int) -> float:
        """Seconds before try `try_number + 1`."""
        return min(self.backoff * 2 ** (try_number - 1), self.max_backoff)


@dataclass(frozen=True)
class Failure:
    destination: str  # the redacted URL
    service: str
    title: str
    reason: str  # redacted
    tries: int
    time: float
    source: str = ""  # the destination's source ("PATH: notify[0]", "FONTAINE_NOTIFY")


@dataclass
class Stats:
    queued: int = 0
    delivered: int = 0
    failed: int = 0
    dropped: int = 0  # the oldest message, pushed out of a full queue


class _Retry(Exception):
    def __init__(self, reason: str, after: float | None = None) -> None:
        super().__init__(reason)
        self.after = after


class _GiveUp(Exception):
    pass


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A webhook that redirects is misconfigured: the POST is not replayed elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class _Deadline:
    """The sockets one request opened, shut when its time is up (a blocked read returns)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        self.expired = False

    def add(self, sock: socket.socket) -> None:
        with self.lock:
            self.sockets.append(sock)
            if self.expired:
                _shut(sock)

    def expire(self) -> None:
        with self.lock:
            self.expired = True
            for sock in self.sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


_CURRENT = threading.local()  # the _Deadline of the request this thread is making


def _watched(sock: socket.socket | None) -> None:
    deadline = getattr(_CURRENT, "deadline", None)
    if deadline is not None and sock is not None:
        deadline.add(sock)


class _HTTPConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _watched(self.sock)


class _HTTPSConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _watched(self.sock)


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_HTTPSConnection, req)  # the default context: verified


_OPENER = urllib.request.build_opener(_NoRedirect(), _HTTPHandler(), _HTTPSHandler())


def retry_after(value: str | None, cap: float) -> float | None:
    """Retry-After as seconds (a number, or an HTTP date), at most `cap`; None if absent."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    if seconds != seconds:  # NaN
        return None
    return max(0.0, min(seconds, cap))


def post(url: str, body: bytes, headers: dict[str, str], policy: Policy) -> None:
    """One POST, all of it within `policy.timeout` seconds.

    Returns on 2xx. Raises _Retry for a failure that may pass, _GiveUp for one that will not."""
    deadline = _Deadline()
    timer = threading.Timer(policy.timeout, deadline.expire)
    timer.daemon = True
    _CURRENT.deadline = deadline
    timer.start()
    try:
        _post(url, body, headers, policy)
    except (_Retry, _GiveUp):
        if deadline.expired:
            raise _Retry(_too_slow(policy)) from None
        raise
    finally:
        timer.cancel()
        _CURRENT.deadline = None
    if deadline.expired:  # a short answer read as whole after the shut: not trusted
        raise _Retry(_too_slow(policy))


def _too_slow(policy: Policy) -> str:
    return f"no answer within {policy.timeout:g} s (the whole request)"


def _post(url: str, body: bytes, headers: dict[str, str], policy: Policy) -> None:
    req = urllib.request.Request(
        url, data=body, method="POST", headers={"User-Agent": USER_AGENT, **headers}
    )
    try:
        with _OPENER.open(req, timeout=policy.timeout) as resp:
            resp.read(RESPONSE_CAP)
    except urllib.error.HTTPError as exc:
        status = f"HTTP {exc.code} {exc.reason}".rstrip()
        exc.close()
        if exc.code == 429:
            raise _Retry(
                status, retry_after(exc.headers.get("Retry-After"), policy.retry_after_cap)
            ) from None
        if exc.code >= 500:
            raise _Retry(status) from None
        raise _GiveUp(status) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise _Retry(f"no answer within {policy.timeout:g} s") from None
        raise _Retry(f"cannot connect: {reason}") from None
    except TimeoutError:
        raise _Retry(f"no answer within {policy.timeout:g} s") from None
    except (http.client.HTTPException, OSError) as exc:
        raise _Retry(f"connection failed: {type(exc).__name__}: {exc}") from None


def send_apprise(url: str, m: Message) -> None:
    lib = importlib.import_module("apprise")
    sender = lib.Apprise()
    if not sender.add(url):
        raise _GiveUp("apprise does not know this URL")
    ok = sender.notify(
        title=m.title, body=m.full_text or m.title, notify_type=APPRISE_TYPE[m.level]
    )
    if not ok:
        raise _Retry("apprise reported a failed delivery")


class _Lane:
    """One destination's queue and worker."""

    def __init__(self, dest: Destination, notifier: Notifier) -> None:
        self.dest = dest
        self.notifier = notifier
        self.queue: collections.deque[Message] = collections.deque()
        self.busy = False
        self.stats = Stats()
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"notify-{dest.service}")

    def _run(self) -> None:
        n = self.notifier
        while True:
            with n._cond:
                while not self.queue and not n._closing:
                    n._cond.wait()
                if not self.queue or n._abort.is_set():
                    return
                message = self.queue.popleft()
                self.busy = True
            try:
                self._deliver(n.masked(message))
            finally:
                with n._cond:
                    self.busy = False
                    n._cond.notify_all()

    def _deliver(self, m: Message) -> None:
        n, policy, dest = self.notifier, self.notifier.policy, self.dest
        reason, tries = "", 0
        for tries in range(1, policy.tries + 1):
            try:
                if dest.service == "apprise":
                    send_apprise(dest.url, m)
                else:
                    body, headers = request_body(dest.service, m)
                    post(dest.post_url, body, headers, policy)
            except _GiveUp as exc:
                reason = str(exc)
                break
            except _Retry as exc:
                reason = str(exc)
                if tries == policy.tries:
                    break
                wait = exc.after if exc.after is not None else policy.wait(tries)
                if n._abort.wait(wait):
                    reason += " (closed before the next try)"
                    break
                continue
            except Exception as exc:  # a bug in a payload or a library: still a warning
                reason = f"{type(exc).__name__}: {exc}"
                break
            with n._cond:
                self.stats.delivered += 1
            return
        n._fail(self, m, reason, tries)


class Notifier:
    """Background delivery to `destinations`; `send` never blocks."""

    def __init__(
        self,
        destinations: Iterable[Destination],
        *,
        policy: Policy | None = None,
        on_failure: Callable[[str, str], None] | None = None,
    ) -> None:
        self.policy = policy or Policy()
        self.on_failure = on_failure
        self.failures: list[Failure] = []
        self._cond = threading.Condition()
        self._closing = False
        self._abort = threading.Event()
        self._lanes = [_Lane(d, self) for d in destinations]
        self._urls = [(u, d.service) for d in self.destinations for u in (d.url, d.post_url)]
        for lane in self._lanes:
            lane.thread.start()

    @property
    def destinations(self) -> list[Destination]:
        return [lane.dest for lane in self._lanes]

    def redact(self, text: str) -> str:
        """`text` with every credential as `***` (core/secrets.py).

        The credentials are every destination's URL and its secret pieces, and all else the
        secrets policy names."""
        return redact_text(text, self._urls)

    def stats(self) -> dict[str, Stats]:
        """Per destination label: queued, delivered, failed, dropped (copies)."""
        with self._cond:
            return {lane.dest.label: Stats(**vars(lane.stats)) for lane in self._lanes}

    def stats_of(self, dest: Destination) -> Stats:
        with self._cond:
            for lane in self._lanes:
                if lane.dest is dest:
                    return Stats(**vars(lane.stats))
        raise KeyError(dest.label)

    def send(self, message: Message) -> int:
        """Queue `message` for every destination whose level it reaches; how many.

        Its credentials are masked by each destination's worker before it is sent (`masked`):
        sending stays a queue append."""
        queued = 0
        with self._cond:
            if self._closing:
                return 0
            for lane in self._lanes:
                if not lane.dest.accepts(message.level):
                    continue
                if len(lane.queue) >= self.policy.queue_size:
                    lane.queue.popleft()
                    lane.stats.dropped += 1
                lane.queue.append(message)
                lane.stats.queued += 1
                queued += 1
            self._cond.notify_all()
        return queued

    def _fail(self, lane: _Lane, m: Message, reason: str, tries: int) -> None:
        reason = redact_text(reason, self._urls)
        failure = Failure(
            destination=lane.dest.label,
            service=lane.dest.service,
            title=redact_text(m.title, self._urls),
            reason=reason,
            tries=tries,
            time=time.time(),
            source=lane.dest.source,
        )
        with self._cond:
            lane.stats.failed += 1
            self.failures.append(failure)
        if self.on_failure is not None:
            try:
                self.on_failure(failure.destination, failure.reason)
            except Exception:  # a callback's own error must not kill the worker
                pass

    def masked(self, m: Message) -> Message:
        """`m` with every credential in its words masked: what any destination is sent."""
        return replace(
            m,
            run=self.redact(m.run),
            title=self.redact(m.title),
            text=self.redact(m.text),
            detail=self.redact(m.detail),
            fields={self.redact(k): self.redact(v) for k, v in m.fields.items()},
        )

    def pending(self) -> int:
        with self._cond:
            return sum(len(lane.queue) + lane.busy for lane in self._lanes)

    def flush(self, timeout: float) -> bool:
        """Wait (at most `timeout` s) until every queue is empty and nothing is in flight."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while any(lane.queue or lane.busy for lane in self._lanes):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float = 5.0) -> bool:
        """Stop taking messages and let the queues drain for at most `timeout` seconds.

        Returns True if they drained. Otherwise waits and retries are cut short and the
        threads (daemons) are left running."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        drained = self.flush(timeout)
        if not drained:
            self._abort.set()
        deadline = time.monotonic() + (timeout if drained else 0.0)
        for lane in self._lanes:
            lane.thread.join(max(0.0, deadline - time.monotonic()))
        return drained

    def __repr__(self) -> str:
        return f"Notifier({', '.join(d.label for d in self.destinations)})"

    def __enter__(self) -> Notifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
