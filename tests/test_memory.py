"""Memory facts as published by `benchwh refresh --offline` (the bundled recordings)."""
from __future__ import annotations

import duckdb
import pytest

pytestmark = pytest.mark.slow

# builds are model x quant x file: bartowski's file of the Hugging Face listing
BUILD = "llama-3.2-1b-instruct@Q4_K_M@bartowski/llama-3.2-1b-instruct-gguf/Llama-3.2-1B-Instruct-Q4_K_M.gguf"
QWEN = "qwen2.5-7b-instruct@Q4_K_M@bartowski/qwen2.5-7b-instruct-gguf/Qwen2.5-7B-Instruct-Q4_K_M.gguf"


def _rows(db, sql, *params):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def test_llama_3_2_1b_q4_k_m_estimate_and_smallest_card(offline_warehouse):
    db = offline_warehouse / "benchmarks.duckdb"
    [(weights, kv, estimated, card_id, card_name, card_bytes, context)] = _rows(db, """
        select m.weights_bytes, m.kv_cache_bytes, m.estimated_bytes, m.smallest_card_hardware_id,
               m.smallest_card_name, m.smallest_card_memory_bytes, m.context_tokens
        from marts.fct_memory_requirements m
        where m.build_id = ? and m.is_default_context""", BUILD)
    assert weights == 807_694_464  # the GGUF file size from the Hugging Face listing
    # 2 x 16 layers x ctx x 8 KV heads x 64 dims x 2 bytes
    assert kv == 2 * 16 * context * 8 * 64 * 2
    assert 1.2e9 <= estimated <= 2.0e9
    assert card_id and card_name
    # the card holds the estimate, and no catalogue card with less memory would
    assert card_bytes >= estimated
    [(smaller,)] = _rows(db, """
        select count(*) from marts.dim_hardware
        where kind = 'gpu' and is_catalogued and memory_bytes < ? and memory_bytes >= ?""",
                         card_bytes, estimated)
    assert smaller == 0
    # the page table names the same card
    [(page_card, page_estimate)] = _rows(db, """
        select smallest_card_name, estimated_bytes from site.model_memory_by_quant where build_id = ?""", BUILD)
    assert (page_card, page_estimate) == (card_name, estimated)


def test_contexts_stop_at_the_trained_context(offline_warehouse):
    db = offline_warehouse / "benchmarks.duckdb"
    qwen = [r[0] for r in _rows(db, """
        select context_tokens from marts.fct_memory_requirements
        where build_id = ? order by 1""", QWEN)]
    assert qwen == [4096, 8192, 16384, 32768]  # Qwen2.5 7B: max_position_embeddings 32768
    llama = [r[0] for r in _rows(db, """
        select context_tokens from marts.fct_memory_requirements
        where build_id = ? order by 1""", BUILD)]
    assert llama == [4096, 8192, 16384, 32768, 65536, 131072]
