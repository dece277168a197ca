"""Issue #53 item 1: the polite client against servers that behave as real ones do: they compress
when asked (gzip, deflate: zlib-wrapped or raw), chunk, answer HTTP/1.0 and close, trickle their
headers, reset a connection mid-body. Real HTTP on 127.0.0.1 (tests/helpers/loopback.py)."""
from __future__ import annotations

import gzip
import json
import socket
import struct
import tracemalloc
import zlib

import pytest

from ingest.http import FetchError, PoliteClient
from ingest.raw_store import RawStore
from ingest.source import FetchContext
from tests.helpers.loopback import LoopbackServer, RawServer, Reply

MB = 1024 * 1024
MODELS = json.dumps({"data": [{"id": f"org/model-{i}", "pricing": {"prompt": "0.000001"}}
                              for i in range(2000)]}).encode()


def client(**kw) -> PoliteClient:
    opts = dict(max_rps=1000, backoff_base=0.01, backoff_max=0.05, connect_timeout=2, read_timeout=5)
    opts.update(kw)
    return PoliteClient(**opts)


def raw_deflate(data: bytes) -> bytes:
    z = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return z.compress(data) + z.flush()


def pieces(data: bytes, n: int) -> list[tuple[float, bytes]]:
    step = max(1, len(data) // n)
    return [(0, data[i:i + step]) for i in range(0, len(data), step)]


ENCODED = {
    "gzip": gzip.compress(MODELS),
    "deflate": zlib.compress(MODELS),  # RFC 9110's deflate: a zlib stream
}


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("encoding,body", [("gzip", ENCODED["gzip"]), ("deflate", ENCODED["deflate"]),
                                           ("deflate", raw_deflate(MODELS)), ("identity", MODELS)],
                         ids=["gzip", "deflate-zlib", "deflate-raw", "identity"])
def test_compressed_answers_are_decoded_and_stored_decoded(tmp_path, framing, encoding, body):
    headers = {"Content-Encoding": encoding, "Content-Type": "application/json", "ETag": '"v1"'}
    reply = (Reply(200, body, headers=headers) if framing == "content-length"
             else Reply(200, headers=headers, chunks=pieces(body, 7)))
    with LoopbackServer() as srv:
        srv.route("/models", reply)
        store = RawStore(tmp_path / "raw")
        ctx = FetchContext(source="demo", base_url=srv.url, client=client(), store=store,
                           parser_version="1", log=lambda m: None)
        entry, stored = ctx.get(srv.url + "/models")
        assert srv.requests[-1].headers["accept-encoding"] == "gzip, deflate"
    assert stored == MODELS
    assert store.read(entry) == MODELS and entry.bytes == len(MODELS)
    assert len(json.loads(store.read(entry))["data"]) == 2000  # what the parser reads is JSON, not 0x8b


def test_gzip_of_several_members_is_read_whole():
    body = gzip.compress(MODELS[:5000]) + gzip.compress(MODELS[5000:])
    with LoopbackServer() as srv:
        srv.route("/models", Reply(200, body, headers={"Content-Encoding": "gzip"}))
        assert client().get(srv.url + "/models").content == MODELS


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    """256 MiB of zeros in a ~250 kB gzip stream (the ratio of a real bomb)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(MB)
    return b"".join([z.compress(block) for _ in range(256)] + [z.flush()])


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_gzip_bomb_is_cut_at_the_cap_on_decoded_bytes(gzip_bomb, framing):
    assert len(gzip_bomb) < MB  # under the cap as sent: only the decoded size can stop it
    headers = {"Content-Encoding": "gzip"}
    reply = (Reply(200, gzip_bomb, headers=headers) if framing == "content-length"
             else Reply(200, headers=headers, chunks=pieces(gzip_bomb, 20)))
    with LoopbackServer() as srv:
        srv.route("/bomb", reply)
        tracemalloc.start()
        try:
            with pytest.raises(FetchError) as exc:
                client(max_bytes=8 * MB, retries=0).get(srv.url + "/bomb")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    message = str(exc.value)
    assert "above the 8388608-byte limit once decoded (gzip" in message and "/bomb" in message
    assert "\n" not in message
    assert peak < 3 * 8 * MB, f"held {peak} bytes while refusing a bomb capped at 8 MiB"


def test_unrequested_encoding_is_a_clear_error():
    with LoopbackServer() as srv:
        srv.route("/x", Reply(200, b"\x28\xb5\x2f\xfd", headers={"Content-Encoding": "zstd"}))
        with pytest.raises(FetchError, match="unsupported Content-Encoding 'zstd'"):
            client().get(srv.url + "/x")


def test_gzip_cut_short_is_retried_then_fails():
    with LoopbackServer() as srv:
        srv.route("/x", Reply(200, ENCODED["gzip"][:-200], headers={"Content-Encoding": "gzip"}))
        with pytest.raises(FetchError, match="gzip body cut short after 2 attempts"):
            client(retries=1).get(srv.url + "/x")
        assert srv.paths().count("/x") == 2


def test_compressed_robots_txt_is_obeyed():
    with LoopbackServer() as srv:
        srv.route("/robots.txt", Reply(200, gzip.compress(b"User-agent: *\nDisallow: /private\n"),
                                       headers={"Content-Encoding": "gzip", "Content-Type": "text/plain"}))
        srv.route_prefix("/", lambda req: Reply(200, b"ok"))
        c = client()
        with pytest.raises(FetchError, match="disallowed by robots.txt"):
            c.get(srv.url + "/private/page")
        assert c.get(srv.url + "/public").content == b"ok"
        assert srv.paths() == ["/robots.txt", "/public"]


# -- raw servers: what http.server will not do ------------------------------------------------


def test_http_10_answer_read_to_the_close(tmp_path):
    def answer(req, conn):
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n\r\n")
        conn.sendall(ENCODED["gzip"])  # no length: the body ends when the server closes

    with RawServer(answer) as srv:
        c = client(respect_robots=False)
        assert c.get(srv.url + "/models").content == MODELS
        assert c.get(srv.url + "/models").content == MODELS  # a closed connection is not reused
        assert len(srv.requests) == 2


def test_chunked_answer_with_extensions_and_trailer():
    def answer(req, conn):
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n")
        body = ENCODED["gzip"]
        for i in range(0, len(body), 1000):
            piece = body[i:i + 1000]
            conn.sendall(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece))
        conn.sendall(b"0\r\nX-Trailer: done\r\n\r\n")

    with RawServer(answer) as srv:
        assert client(respect_robots=False).get(srv.url + "/models").content == MODELS


def reset(conn: socket.socket) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a crashing server or a middlebox does."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_reset_mid_body_is_retried_and_a_whole_body_kept():
    def answer(req, conn):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(MODELS))
        if len(srv.requests) == 1:
            conn.sendall(MODELS[:10000])
            reset(conn)
            return
        conn.sendall(MODELS)

    with RawServer(answer) as srv:
        messages = []
        response = client(respect_robots=False, log=messages.append).get(srv.url + "/models")
        assert response.content == MODELS
        assert len(srv.requests) == 2
        assert "retrying" in messages[0]


def test_reset_mid_body_every_time_fails_with_one_line():
    def answer(req, conn):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + MODELS[:5000])
        reset(conn)

    with RawServer(answer) as srv:
        with pytest.raises(FetchError, match="after 3 attempts") as exc:
            client(respect_robots=False, retries=2).get(srv.url + "/models")
        assert len(srv.requests) == 3
        assert "\n" not in str(exc.value)
        assert "reset" in str(exc.value) or "cut short" in str(exc.value)


def test_short_content_length_body_is_not_kept():
    def answer(req, conn):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n" + MODELS[:5000])

    with RawServer(answer) as srv:
        with pytest.raises(FetchError, match=r"body cut short \(5000 bytes read, 95000 more expected\) after 2 attempts"):
            client(respect_robots=False, retries=1).get(srv.url + "/models")


def trickle(srv: RawServer, conn: socket.socket, head: bytes, every_s: float) -> None:
    """`head` at once, then one byte of a header value every `every_s`, for as long as anyone listens."""
    conn.sendall(head)
    while not srv.stopping.is_set():
        srv.sleep(every_s)
        conn.sendall(b"x")


@pytest.mark.parametrize("head", [b"HTTP/1.1 200 OK\r\nX-Slow: ", b"HTTP/1.1 2"], ids=["header", "status-line"])
def test_headers_that_trickle_fail_at_the_deadline(head):
    # one byte every 0.3 s: each read succeeds well within the 5 s read timeout, so only the
    # request's own deadline can end it
    with RawServer(lambda req, conn: trickle(srv, conn, head, 0.3)) as srv:
        with pytest.raises(FetchError) as exc:
            client(respect_robots=False, deadline_s=1.5, url_deadline_s=60, retries=3).get(srv.url + "/models")
        assert "not finished within the 1.5s deadline (waiting for the status line and headers)" in str(exc.value)
        assert len(srv.requests) == 1  # a deadline is not a transient failure: no second attempt


def test_robots_txt_that_trickles_fails_the_fetch_at_the_deadline():
    with RawServer(lambda req, conn: trickle(srv, conn, b"HTTP/1.1 200 OK\r\nX-Slow: ", 0.3)) as srv:
        with pytest.raises(FetchError, match=r"robots.txt: not finished within the 1s deadline"):
            client(deadline_s=1).get(srv.url + "/models")
        assert [r.target for r in srv.requests] == ["/robots.txt"]


def test_one_deadline_over_all_attempts_of_a_url():
    # every attempt takes 0.5 s and ends in a 503: 50 retries would take 25 s, the URL has 2
    def answer(req, conn):
        srv.sleep(0.5)
        conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")

    with RawServer(answer) as srv:
        with pytest.raises(FetchError, match="the 2s deadline for all attempts of a URL") as exc:
            client(respect_robots=False, retries=50, url_deadline_s=2).get(srv.url + "/models")
        assert 2 <= len(srv.requests) <= 5, len(srv.requests)
        assert "\n" not in str(exc.value)


def test_url_deadline_cuts_an_attempt_that_would_outlive_it():
    # the request's own deadline (60 s) is longer than what is left of the URL's (1 s)
    with RawServer(lambda req, conn: trickle(srv, conn, b"HTTP/1.1 200 OK\r\nX-Slow: ", 0.3)) as srv:
        with pytest.raises(FetchError, match=r"1s deadline for all attempts of a URL \(attempt 1: not finished"):
            client(respect_robots=False, deadline_s=60, url_deadline_s=1).get(srv.url + "/models")


def test_defaults_are_documented_values(monkeypatch):
    monkeypatch.delenv("BENCHWH_FETCH_DEADLINE_S", raising=False)
    monkeypatch.delenv("BENCHWH_FETCH_URL_DEADLINE_S", raising=False)
    c = PoliteClient()
    assert (c.deadline_s, c.url_deadline_s) == (300, 600)
    monkeypatch.setenv("BENCHWH_FETCH_DEADLINE_S", "20")
    monkeypatch.setenv("BENCHWH_FETCH_URL_DEADLINE_S", "45")
    c = PoliteClient()
    assert (c.deadline_s, c.url_deadline_s) == (20, 45)


def test_plain_http_goes_through_the_environments_proxy(monkeypatch):
    with LoopbackServer() as proxy:
        proxy.route("/models", Reply(200, ENCODED["gzip"], headers={"Content-Encoding": "gzip"}))
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("http_proxy", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        response = client(respect_robots=False).get("http://models.example.invalid/models")
        assert response.content == MODELS
        assert proxy.requests[-1].headers["host"] == "models.example.invalid"
