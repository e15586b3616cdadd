"""Background delivery against a real HTTP server on 127.0.0.1: retries, Retry-After, a dead
endpoint that never slows the caller, failures recorded with the token redacted."""

from __future__ import annotations

import time

import pytest

from fontaine_tui.core.notify.delivery import Notifier, Policy, retry_after
from fontaine_tui.core.notify.destinations import make_destination
from fontaine_tui.core.notify.payloads import Message
from tests.core.notify.server import dead_port

SECRET = "/services/T000/B000/SECRETTOKEN"
FAST = Policy(timeout=2, tries=4, backoff=0.05)


def msg(i=0, level="info"):
    return Message(level=level, title=f"event {i}", text=f"step {i}", run="r", step=i)


def test_a_500_is_retried_until_it_passes(hook):
    hook.fail(500, 2)
    dest = make_destination(hook.url(SECRET), service="slack")
    notifier = Notifier([dest], policy=FAST)
    notifier.send(msg())
    assert notifier.close(10)
    reqs = hook.wait_for(3)
    assert len(reqs) == 3 and reqs[0].body == reqs[2].body
    assert notifier.failures == [] and notifier.stats_of(dest).delivered == 1
    assert reqs[1].at - reqs[0].at >= 0.05 and reqs[2].at - reqs[1].at >= 0.1  # doubled


def test_the_last_try_failing_is_a_recorded_failure(hook):
    hook.fail(500, 10)
    seen = []
    dest = make_destination(hook.url(SECRET), service="slack")
    notifier = Notifier(
        [dest],
        policy=Policy(timeout=2, tries=3, backoff=0.01),
        on_failure=lambda label, reason: seen.append((label, reason)),
    )
    notifier.send(msg())
    assert notifier.close(10)
    assert len(hook.requests) == 3
    (failure,) = notifier.failures
    assert failure.reason == "HTTP 500 Internal Server Error" and failure.tries == 3
    assert failure.destination == f"http://127.0.0.1:{hook.port}/services/***/***/***"
    assert seen == [(failure.destination, failure.reason)]


def test_a_4xx_is_not_retried(hook):
    hook.fail(404, 1)
    notifier = Notifier([make_destination(hook.url())], policy=FAST)
    notifier.send(msg())
    assert notifier.close(10)
    assert len(hook.requests) == 1
    assert notifier.failures[0].reason == "HTTP 404 Not Found"


def test_429_retry_after_is_honoured(hook):
    hook.script.append(("retry_after", "1"))
    notifier = Notifier(
        [make_destination(hook.url(), service="discord")],
        policy=Policy(timeout=2, tries=2, backoff=0.01),
    )
    notifier.send(msg())
    assert notifier.close(10)
    first, second = hook.wait_for(2)
    gap = second.at - first.at
    print(f"\nRetry-After: 1 -> next try after {gap:.3f} s")
    assert gap >= 1.0
    assert notifier.failures == []


def test_retry_after_is_capped_and_read_as_a_date():
    assert retry_after("120", 60) == 60
    assert retry_after("0.5", 60) == 0.5
    assert retry_after(None, 60) is None and retry_after("soon", 60) is None
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 28 <= retry_after(when, 60) <= 30


def _send_100(notifier):
    worst = 0.0
    for i in range(100):
        t = time.perf_counter()
        notifier.send(msg(i))
        worst = max(worst, time.perf_counter() - t)
    return worst


@pytest.mark.parametrize("endpoint", ["refused", "silent"])
def test_a_dead_endpoint_never_slows_the_caller(endpoint, silent):
    port = dead_port() if endpoint == "refused" else silent.port
    url = f"http://127.0.0.1:{port}{SECRET}"
    seen = []
    notifier = Notifier(
        [make_destination(url, service="slack")],
        policy=Policy(timeout=0.3, tries=2, backoff=0.01, queue_size=5),
        on_failure=lambda label, reason: seen.append(reason),
    )
    worst = _send_100(notifier)
    print(f"\n{endpoint}: slowest of 100 send() calls {worst * 1e3:.3f} ms")
    assert worst < 0.005
    t = time.perf_counter()
    notifier.close(0.5)
    assert time.perf_counter() - t < 1.0  # close(timeout) keeps its word
    deadline = time.monotonic() + 5
    while not notifier.failures and time.monotonic() < deadline:
        time.sleep(0.02)
    stats = notifier.stats_of(notifier.destinations[0])
    assert stats.queued == 100 and stats.dropped >= 90  # drop-oldest, counted
    failure = notifier.failures[0]
    expected = "cannot connect: " if endpoint == "refused" else "no answer within 0.3 s"
    assert failure.reason.startswith(expected)
    assert failure.destination == f"http://127.0.0.1:{port}/services/***/***/***"
    for text in (failure.reason, failure.destination, failure.title, repr(notifier), *seen):
        assert "SECRETTOKEN" not in text


