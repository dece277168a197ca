"""OpenRouter /models: exact price conversion, quarantine of bad prices, failing payloads, real snapshots."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from ingest.http import PoliteClient
from ingest.landing import Lander
from ingest.raw_store import RawStore
from ingest.source import FetchContext, SourceFailed
from ingest.sources.openrouter import OpenRouterSource
from tests.helpers.loopback import LoopbackServer, Reply

URL = "https://openrouter.ai/api/v1/models"


def model(ident: str, prompt="0.0000001", completion="0.0000002", **extra) -> dict:
    rec = {"id": ident, "canonical_slug": ident, "name": ident.split("/")[-1], "created": 1727222400,
           "context_length": 131072, "hugging_face_id": "",
           "architecture": {"modality": "text->text", "tokenizer": "Llama3"},
           "pricing": {"prompt": prompt, "completion": completion, "request": "0"},
           "top_provider": {"context_length": 131072, "max_completion_tokens": 16384}}
    rec.update(extra)
    return rec


def payload(*records) -> bytes:
    return json.dumps({"data": list(records)}).encode()


def parse(body: bytes):
    return OpenRouterSource().parse(body, None)["models"]


def read_parquet(path: Path) -> list[dict]:
    con = duckdb.connect()
    try:
        cur = con.execute(f"select * from read_parquet('{path}')")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]
    finally:
        con.close()


def land(tmp_path: Path, *bodies: bytes, start_day: int = 1):
    store = RawStore(tmp_path / "raw")
    lander = Lander(tmp_path / "landing", store, log=lambda m: None)
    for i, body in enumerate(bodies):
        store.put("openrouter", body, url=URL, fetched_at=f"2026-10-{start_day + i:02d}T06:00:00Z")
    return store, lander


def landed_rows(lander: Lander, sha: str) -> list[dict]:
    path = lander.entity_dir("openrouter", "models") / f"{sha}.parquet"
    return read_parquet(path) if path.exists() else []


def quarantine_rows(lander: Lander, sha: str) -> list[dict]:
    path = lander.quarantine_dir("openrouter") / f"{sha}.parquet"
    return read_parquet(path) if path.exists() else []


# ---- parsing --------------------------------------------------------------------------------

def test_prices_convert_exactly_to_usd_per_million_tokens():
    df = parse(payload(model("meta-llama/llama-3.1-8b-instruct", "0.000000015", "0.0000001104")))
    row = df.iloc[0]
    # float(0.000000015) * 1e6 would give 0.015000000000000001; Decimal gives 0.015
    assert row["prompt_usd_per_mtok"] == 0.015
    assert row["completion_usd_per_mtok"] == 0.1104
    assert row["request_usd"] == 0.0
    assert row["hugging_face_id"] is None  # "" upstream
    assert str(row["created"]) == "2024-09-25 00:00:00"


def test_omitted_zero_valued_price_keys_mean_zero_and_cache_prices_mean_not_offered():
    rec = model("qwen/qwen3-8b")
    rec["pricing"] = {"prompt": "0.00000005", "input_cache_read": "0.00000001"}
    row = parse(payload(rec)).iloc[0]
    assert row["completion_usd_per_mtok"] == 0.0
    assert row["request_usd"] == 0.0
    assert row["input_cache_read_usd_per_mtok"] == 0.01
    assert row["input_cache_write_usd_per_mtok"] is None
    assert json.loads(row["pricing_json"]) == rec["pricing"]


def test_free_variant_flag():
    df = parse(payload(model("google/gemma-3-27b-it:free", "0", "0"), model("google/gemma-3-27b-it")))
    assert df["is_free_variant"].tolist() == [True, False]


# ---- landing: quarantine vs failure ---------------------------------------------------------

def test_bad_prices_are_quarantined_and_unknown_fields_tolerated(tmp_path):
    body = payload(
        model("openrouter/auto", "-1", "-1"),
        model("vendor/negative", "-0.000001"),
        model("vendor/text", "0.0000001", "call us"),
        model("vendor/nan", "NaN"),
        model("vendor/absurd", "0.002"),  # $2,000 per million tokens
        model("vendor/fine-a"),
        model("vendor/fine-b", supported_voices=["alloy"], knowledge_cutoff="2025-01",
              links={"details": "/x"}),
    )
    store, lander = land(tmp_path, body)
    [outcome] = lander.land_pending(OpenRouterSource())
    sha = outcome.sha256
    assert outcome.status == "landed"
    assert outcome.parsed == {"models": 7}
    assert outcome.landed == {"models": 3}
    assert outcome.quarantined == {"models": 4}
    landed = {r["openrouter_id"]: r for r in landed_rows(lander, sha)}
    assert sorted(landed) == ["openrouter/auto", "vendor/fine-a", "vendor/fine-b"]
    # "-1" is OpenRouter's "price set by the router": a known no-fixed-price row, not a failure
    auto = landed["openrouter/auto"]
    assert not auto["has_fixed_price"] and auto["completion_usd_per_mtok"] is None
    assert '"-1"' in auto["pricing_json"]
    assert landed["vendor/fine-a"]["has_fixed_price"]

    q = quarantine_rows(lander, sha)
    by_id = {}
    for r in q:
        by_id.setdefault(json.loads(r["record"])["openrouter_id"], []).append(r)
    assert set(by_id) == {"vendor/negative", "vendor/text", "vendor/nan", "vendor/absurd"}
    assert any("less_than" in r["check_name"] for r in by_id["vendor/absurd"])
    assert any(r["failure_value"] == "call us" for r in by_id["vendor/text"])
    # the verbatim pricing object travels with the record
    assert '"NaN"' in json.loads(by_id["vendor/nan"][0]["record"])["pricing_json"]


def test_payload_without_data_list_is_rejected_without_failing_the_source(tmp_path):
    store, lander = land(tmp_path, json.dumps({"error": {"code": 500}}).encode())
    [outcome] = lander.land_pending(OpenRouterSource())
    assert outcome.status == "rejected"
    [q] = quarantine_rows(lander, outcome.sha256)
    assert q["check_name"] == "payload_shape"


@pytest.mark.parametrize("drop", ["id", "pricing"])
def test_record_missing_id_or_pricing_fails_the_source_then_a_good_payload_lands(tmp_path, drop):
    broken = model("vendor/broken")
    del broken[drop]
    store, lander = land(tmp_path, payload(model("vendor/ok"), broken))
    with pytest.raises(SourceFailed) as err:
        lander.land_pending(OpenRouterSource())
    message = str(err.value)
    assert "\n" not in message and f"no `{drop}`" in message and "record 1" in message
    [outcome] = lander.outcomes("openrouter")
    assert outcome.status == "rejected"
    assert landed_rows(lander, outcome.sha256) == []  # nothing of the broken payload lands
    [q] = quarantine_rows(lander, outcome.sha256)
    assert q["check_name"] == "required_field_missing"

    # the failure is recorded once: the next good snapshot lands and the source is healthy again
    store.put("openrouter", payload(model("vendor/ok"), model("vendor/other")), url=URL,
              fetched_at="2026-10-02T06:00:00Z")
    [good] = lander.land_pending(OpenRouterSource())
    assert good.status == "landed" and good.landed == {"models": 2}


def test_fetch_uses_conditional_get_against_the_base_url(tmp_path):
    body = payload(model("vendor/a"))
    etag = '"v1"'

    def handler(req):
        if req.headers.get("if-none-match") == etag:
            return Reply(304, headers={"ETag": etag})
        return Reply(200, body, headers={"ETag": etag, "Content-Type": "application/json"})

    store = RawStore(tmp_path / "raw")
    with LoopbackServer() as srv:
        srv.route("/api/v1/models", handler)
        for _ in range(2):
            ctx = FetchContext(source="openrouter", base_url=srv.url + "/api/v1",
                               client=PoliteClient(max_rps=1000, backoff_base=0.01), store=store,
                               parser_version=OpenRouterSource.parser_version, log=lambda m: None)
            OpenRouterSource().fetch(ctx)
    rows = store.entries("openrouter")
    assert [r.status for r in rows] == [200, 304]
    assert rows[0].url == srv.url + "/api/v1/models"
    assert len(list(store.payloads("openrouter"))) == 1


# ---- the real snapshots in ../shared/data ----------------------------------------------------

REAL_FILES = ["models_2025-07-29_wikiarena.json", "models_2025-12-02_chess-llm-benchmark.json",
              "models_2026-05-22_aiscanner.json"]


def _check_landing(lander: Lander, outcomes) -> None:
    for outcome in outcomes:
        assert outcome.status == "landed", outcome.reason
        landed = landed_rows(lander, outcome.sha256)
        quarantined = {r["record_index"] for r in quarantine_rows(lander, outcome.sha256)}
        assert outcome.landed["models"] + outcome.quarantined["models"] == outcome.parsed["models"]
        assert len(landed) + len(quarantined) == outcome.parsed["models"]
        assert all(r["prompt_usd_per_mtok"] >= 0 and r["completion_usd_per_mtok"] >= 0
                   for r in landed if r["has_fixed_price"])
        assert all(r["prompt_usd_per_mtok"] is None for r in landed if not r["has_fixed_price"])


def test_real_openrouter_snapshots_parse_and_land(tmp_path, shared_data):
    folder = shared_data / "openrouter"
    bodies = [(folder / name).read_bytes() for name in REAL_FILES]
    store, lander = land(tmp_path, *bodies)
    outcomes = lander.land_pending(OpenRouterSource())
    assert [o.parsed["models"] for o in outcomes] == [151, 335, 356]
    _check_landing(lander, outcomes)
    # openrouter/auto ("-1") is listed in the two later files: landed there as "no fixed price"
    for outcome in outcomes[1:]:
        auto = [r for r in landed_rows(lander, outcome.sha256) if r["openrouter_id"] == "openrouter/auto"]
        assert [r["has_fixed_price"] for r in auto] == [False]
        assert not any(json.loads(r["record"])["openrouter_id"] == "openrouter/auto"
                       for r in quarantine_rows(lander, outcome.sha256))


def test_real_small_subset_snapshots_land(tmp_path, shared_data):
    subset = json.loads((shared_data / "openrouter" / "small_models_subset_3_snapshots.json").read_text())
    dates = sorted(subset)
    store = RawStore(tmp_path / "raw")
    lander = Lander(tmp_path / "landing", store, log=lambda m: None)
    for date in dates:
        store.put("openrouter", json.dumps({"data": subset[date]}).encode(), url=URL,
                  fetched_at=f"{date}T06:00:00Z")
    outcomes = lander.land_pending(OpenRouterSource())
    assert [o.parsed["models"] for o in outcomes] == [len(subset[d]) for d in dates]
    _check_landing(lander, outcomes)
    last = {r["openrouter_id"]: r for r in landed_rows(lander, outcomes[-1].sha256)}
    assert last["google/gemma-3-4b-it"]["prompt_usd_per_mtok"] == 0.04
    assert last["meta-llama/llama-3.2-3b-instruct"]["prompt_usd_per_mtok"] == 0.0509
    # the one "-1" router entry of the later snapshots lands as "no fixed price", not quarantined
    assert outcomes[1].quarantined["models"] == 0 and outcomes[2].quarantined["models"] == 0
    assert [r["has_fixed_price"] for r in landed_rows(lander, outcomes[2].sha256)].count(False) == 1
