"""FetchContext = polite client + raw store: an unchanged resource is logged, not stored again."""
from __future__ import annotations

import pytest

from ingest.http import FetchError, PoliteClient
from ingest.raw_store import RawStore
from ingest.source import FetchContext
from tests.helpers.loopback import LoopbackServer, Reply

BODY = b'{"data": [{"id": "a/b", "pricing": {"prompt": "0.000001"}}]}'
ETAG = '"models-v1"'


def etag_handler(req):
    if req.headers.get("if-none-match") == ETAG:
        return Reply(304, headers={"ETag": ETAG})
    return Reply(200, BODY, headers={"ETag": ETAG, "Content-Type": "application/json"})


def blob_files(store: RawStore, source: str) -> list:
    return [p for p in (store.root / source).rglob("*") if p.is_file() and p.name != "manifest.jsonl"]


def make_ctx(srv: LoopbackServer, store: RawStore) -> FetchContext:
    client = PoliteClient(max_rps=1000, backoff_base=0.01, backoff_max=0.05)
    return FetchContext(source="demo", base_url=srv.url, client=client, store=store,
                        parser_version="1", log=lambda msg: None)


def test_unchanged_resource_gets_304_and_one_blob(tmp_path):
    store = RawStore(tmp_path / "raw")
    with LoopbackServer() as srv:
        srv.route("/models", etag_handler)
        url = srv.url + "/models"

        first, body = make_ctx(srv, store).get(url)
        assert first.status == 200 and body == BODY and first.etag == ETAG

        # a later run (new client, same store) sends the stored ETag and gets 304
        second, body2 = make_ctx(srv, store).get(url)
        assert body2 is None
        sent = [r for r in srv.requests if r.path == "/models"]
        assert "if-none-match" not in sent[0].headers
        assert sent[1].headers["if-none-match"] == ETAG

    rows = store.entries("demo")
    assert [r.status for r in rows] == [200, 304]
    assert rows[0].sha256 == rows[1].sha256 == second.sha256
    assert len(blob_files(store, "demo")) == 1
    assert store.read(rows[1]) == BODY
    assert [p.sha256 for p in store.payloads("demo")] == [rows[0].sha256]


def test_changed_resource_stores_a_second_blob(tmp_path):
    store = RawStore(tmp_path / "raw")
    state = {"body": b"v1"}
    with LoopbackServer() as srv:
        srv.route("/data", lambda req: Reply(200, state["body"]))  # no validators: plain GET
        ctx = make_ctx(srv, store)
        ctx.get(srv.url + "/data", ext="csv")
        state["body"] = b"v2"
        ctx.get(srv.url + "/data", ext="csv")
        ctx.get(srv.url + "/data", ext="csv")  # same body again: logged, not stored twice
    assert [r.status for r in store.entries("demo")] == [200, 200, 200]
    assert len(blob_files(store, "demo")) == 2
    assert len(ctx.stored) == 3


def test_failed_fetch_stores_nothing(tmp_path):
    store = RawStore(tmp_path / "raw")
    with LoopbackServer() as srv:
        srv.route("/models", Reply(503))
        with pytest.raises(FetchError, match="503"):
            make_ctx(srv, store).get(srv.url + "/models")
    assert store.entries("demo") == []
