"""Models resolved through the Hugging Face Hub (issue #15 item 1), from the published tables.

The generation leaderboard of ../shared/reference-pages/leaderboard-generation-1k.txt becomes 13
signed run files, each naming its GGUF repository (`model.repo`), plus a run of an abliterated
Llama 3.2 3B from mlabonne's GGUF repo. The Hub recording (ingest/snapshots/huggingface/, model
infos in the real API shape, synthetic for the models newer than our numbers) is replayed and
landed, the runs are added with the real `runs add`, and the real dbt project builds it all.
"""
from __future__ import annotations

import json

import duckdb
import pytest

from ingest.landing import Lander
from ingest.raw_store import RawStore
from ingest.source import load_sources
from ingest.sources.hub_models import named_repos, parse_model_info, repo_of_name
from ingest.sources.huggingface import HuggingFaceSource
from ingest.sources.runs import dsse
from ingest.sources.runs.add import add_paths
from ingest.sources.runs.payload import build_payload, payload_bytes
from tests.helpers.dbt_build import dbt_build, query
from tests.helpers.keys import trust
from tests.helpers.landing import land_recording, lay_out

SELECT = ["+dim_model", "+fct_memory_requirements", "+generation_leaderboard", "+fct_speed_summary",
          "+resolution_shares", "+unresolved_names"]
RTX_4090 = {"gpu": "NVIDIA GeForce RTX 4090", "gpu_count": 1, "gpu_memory_gb": 24, "cpu": "AMD Ryzen 9 7950X",
            "ram_gb": 64, "os": "Linux", "country": "DE"}

# (page name, quant, repo, file, file size, median tok/s on the page, family on the page)
LEADERBOARD = [
    ("SmolLM2 1.7B Instruct", "Q4_K_M", "bartowski/SmolLM2-1.7B-Instruct-GGUF",
     "SmolLM2-1.7B-Instruct-Q4_K_M.gguf", 1055609824, 354, "SmolLM"),
    ("Ling 3.0 Tiny", "Q4_K_M", "inclusionAI/Ling-3.0-Tiny-GGUF", "Ling-3.0-Tiny-Q4_K_M.gguf", 1613000000, 267, "Ling"),
    ("Gemma 4 E2B Instruct QAT", "UD-Q4_K_XL", "unsloth/gemma-4-E2B-it-qat-GGUF",
     "gemma-4-E2B-it-qat-UD-Q4_K_XL.gguf", 3018000000, 259, "Gemma"),
    ("Llama 3.2 3B Instruct", "Q4_K_M", "bartowski/Llama-3.2-3B-Instruct-GGUF",
     "Llama-3.2-3B-Instruct-Q4_K_M.gguf", 2019377696, 256, "Llama"),
    ("Bonsai 8B", "Q1_0", "prism-ml/Bonsai-8B-GGUF", "Bonsai-8B-Q1_0.gguf", 1163000000, 238, "Bonsai"),
    ("Bonsai 8B", "Q2_0", "prism-ml/Bonsai-8B-GGUF", "Bonsai-8B-Q2_0.gguf", 2176000000, 221, "Bonsai"),
    ("Granite 4.2 3B Instruct", "Q4_K_M", "ibm-granite/granite-4.2-3b-instruct-GGUF",
     "granite-4.2-3b-instruct-Q4_K_M.gguf", 2101000000, 200, "Granite"),
    ("Ministral 3 3B Instruct", "Q4_K_M", "mistralai/Ministral-3-3B-Instruct-2512-GGUF",
     "Ministral-3-3B-Instruct-2512-Q4_K_M.gguf", 2147000000, 189, "Ministral"),
    ("Qwen 3.5 4B", "Q4_K_M", "unsloth/Qwen3.5-4B-GGUF", "Qwen3.5-4B-Q4_K_M.gguf", 2740000000, 174, "Qwen"),
    ("Gemma 4 E4B Instruct", "Q4_K_M", "ggml-org/gemma-4-E4B-it-GGUF", "gemma-4-E4B-it-Q4_K_M.gguf",
     4977000000, 143, "Gemma"),
    ("Llama 3.1 8B Instruct", "Q4_K_M", "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",
     "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", 4920739232, 134, "Llama"),
    ("Granite 4.2 8B Instruct", "Q4_K_M", "ibm-granite/granite-4.2-8b-instruct-GGUF",
     "granite-4.2-8b-instruct-Q4_K_M.gguf", 4942000000, 112, "Granite"),
    ("Ministral 3 8B Instruct", "Q4_K_M", "mistralai/Ministral-3-8B-Instruct-2512-GGUF",
     "Ministral-3-8B-Instruct-2512-Q4_K_M.gguf", 5200000000, 105, "Ministral"),
]
ABLITERATED = ("Llama 3.2 3B Instruct abliterated", "Q4_K_M", "mlabonne/Llama-3.2-3B-Instruct-abliterated-GGUF",
               "llama-3.2-3b-instruct-abliterated.Q4_K_M.gguf", 2019377824, 999, "Llama")


