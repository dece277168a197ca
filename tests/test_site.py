"""Site tables after `benchwh refresh --offline`: every one has rows and is exported."""
from __future__ import annotations

import json

import duckdb
import pytest

pytestmark = pytest.mark.slow

SITE_TABLES = [
    "generation_leaderboard", "model_speeds_by_hardware", "model_memory_by_quant",
    "model_expected_speed", "model_builds", "model_cost_vs_api", "model_carbon", "model_context_recall",
    "model_contributors", "model_fits_on", "model_capabilities", "models", "hardware",
]


def test_every_site_table_has_rows_and_is_in_the_manifest(offline_warehouse):
    con = duckdb.connect(str(offline_warehouse / "benchmarks.duckdb"), read_only=True)
    try:
        counts = {t: con.execute(f"select count(*) from site.{t}").fetchone()[0] for t in SITE_TABLES}
    finally:
        con.close()
    empty = [t for t, n in counts.items() if n == 0]
    assert not empty, f"empty site tables: {empty}"
    manifest = json.loads((offline_warehouse / "exports" / "manifest.json").read_text())
    for table in SITE_TABLES:
        assert manifest["tables"][f"site.{table}"]["rows"] == counts[table]


def test_leaderboard_ranks_are_consistent(offline_warehouse):
    con = duckdb.connect(str(offline_warehouse / "benchmarks.duckdb"), read_only=True)
    try:
        bad = con.execute("""
            select count(*) from site.generation_leaderboard
            where not (1 <= rank_best and rank_best <= rank_worst and rank_worst <= rank_of)
               or gen_tps_ci_low > gen_tps_median or gen_tps_median > gen_tps_ci_high""").fetchone()[0]
        n = con.execute("select count(*) from site.generation_leaderboard").fetchone()[0]
    finally:
        con.close()
    assert n > 0 and bad == 0


def test_the_offline_signed_run_reaches_the_recall_capability_and_contributor_tables(offline_warehouse):
    # the bundled signed run says its walk stopped because the model forgot at 128K
    con = duckdb.connect(str(offline_warehouse / "benchmarks.duckdb"), read_only=True)
    try:
        recall = con.execute("""
            select context_tokens, recalled, stop_reason, contributor from site.model_context_recall
            where model_id = 'llama-3.1-8b-instruct' and is_asked order by context_tokens""").fetchall()
        not_asked = con.execute("""
            select context_tokens, cell_state from site.model_context_recall
            where model_id = 'llama-3.1-8b-instruct' and not is_asked order by context_tokens""").fetchall()
        caps = con.execute("""
            select display_name, passed from site.model_capabilities
            where model_id = 'llama-3.1-8b-instruct' order by 1""").fetchall()
        who = con.execute("""
            select contributor, n_runs from site.model_contributors
            where model_id = 'llama-3.1-8b-instruct'""").fetchall()
        contributors = con.execute("select distinct contributor from site.model_contributors").fetchall()
    finally:
        con.close()
    assert recall == [(4096, True, "forgot", "benchwh demo"), (32768, True, "forgot", "benchwh demo"),
                      (131072, False, "forgot", "benchwh demo")]
    # the grid's other standard sizes up to the trained 128K, not asked
    assert not_asked == [(8192, "not_asked"), (16384, "not_asked"), (65536, "not_asked")]
    assert caps == [("Structured output", True), ("Tool calling", False)]
    # the signed run and the demo board's 7 runs of the same model, all signed by the one demo key
    assert who == [("benchwh demo", 8)] and contributors == [("benchwh demo",)]
