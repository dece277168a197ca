"""The polite client against real HTTP servers on 127.0.0.1 (tests/helpers/loopback.py)."""
from __future__ import annotations

import socket
import threading
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from ingest import config
from ingest.http import FetchError, PoliteClient, parse_retry_after
from tests.helpers.loopback import LoopbackServer, Reply


def fast_client(**kw) -> PoliteClient:
    """No real waiting unless a test asks for it."""
    opts = dict(max_rps=1000, backoff_base=0.01, backoff_max=0.05, connect_timeout=1, read_timeout=2)
    opts.update(kw)
    return PoliteClient(**opts)


def sequence(*replies: Reply):
    """A handler answering with the given replies in turn, then repeating the last one."""
    state = {"i": 0}
    lock = threading.Lock()

    def handler(req):
        with lock:
            i = min(state["i"], len(replies) - 1)
            state["i"] += 1
        return replies[i]
    return handler


def data_paths(srv: LoopbackServer) -> list[str]:
    return [p for p in srv.paths() if p != "/robots.txt"]


def test_503_twice_then_200_succeeds_on_third_request():
    with LoopbackServer() as srv:
        srv.route("/models", sequence(Reply(503), Reply(503), Reply(200, b'{"data": []}')))
        messages = []
        client = fast_client(log=messages.append)
        response = client.get(srv.url + "/models")
        assert response.status_code == 200
        assert response.content == b'{"data": []}'
        assert data_paths(srv) == ["/models"] * 3
        assert client.stats.retries == 2
        assert len(messages) == 2 and "after 503" in messages[0] and "retrying in" in messages[0]


def test_503_forever_fails_after_all_retries():
    with LoopbackServer() as srv:
        srv.route("/models", Reply(503, b"down"))
        client = fast_client(retries=3)
        with pytest.raises(FetchError) as err:
            client.get(srv.url + "/models")
        assert data_paths(srv) == ["/models"] * 4  # 1 attempt + 3 retries
        assert err.value.status == 503
        message = str(err.value)
        assert "\n" not in message and "/models" in message and "503" in message


def test_404_fails_at_once_without_retry():
    with LoopbackServer() as srv:
        with pytest.raises(FetchError, match="404"):
            fast_client().get(srv.url + "/missing")
        assert data_paths(srv) == ["/missing"]


def test_429_retry_after_is_honoured():
    with LoopbackServer() as srv:
        srv.route("/models", sequence(Reply(429, headers={"Retry-After": "2"}), Reply(200, b"ok")))
        client = fast_client(backoff_max=30)
        assert client.get(srv.url + "/models").content == b"ok"
        first, second = [r for r in srv.requests if r.path == "/models"]
        waited = second.at - first.at
        assert 1.9 <= waited < 6, waited


def test_retry_after_is_capped_at_backoff_max():
    with LoopbackServer() as srv:
        srv.route("/models", sequence(Reply(503, headers={"Retry-After": "3600"}), Reply(200, b"ok")))
        client = fast_client(backoff_max=0.05)
        assert client.get(srv.url + "/models").content == b"ok"
        assert client.slept_s < 1


def test_parse_retry_after_seconds_and_http_date():
    now = datetime(2026, 11, 30, 12, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after("2", now) == 2.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=90), usegmt=True), now) == 90.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=90), usegmt=True), now) == 0.0
    assert parse_retry_after("-5", now) == 0.0
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None


def test_robots_disallowed_path_is_never_requested():
    with LoopbackServer() as srv:
        srv.route("/robots.txt", Reply(200, "User-agent: *\nDisallow: /private\n"))
        srv.route_prefix("/", lambda req: Reply(200, b"ok"))
        client = fast_client()
        with pytest.raises(FetchError, match="robots.txt"):
            client.get(srv.url + "/private/x")
        assert client.get(srv.url + "/public").content == b"ok"
        # robots.txt fetched once for the host, /private/x never
        assert srv.paths() == ["/robots.txt", "/public"]
        assert srv.requests[0].headers["user-agent"] == config.USER_AGENT


def test_robots_rules_for_our_agent_apply():
    with LoopbackServer() as srv:
        srv.route("/robots.txt", Reply(200, "User-agent: benchwh\nDisallow: /\n\nUser-agent: *\nAllow: /\n"))
        srv.route_prefix("/", lambda req: Reply(200, b"ok"))
        with pytest.raises(FetchError, match="disallowed by robots.txt"):
            fast_client().get(srv.url + "/anything")
        assert srv.paths() == ["/robots.txt"]
        # the same rules do not stop a client that identifies otherwise
        assert fast_client(user_agent="other/1.0").get(srv.url + "/anything").status_code == 200


def test_missing_robots_allows_all_and_can_be_switched_off():
    with LoopbackServer() as srv:
        srv.route("/data", Reply(200, b"x"))
        client = fast_client()
        client.get(srv.url + "/data")
        client.get(srv.url + "/data")
        assert srv.paths() == ["/robots.txt", "/data", "/data"]
    with LoopbackServer() as srv:
        srv.route("/data", Reply(200, b"x"))
        fast_client(respect_robots=False).get(srv.url + "/data")
        assert srv.paths() == ["/data"]