def run_doc(name, quant, repo, file, size, tps, day) -> dict:
    # ten repetitions around the page's median, as the page measured them
    return build_payload(
        machine=RTX_4090, engine={"name": "llama.cpp", "version": "b6000", "backend": "CUDA"},
        model={"name": name, "repo": repo, "file": file, "quant": quant, "file_size_bytes": size},
        protocol={"name": "gen-1k", "prompt_tokens": 1000, "gen_tokens": 200, "sampling": {"temperature": 0}},
        samples=[{"prompt_tokens": 1150, "gen_tokens": 200, "ttft_ms": 200.0, "gen_tps": tps + d}
                 for d in (-1.0, -0.5, 0.0, 0.0, 0.5, 1.0, -0.2, 0.2, 0.3, -0.3)],
        created_at=f"2026-11-{day:02d}T10:00:00Z")


@pytest.fixture(scope="module")
def hub_build(tmp_path_factory):
    work = tmp_path_factory.mktemp("hub")
    home = work / "warehouse"
    home.mkdir()
    dsse.write_private_key(work / "k.pem")
    key = dsse.load_private_key(work / "k.pem")
    trust(home, key, "alice")
    paths = []
    for i, row in enumerate(LEADERBOARD + [ABLITERATED]):
        path = work / "inbox" / f"run{i:02d}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(dsse.sign_payload(payload_bytes(run_doc(*row[:6], day=1 + i)), key)))
        paths.append(path)
    results = add_paths(paths, home, log=lambda m: None)
    assert [r.status for r in results] == ["accepted"] * len(paths), [r.line() for r in results]
    lay_out(home, load_sources().values())  # the project reads every source
    assert {o.status for o in land_recording(home, HuggingFaceSource())} == {"landed"}
    return home, dbt_build(home, work, SELECT, "--indirect-selection", "cautious")


def test_model_info_is_read_in_the_hubs_shape():
    info = parse_model_info("mlabonne/X-GGUF", {
        "_id": "1", "id": "mlabonne/X-GGUF", "tags": ["gguf", "base_model:quantized:mlabonne/X"],
        "cardData": {"base_model": ["mlabonne/X"], "license": "other", "license_name": "llama3.2"},
        "gguf": {"total": 3212749824, "architecture": "llama", "context_length": 131072}}).iloc[0]
    assert (info.base_model, info.base_model_relation, info.license, info.gguf_params) == (
        "mlabonne/X", "quantized", "llama3.2", 3212749824)
    assert repo_of_name("hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M") == "bartowski/Llama-3.2-3B-Instruct-GGUF"
    assert repo_of_name("llama3.2:3b") is None


def test_the_hub_is_asked_only_about_repos_landed_runs_name(hub_build):
    home, _ = hub_build
    assert named_repos(home / "landing") == sorted({r[2] for r in LEADERBOARD + [ABLITERATED]})


def test_thirteen_of_thirteen_leaderboard_models_resolve_with_family_params_and_memory(hub_build):
    _, db = hub_build
    board = query(db, """
        select b.model_name, b.quant, b.family_display, m.is_resolved, m.params_b, m.num_hidden_layers,
               (select count(*) from marts.fct_memory_requirements as f
                where f.build_id = b.build_id and f.is_default_context) as n_memory
        from site.generation_leaderboard as b join marts.dim_model as m using (model_id)
        where b.model_name not ilike '%abliterated%'
        order by b.gen_tps_median desc""")
    assert [(r[0], r[1]) for r in board] == [(r[0], r[1]) for r in LEADERBOARD]
    assert [r[2] for r in board] == [r[6] for r in LEADERBOARD]  # the page's Family column
    for name, quant, _, resolved, params, layers, n_memory in board:
        assert resolved and params and params > 1 and layers and n_memory == 1, (name, quant)
    assert not any(r[0].startswith("unresolved:") for r in query(db, "select model_id from marts.dim_model"))
    assert query(db, "select model_resolved_share from audit.resolution_shares where source = 'runfile'") == [(1.0,)]
    assert query(db, "select count(*) from audit.unresolved_names where kind = 'model'") == [(0,)]


