"""Hugging Face source: quant names, paginated listings over real HTTP, configs, landing."""
from __future__ import annotations

import json

import duckdb
import pytest

from ingest.http import PoliteClient
from ingest.landing import Lander
from ingest.raw_store import RawStore
from ingest.replay import replay_into_store
from ingest.source import FetchContext, PayloadRejected, load_sources
from ingest.sources.huggingface import HuggingFaceSource, next_link, parse_quant, read_catalogue
from tests.helpers.loopback import LoopbackServer, Reply


@pytest.mark.parametrize("name, quant", [
    ("Llama-3.2-1B-Instruct-Q4_K_M.gguf", "Q4_K_M"),
    ("Qwen3-8B-IQ3_XXS.gguf", "IQ3_XXS"),
    ("Llama-3.2-3B-Instruct-Q4_K_L.gguf", "Q4_K_L"),
    ("Qwen3-30B-A3B-UD-Q4_K_XL.gguf", "UD-Q4_K_XL"),
    ("Bonsai-8B-Q1_0.gguf", "Q1_0"),
    ("DeepSeek-R1-UD-IQ1_S-00001-of-00003.gguf", "UD-IQ1_S"),
    ("Llama-3.2-1B-Instruct-f16.gguf", "F16"),
    ("gemma-3-4b-it-bf16.gguf", "BF16"),
    ("gpt-oss-20b-MXFP4.gguf", "MXFP4"),
    ("qwen2.5-0.5b-instruct-q4_k_m.gguf", "Q4_K_M"),
    ("tinyllama-1.1b-chat-v1.0.Q6_K.gguf", "Q6_K"),
    ("Meta-Llama-3.1-8B-Instruct-IQ4_XS.gguf", "IQ4_XS"),
    ("gemma-2-9b-it-Q4_K_M-fp16.gguf", "Q4_K_M"),
    ("some-model.gguf", None),
])
def test_quant_from_file_name(name, quant):
    assert parse_quant(name) == quant


def test_next_link_reads_the_rel_next_target():
    header = '<https://huggingface.co/api/models/a/b/tree/main?cursor=xyz>; rel="next"'
    assert next_link(header) == "https://huggingface.co/api/models/a/b/tree/main?cursor=xyz"
    assert next_link('<https://x/y>; rel="prev"') is None
    assert next_link(None) is None


def _tree(path, size, sha=None):
    lfs = {"size": size, "pointerSize": 134}
    if sha:
        lfs["oid"] = sha
    return {"type": "file", "oid": "0" * 40, "size": size, "path": path, "lfs": lfs}


def _hub(srv: LoopbackServer) -> None:
    """A Hub with one split repo over two pages and one gated base model."""
    repo = "example/Split-GGUF"
    page1 = [
        {"type": "file", "oid": "1" * 40, "size": 1519, "path": ".gitattributes"},
        {"type": "directory", "oid": "2" * 40, "size": 0, "path": "Q8_0"},
        _tree("Split-Q4_K_M.gguf", 4_000_000_000, "a" * 64),
        _tree("Q8_0/Split-Q8_0-00001-of-00002.gguf", 5_000_000_000),
        _tree("mmproj-Split-f16.gguf", 800_000_000),
    ]
    page2 = [_tree("Q8_0/Split-Q8_0-00002-of-00002.gguf", 3_500_000_000)]

    def tree(req):
        if req.query.get("cursor") == ["p2"]:
            return Reply(200, json.dumps(page2), {"Content-Type": "application/json"})
        link = f'<{srv.url}/api/models/{repo}/tree/main?recursive=true&cursor=p2>; rel="next"'
        return Reply(200, json.dumps(page1), {"Content-Type": "application/json", "Link": link})

    srv.route(f"/api/models/{repo}/tree/main", tree)
    srv.route("/example/Split/resolve/main/config.json", Reply(200, json.dumps({
        "model_type": "llama", "num_hidden_layers": 16, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 2048, "max_position_embeddings": 131072})))
    srv.route("/gated/Model/resolve/main/config.json", Reply(401, "Access to model gated/Model is restricted."))
    srv.route("/robots.txt", Reply(200, "User-agent: *\nAllow: /\n"))


def _fetch(home, srv, source) -> RawStore:
    store = RawStore(home / "raw")
    with PoliteClient(max_rps=1000, retries=0) as client:
        ctx = FetchContext(source="huggingface", base_url=srv.url, client=client, store=store,
                           parser_version=source.parser_version, log=lambda m: None)
        source.fetch(ctx)
    return store


