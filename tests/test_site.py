"""Site tables after `benchwh refresh --offline`: every one has rows and is exported."""
from __future__ import annotations

import json

import duckdb
import pytest

pytestmark = pytest.mark.slow

SITE_TABLES = [
    "generation_leaderboard", "model_speeds_by_hardware", "model_memory_by_quant",
    "model_expected_speed", "model_builds", "model_cost_vs_api", "model_carbon", "model_context_recall",
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