def test_hub_models_carry_licence_architecture_and_their_own_ids(hub_build):
    _, db = hub_build
    got = {r[0]: r[1:] for r in query(db, """
        select model_id, resolved_by, family, license, architecture, num_hidden_layers, num_key_value_heads,
               head_dim, trained_context_tokens, round(params_b, 2), hf_base_repo
        from marts.dim_model where model_id in ('granite-4.2-3b-instruct', 'gemma-4-e4b-it', 'bonsai-8b',
                                                'llama-3.2-3b-instruct', 'ministral-3-8b-instruct-2512')""")}
    assert got["granite-4.2-3b-instruct"] == ("hub", "granite4", "apache-2.0", "granite", 40, 8, 64, 131072, 3.4,
                                              "ibm-granite/granite-4.2-3b-instruct")
    # the language model of a multimodal config sits in text_config
    assert got["gemma-4-e4b-it"][:8] == ("hub", "gemma4", "gemma", "gemma4_text", 35, 2, 256, 131072)
    assert got["bonsai-8b"][1] == "bonsai"  # "8B" is a size, not a version
    assert got["ministral-3-8b-instruct-2512"][1:3] == ("ministral3", "apache-2.0")
    # a catalogued model named by its repo keeps the catalogue's id and gains the card's licence
    assert got["llama-3.2-3b-instruct"][:4] == ("catalogue", "llama3", "llama3.2", "llama")
    # memory: Granite 4.2 3B at the default context = file + KV cache (40 layers x 8 heads x 64) + overheads
    [(weights, kv, context)] = query(db, """
        select weights_bytes, kv_cache_bytes, context_tokens from marts.fct_memory_requirements
        where model_id = 'granite-4.2-3b-instruct' and is_default_context""")
    assert weights == 2101000000 and kv == 2 * 40 * context * 8 * 64 * 2


def test_an_abliterated_fine_tune_keeps_its_own_id_and_links_its_base(hub_build):
    _, db = hub_build
    [(model_id, base, resolved_by, family_display)] = query(db, """
        select model_id, base_model_id, resolved_by, family_display from marts.dim_model
        where hf_gguf_repos = 'mlabonne/Llama-3.2-3B-Instruct-abliterated-GGUF'""")
    assert model_id == "llama-3.2-3b-instruct-abliterated" and base == "llama-3.2-3b-instruct"
    assert (resolved_by, family_display) == ("hub", "Llama")
    assert query(db, "select base_model_id from marts.dim_model where model_id = 'llama-3.2-3b-instruct'") == [(None,)]
    # its 999 tok/s are its own rows, never the base model's (256 tok/s)
    base_rows = query(db, """select n_runs, gen_tps_median from marts.fct_speed_summary
                             where model_id = 'llama-3.2-3b-instruct'""")
    assert base_rows == [(1, 256.0)]
    assert query(db, f"select n_runs, gen_tps_median from marts.fct_speed_summary where model_id = '{model_id}'") \
        == [(1, 999.0)]
    board = dict(query(db, "select model_id, gen_tps_median from site.generation_leaderboard"))
    assert board["llama-3.2-3b-instruct"] == 256.0 and board[model_id] == 999.0


def test_vendor_instruct_releases_are_not_linked_as_fine_tunes(hub_build):
    _, db = hub_build
    # google/gemma-4-E2B-it-qat's card names google/gemma-4-E2B-it as its base: the same owner
    assert query(db, "select base_model_id, family_display from marts.dim_model where model_id = 'gemma-4-e2b-it-qat'") \
        == [(None, "Gemma")]


def test_landed_model_infos_in_a_duckdb_read(hub_build):
    home, _ = hub_build
    n = duckdb.connect().execute(f"select count(*) from read_parquet('{home}/landing/huggingface/model_infos/*.parquet', "
                   f"union_by_name=true) where base_model_relation = 'quantized'").fetchone()[0]
    assert n == 13  # one per GGUF repo recorded