def test_a_hanging_destination_does_not_hold_up_another(hook, silent):
    slow = make_destination(f"http://127.0.0.1:{silent.port}/x")
    fast = make_destination(hook.url())
    notifier = Notifier([slow, fast], policy=Policy(timeout=3, tries=1))
    t = time.perf_counter()
    notifier.send(msg())
    hook.wait_for(1, timeout=2)
    assert len(hook.requests) == 1 and time.perf_counter() - t < 1.0
    notifier.close(0.1)


def test_a_destination_gets_only_its_levels(hook):
    warn = make_destination(hook.url("/warn"), level="warn")
    notifier = Notifier([warn, make_destination(hook.url("/all"))], policy=FAST)
    notifier.send(msg(0, "info"))
    notifier.send(msg(1, "alert"))
    assert notifier.close(10)
    assert sorted(r.path for r in hook.requests) == ["/all", "/all", "/warn"]


def test_after_close_nothing_is_queued(hook):
    notifier = Notifier([make_destination(hook.url())], policy=FAST)
    assert notifier.close(1)
    assert notifier.send(msg()) == 0


def test_a_request_that_gets_no_answer_is_tried_again(hook):
    hook.script.append(("hang",))
    notifier = Notifier(
        [make_destination(hook.url())], policy=Policy(timeout=0.3, tries=2, backoff=0.01)
    )
    notifier.send(msg())
    assert notifier.close(10)
    assert len(hook.wait_for(2)) == 2 and notifier.failures == []


def test_apprise_delivers_through_its_own_json_plugin(hook):
    """A scheme this module does not speak goes through the apprise library: its `json://`
    plugin POSTs to the real server here, with the title and body it was given."""
    pytest.importorskip("apprise")
    import json

    dest = make_destination(f"json://127.0.0.1:{hook.port}/apprise-hook")
    assert dest.service == "apprise"
    notifier = Notifier([dest], policy=FAST)
    notifier.send(msg(7, level="warn"))
    assert notifier.close(10)
    [req] = hook.wait_for(1)
    assert req.path == "/apprise-hook"
    body = json.loads(req.body)
    assert (body["title"], body["message"], body["type"]) == ("event 7", "step 7", "warning")
    assert notifier.failures == [] and notifier.stats_of(dest).delivered == 1


def test_apprise_failure_is_retried_then_recorded(hook):
    pytest.importorskip("apprise")
    hook.fail(500, 10)
    dest = make_destination(f"json://127.0.0.1:{hook.port}/apprise-hook")
    notifier = Notifier([dest], policy=Policy(timeout=2, tries=2, backoff=0.05))
    notifier.send(msg())
    assert notifier.close(10)
    assert len(hook.wait_for(2)) == 2
    assert len(notifier.failures) == 1


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_destination_that_trickles_is_given_up_within_the_total_time(where):
    """A real server on 127.0.0.1 that answers one byte every 0.1 s, for ever: each socket
    read gets its byte in time, so only a bound on the whole request ends the delivery."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                head = b"HTTP/1.1 200 OK\r\n"
                if where == "body":
                    head += b"Content-Length: 100000\r\n\r\n"
                conn.sendall(head)
                while not stop.wait(0.1):
                    try:
                        conn.sendall(b"X-Slow: a\r\n"[:1] if where == "headers" else b"x")
                    except OSError:
                        break

    threading.Thread(target=serve, daemon=True).start()
    try:
        notifier = Notifier(
            [make_destination(f"http://127.0.0.1:{listener.getsockname()[1]}/h")],
            policy=Policy(timeout=1.0, tries=2, backoff=0.05),
        )
        t = time.monotonic()
        notifier.send(msg())
        assert notifier.flush(8), "the delivery is still held by the trickling server"
        took = time.monotonic() - t
        [failure] = notifier.failures
        assert took < 4 and failure.tries == 2, (took, failure)
        assert "no answer within 1 s (the whole request)" in failure.reason, failure.reason
        notifier.close(1)
    finally:
        stop.set()
        listener.close()