def test_fetch_follows_pages_skips_gated_and_lands_files_and_configs(home):
    source = HuggingFaceSource(repos=[(["example/Split-GGUF", "gone/Missing-GGUF"], "example/Split"),
                                       ([], "gated/Model")])
    with LoopbackServer() as srv:
        _hub(srv)
        store = _fetch(home, srv, source)
        paths = srv.paths()
    assert paths.count("/api/models/example/Split-GGUF/tree/main") == 2  # both pages
    assert "/gated/Model/resolve/main/config.json" in paths  # tried, skipped, not fatal
    assert "/api/models/gone/Missing-GGUF/tree/main" in paths  # 404: skipped, not fatal
    outcomes = Lander(home / "landing", store, log=lambda m: None).land_pending(source)
    assert [o.status for o in outcomes] == ["landed"] * 3
    con = duckdb.connect()
    files = con.execute(
        f"select path, quant, size_bytes, split_index, split_count, build_file_name from read_parquet("
        f"'{home}/landing/huggingface/files/*.parquet', union_by_name=true) order by path").fetchall()
    assert files == [
        ("Q8_0/Split-Q8_0-00001-of-00002.gguf", "Q8_0", 5_000_000_000, 1, 2, "Split-Q8_0.gguf"),
        ("Q8_0/Split-Q8_0-00002-of-00002.gguf", "Q8_0", 3_500_000_000, 2, 2, "Split-Q8_0.gguf"),
        ("Split-Q4_K_M.gguf", "Q4_K_M", 4_000_000_000, None, None, "Split-Q4_K_M.gguf"),
    ]
    config = con.execute(
        f"select repo, num_hidden_layers, num_key_value_heads, head_dim, is_head_dim_derived, "
        f"max_position_embeddings from read_parquet('{home}/landing/huggingface/configs/*.parquet', "
        f"union_by_name=true)").fetchall()
    assert config == [("example/Split", 16, 8, 64, True, 131072)]


def test_config_in_text_config_and_explicit_head_dim():
    frame = HuggingFaceSource.parse_config("google/gemma-3-4b-it", {
        "model_type": "gemma3", "text_config": {"head_dim": 256, "hidden_size": 2560, "num_attention_heads": 8,
                                                "num_hidden_layers": 34, "num_key_value_heads": 4,
                                                "max_position_embeddings": 131072, "sliding_window": 1024}})
    row = frame.iloc[0]
    assert (row.num_hidden_layers, row.num_key_value_heads, row.head_dim, bool(row.is_head_dim_derived)) == (34, 4, 256, False)
    assert row.sliding_window == 1024


def test_parse_rejects_what_is_not_a_listing():
    source = HuggingFaceSource()
    from ingest.raw_store import RawEntry
    entry = RawEntry("huggingface", "https://huggingface.co/api/models/a/b/tree/main", "2026-01-01T00:00:00Z",
                     200, "0" * 64, 3, "json", "x")
    with pytest.raises(PayloadRejected):
        source.parse(b"not json", entry)
    with pytest.raises(PayloadRejected):
        source.parse(b'{"error": "Repository not found"}', entry)


def test_catalogue_csv_gives_the_repos(tmp_path):
    path = tmp_path / "model_catalogue.csv"
    path.write_text("model_id,hf_base_repo,hf_gguf_repos\n"
                    "llama-3.2-1b-instruct,meta-llama/Llama-3.2-1B-Instruct,"
                    "bartowski/Llama-3.2-1B-Instruct-GGUF;unsloth/Llama-3.2-1B-Instruct-GGUF\n"
                    "unknown,,\n")
    assert read_catalogue(path) == [(["bartowski/Llama-3.2-1B-Instruct-GGUF", "unsloth/Llama-3.2-1B-Instruct-GGUF"],
                                     "meta-llama/Llama-3.2-1B-Instruct")]
    assert HuggingFaceSource(catalogue=path).repos()[0][1] == "meta-llama/Llama-3.2-1B-Instruct"


def test_recording_lands_the_catalogue_models_with_real_numbers(home):
    assert "huggingface" in load_sources(include_external=False)
    source = HuggingFaceSource()
    store = RawStore(home / "raw")
    replay_into_store("huggingface", store, source.parser_version)
    outcomes = Lander(home / "landing", store, log=lambda m: None).land_pending(source)
    assert outcomes and all(o.status == "landed" for o in outcomes)
    con = duckdb.connect()
    size = con.execute(
        f"select size_bytes, quant from read_parquet('{home}/landing/huggingface/files/*.parquet', union_by_name=true) "
        f"where file_name = 'Llama-3.2-1B-Instruct-Q4_K_M.gguf'").fetchall()
    assert size == [(807_694_464, "Q4_K_M")]
    configs = dict(
        (r[0], r[1:]) for r in con.execute(
            f"select repo, num_hidden_layers, num_key_value_heads, head_dim, max_position_embeddings "
            f"from read_parquet('{home}/landing/huggingface/configs/*.parquet', union_by_name=true)").fetchall())
    assert configs["meta-llama/Llama-3.2-1B-Instruct"] == (16, 8, 64, 131072)
    assert configs["meta-llama/Llama-3.1-8B-Instruct"] == (32, 8, 128, 131072)
    assert configs["Qwen/Qwen2.5-7B-Instruct"] == (28, 4, 128, 32768)
    assert configs["google/gemma-3-4b-it"] == (34, 4, 256, 131072)
    # the Q8_0 of the 1B sits on the listing's second page
    n = con.execute(f"select count(*) from read_parquet('{home}/landing/huggingface/files/*.parquet') "
                    f"where repo = 'bartowski/Llama-3.2-1B-Instruct-GGUF'").fetchone()[0]
    assert n == 3