def test_live_fetch_asks_only_about_named_repos_follows_the_card_and_revalidates_by_etag(home, tmp_path):
    from ingest.http import PoliteClient
    from ingest.source import FetchContext
    from tests.helpers.loopback import LoopbackServer, Reply

    dsse.write_private_key(tmp_path / "k.pem")
    key = dsse.load_private_key(tmp_path / "k.pem")
    trust(home, key, "alice")
    docs = [run_doc("Tune", "Q4_K_M", "someone/Tune-GGUF", "Tune-Q4_K_M.gguf", 10**9, 100, 1),
            run_doc("hf.co/other/Thing-GGUF:Q4_K_M", "Q4_K_M", None, "Thing-Q4_K_M.gguf", 10**9, 100, 2)]
    paths = []
    for i, doc in enumerate(docs):
        if doc["model"].get("repo") is None:
            doc["model"].pop("repo", None)
        paths.append(tmp_path / f"r{i}.json")
        paths[-1].write_text(json.dumps(dsse.sign_payload(payload_bytes(doc), key)))
    assert [r.status for r in add_paths(paths, home, log=lambda m: None)] == ["accepted", "accepted"]
    assert named_repos(home / "landing") == ["other/Thing-GGUF", "someone/Tune-GGUF"]

    infos = {
        "someone/Tune-GGUF": {"id": "someone/Tune-GGUF", "tags": ["gguf"], "gguf": {"total": 8 * 10**9},
                              "cardData": {"base_model": "someone/Tune"}},
        "someone/Tune": {"id": "someone/Tune", "tags": ["base_model:finetune:vendor/Base"],
                         "cardData": {"base_model": "vendor/Base", "license": "mit"}, "safetensors": {"total": 8 * 10**9}},
        "vendor/Base": {"id": "vendor/Base", "cardData": {"license": "apache-2.0"}, "safetensors": {"total": 8 * 10**9}},
    }

    def info(repo):
        def reply(req):
            if req.headers.get("if-none-match") == f'"{repo}"':
                return Reply(304, b"", {"ETag": f'"{repo}"'})
            return Reply(200, json.dumps(infos[repo]), {"Content-Type": "application/json", "ETag": f'"{repo}"'})
        return reply

    config = json.dumps({"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
                         "num_key_value_heads": 8, "hidden_size": 4096, "max_position_embeddings": 131072})
    source = HuggingFaceSource(repos=[])
    store = RawStore(home / "raw")
    with LoopbackServer() as srv:
        for repo in infos:
            srv.route(f"/api/models/{repo}", info(repo))
        srv.route("/api/models/other/Thing-GGUF", Reply(404, '{"error": "Repository not found"}'))
        srv.route("/api/models/someone/Tune-GGUF/tree/main", Reply(200, json.dumps([
            {"type": "file", "oid": "0" * 40, "size": 10**9, "path": "Tune-Q4_K_M.gguf", "lfs": {"size": 10**9}}])))
        srv.route("/someone/Tune/resolve/main/config.json", Reply(200, config, {"ETag": '"c1"'}))
        srv.route("/vendor/Base/resolve/main/config.json", Reply(200, config, {"ETag": '"c2"'}))
        srv.route("/robots.txt", Reply(200, "User-agent: *\nAllow: /\n"))
        for _ in range(2):
            with PoliteClient(max_rps=1000, retries=0) as client:
                source.fetch(FetchContext(source="huggingface", base_url=srv.url, client=client, store=store,
                                          parser_version=source.parser_version, log=lambda m: None))
        asked = [(r.path, r.headers.get("if-none-match")) for r in srv.requests if r.path != "/robots.txt"]
    first, second = asked[:len(asked) // 2], asked[len(asked) // 2:]
    assert [p for p, _ in first] == [
        "/api/models/other/Thing-GGUF",  # the Ollama tag's repo: 404, skipped
        "/api/models/someone/Tune-GGUF", "/api/models/someone/Tune-GGUF/tree/main",
        "/api/models/someone/Tune", "/someone/Tune/resolve/main/config.json",
        "/api/models/vendor/Base", "/vendor/Base/resolve/main/config.json"]
    # the second fetch revalidates every info by its ETag and still follows the chain from the stored bodies
    assert [p for p, _ in second] == [p for p, _ in first]
    assert dict(second)["/api/models/vendor/Base"] == '"vendor/Base"'
    outcomes = Lander(home / "landing", store, log=lambda m: None).land_pending(source)
    assert outcomes and {o.status for o in outcomes} <= {"landed", "rejected"}
    got = duckdb.connect().execute(
        f"select repo, base_model, base_model_relation, license from read_parquet("
        f"'{home}/landing/huggingface/model_infos/*.parquet', union_by_name=true) order by repo").fetchall()
    assert got == [("someone/Tune", "vendor/Base", "finetune", "mit"),
                   ("someone/Tune-GGUF", "someone/Tune", None, None),
                   ("vendor/Base", None, None, "apache-2.0")]