def test_unreachable_robots_fails_the_fetch():
    # RFC 9309: a robots.txt that keeps failing with 5xx means we may not crawl
    with LoopbackServer() as srv:
        srv.route("/robots.txt", Reply(500))
        srv.route("/data", Reply(200, b"x"))
        with pytest.raises(FetchError, match="robots.txt"):
            fast_client(retries=1).get(srv.url + "/data")
        assert "/data" not in srv.paths()


def test_conditional_get_passes_304_through():
    etag = '"v1"'

    def handler(req):
        if req.headers.get("if-none-match") == etag:
            return Reply(304, headers={"ETag": etag})
        return Reply(200, b"payload", headers={"ETag": etag, "Last-Modified": "Mon, 30 Nov 2026 07:00:00 GMT"})

    with LoopbackServer() as srv:
        srv.route("/models", handler)
        client = fast_client()
        first = client.get(srv.url + "/models")
        assert first.status_code == 200 and first.headers["ETag"] == etag
        second = client.get(srv.url + "/models", etag=first.headers["ETag"],
                            last_modified=first.headers["Last-Modified"])
        assert second.status_code == 304 and second.content == b""
        sent = [r for r in srv.requests if r.path == "/models"][1].headers
        assert sent["if-none-match"] == etag
        assert sent["if-modified-since"] == "Mon, 30 Nov 2026 07:00:00 GMT"
        assert client.stats.not_modified == 1


def test_params_and_extra_headers_are_sent():
    with LoopbackServer() as srv:
        srv.route("/search", Reply(200, b"[]"))
        fast_client().get(srv.url + "/search", params={"q": "llama 3"}, headers={"Accept": "application/json"})
        req = srv.requests[-1]
        assert req.query == {"q": ["llama 3"]}
        assert req.headers["accept"] == "application/json"


class SendTimes(PoliteClient):
    """A client noting when it sends each request: the server's arrival times add two thread
    hand-offs, which a busy machine stretches (gaps of 0.32 and 0.04 s seen in CI)."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.times: list[float] = []  # appended from the client's threads (list.append is atomic)

    def send(self, *args, **kwargs):
        self.times.append(time.monotonic())
        return super().send(*args, **kwargs)


def test_rate_limit_spaces_requests_to_one_host():
    with LoopbackServer() as srv:
        srv.route("/x", Reply(200, b"x"))
        client = SendTimes(max_rps=5)
        for _ in range(4):
            client.get(srv.url + "/x")
        times = client.times  # robots.txt counts as a request to the host too
        assert len(times) == 5 and len(srv.requests) == 5
        gaps = [b - a for a, b in zip(times, times[1:])]
        assert times[-1] - times[0] >= 0.95 * 4 / 5, gaps
        assert min(gaps) >= 0.1, gaps
        assert client.slept_s > 0.5


def test_rate_limit_holds_across_threads():
    with LoopbackServer() as srv:
        srv.route("/x", Reply(200, b"x"))
        client = SendTimes(max_rps=5, respect_robots=False)
        threads = [threading.Thread(target=lambda: [client.get(srv.url + "/x") for _ in range(2)])
                   for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        times = sorted(client.times)
        assert len(times) == 6 and client.requests_made == 6 and len(srv.requests) == 6
        assert times[-1] - times[0] >= 0.95 * 5 / 5
        assert min(b - a for a, b in zip(times, times[1:])) >= 0.1


def test_rate_limit_env_default(monkeypatch):
    monkeypatch.setenv("BENCHWH_MAX_RPS", "2.5")
    assert PoliteClient().max_rps == 2.5
    monkeypatch.delenv("BENCHWH_MAX_RPS")
    assert PoliteClient().max_rps == 1.0


def test_user_agent_identifies_us_with_a_contact_url():
    with LoopbackServer() as srv:
        srv.route("/x", Reply(200, b"x"))
        fast_client().get(srv.url + "/x")
        ua = srv.requests[-1].headers["user-agent"]
        assert ua == config.USER_AGENT
        assert "https://" in ua and ua.startswith("benchwh/")


def test_stalled_server_read_timeout_fails_after_retries():
    with LoopbackServer() as srv:
        srv.route("/slow", Reply(200, b"late", delay_s=1.5))
        client = fast_client(read_timeout=0.2, retries=2)
        with pytest.raises(FetchError, match="read timeout after 3 attempts"):
            client.get(srv.url + "/slow")
        assert data_paths(srv) == ["/slow"] * 3


def test_body_stalling_midway_fails_after_retries():
    with LoopbackServer() as srv:
        srv.route("/stream", Reply(200, chunks=[(0, b"part one,"), (1.5, b"never in time")]))
        client = fast_client(read_timeout=0.2, retries=1)
        with pytest.raises(FetchError, match="after 2 attempts"):
            client.get(srv.url + "/stream")
        assert data_paths(srv) == ["/stream"] * 2


def test_connection_refused_fails_after_retries():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = fast_client(retries=2, respect_robots=False)
    with pytest.raises(FetchError, match="connection refused after 3 attempts"):
        client.get(f"http://127.0.0.1:{port}/x")
    assert client.requests_made == 3


def test_non_http_url_is_a_clear_error():
    with pytest.raises(FetchError, match="not an http"):
        fast_client().get("ftp://127.0.0.1/x")
