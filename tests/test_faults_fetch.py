"""Issue #12 items 3 and 5: fetches are bounded (size, deadline) and cross-host redirects are
refused unless the source allows the host, whose robots.txt then applies; the final URL is kept."""
from __future__ import annotations

import tracemalloc

import pytest

from ingest.http import FetchError, PoliteClient
from ingest.raw_store import RawStore
from ingest.source import FetchContext
from tests.helpers.loopback import LoopbackServer, Reply

MB = 1024 * 1024


def client(**kw) -> PoliteClient:
    return PoliteClient(max_rps=1000, backoff_base=0.01, backoff_max=0.05, retries=1, **kw)


def two_gigabytes():
    block = b"\0" * (64 * 1024)
    for _ in range(2 * 1024 * 1024 * 1024 // len(block)):
        yield 0, block


def test_two_gigabyte_body_is_refused_while_streaming_without_holding_it():
    with LoopbackServer() as srv:
        srv.route("/huge", lambda req: Reply(200, chunks=two_gigabytes()))  # chunked: no length up front
        srv.route("/declared", Reply(200, headers={"Content-Length": str(2 * 1024 ** 3)}, chunks=[]))
        tracemalloc.start()
        try:
            with pytest.raises(FetchError, match="above the 8388608-byte limit") as exc:
                client(max_bytes=8 * MB).get(srv.url + "/huge")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 64 * MB, f"held {peak} bytes while refusing"
        assert "/huge" in str(exc.value) and "\n" not in str(exc.value)
        with pytest.raises(FetchError, match="2147483648 bytes is above"):
            client(max_bytes=8 * MB).get(srv.url + "/declared")


def test_trickling_server_is_cut_off_at_the_deadline():
    with LoopbackServer() as srv:
        # one byte every 0.2 s for a minute: each read succeeds, so only a deadline stops it
        srv.route("/slow", lambda req: Reply(200, chunks=[(0.2, b"x")] * 300))
        with pytest.raises(FetchError, match="not finished within the 1s deadline") as exc:
            client(deadline_s=1).get(srv.url + "/slow")
        assert "bytes received" in str(exc.value)


def test_cross_host_redirect_refused_unless_allowed_then_robots_and_final_url(tmp_path):
    with LoopbackServer() as a, LoopbackServer() as b:
        other = b.url.replace("127.0.0.1", "localhost")
        a.route("/models", Reply(302, headers={"Location": other + "/real/models"}))
        a.route("/blocked", Reply(302, headers={"Location": other + "/private/models"}))
        b.route("/real/models", Reply(200, b'{"data": []}', headers={"Content-Type": "application/json"}))
        b.route("/private/models", Reply(200, b'{"data": []}'))
        b.route("/robots.txt", Reply(200, "User-agent: *\nDisallow: /private/\n"))

        with pytest.raises(FetchError, match="redirected to another host localhost"):
            client().get(a.url + "/models")
        assert "/real/models" not in b.paths()

        store = RawStore(tmp_path / "raw")
        ctx = FetchContext(source="demo", base_url=a.url, client=client(), store=store, parser_version="1",
                           log=lambda m: None, redirect_hosts=("localhost",))
        entry, body = ctx.get(a.url + "/models")
        assert body == b'{"data": []}'
        assert entry.url == a.url + "/models" and entry.final_url == other + "/real/models"
        assert store.entries("demo")[0].final_url == other + "/real/models"  # in the manifest
        assert b.paths()[0] == "/robots.txt"  # the new host's rules read before its page
        with pytest.raises(FetchError, match="disallowed by robots.txt"):
            ctx.get(a.url + "/blocked")
        assert "/private/models" not in b.paths()


def test_same_host_redirect_is_followed():
    with LoopbackServer() as srv:
        srv.route("/old", Reply(301, headers={"Location": "/new"}))
        srv.route("/new", Reply(200, b"ok"))
        response = client().get(srv.url + "/old")
        assert response.content == b"ok" and response.url == srv.url + "/new"
