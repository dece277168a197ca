"""The OpenRouter and grid marts of a real build of the bundled offline recordings.

The recordings (ingest/snapshots/openrouter, ingest/snapshots/grid) hold five /models bodies with
daily 304s between them (45 observations, 2026-10-05 .. 2026-11-18): qwen-2.5-7b changes its price
on 10-12, gemma-2-9b disappears on 10-19, phi-3.5-mini is missing on 10-19 and back on 10-26, and
the 11-09 body omits zero-valued price keys without changing any price.
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from ingest.landing import Lander
from ingest.raw_store import RawStore
from ingest.sources.grid import GridSource
from ingest.sources.openrouter import OpenRouterSource
from tests.helpers.dbt_build import dbt_build, query

SELECT = ["+fct_api_prices", "+fct_grid_intensity"]
SOURCES = (OpenRouterSource(), GridSource())


@pytest.fixture(scope="module")
def offline_build(offline_warehouse):
    """The published file of the suite's shared `refresh --offline`: a real dbt build of these
    recordings (beside the other sources', which these marts do not read). Read only."""
    return offline_warehouse, offline_warehouse / "benchmarks.duckdb"


def ranges(db: Path, openrouter_id: str) -> list[tuple]:
    return query(db, f"""
        select valid_from, valid_to, prompt_usd_per_mtok, completion_usd_per_mtok, is_current, n_observations
        from marts.fct_api_prices where openrouter_id = '{openrouter_id}' order by valid_from""")


def t(day: str) -> datetime:
    return datetime.fromisoformat(f"2026-{day}T06:00:07")


def test_price_change_gives_two_ranges(offline_build):
    _, db = offline_build
    assert ranges(db, "qwen/qwen-2.5-7b-instruct") == [
        (t("10-05"), t("10-12"), 0.04, 0.1, False, 7),
        (t("10-12"), None, 0.04, 0.09, True, 38),
    ]


def test_unchanged_price_over_all_snapshots_is_one_row(offline_build):
    _, db = offline_build
    # 45 observations, four body changes (one only dropping zero-valued keys): still one range
    assert ranges(db, "meta-llama/llama-3.2-1b-instruct") == [(t("10-05"), None, 0.005, 0.01, True, 45)]


def test_disappearing_model_is_closed_and_reappearing_model_reopens(offline_build):
    _, db = offline_build
    assert ranges(db, "google/gemma-2-9b-it") == [(t("10-05"), t("10-19"), 0.03, 0.09, False, 14)]
    assert [(r[0], r[1]) for r in ranges(db, "microsoft/phi-3.5-mini-128k-instruct")] == [
        (t("10-05"), t("10-19")), (t("10-26"), None)]


def test_router_with_dynamic_prices_is_not_in_marts_and_ids_are_canonicalised(offline_build):
    _, db = offline_build
    assert query(db, "select count(*) from marts.fct_api_prices where openrouter_id = 'openrouter/auto'") == [(0,)]
    assert query(db, """select is_free, is_free_variant from marts.fct_api_prices
                        where openrouter_id = 'meta-llama/llama-3.3-70b-instruct:free'""") == [(True, True)]
    # the `:free` variant is the same canonical model as the paid id
    assert query(db, """select count(distinct model_id) from marts.fct_api_prices
                        where openrouter_id in ('meta-llama/llama-3.3-70b-instruct',
                                                'meta-llama/llama-3.3-70b-instruct:free')""") == [(1,)]
    # an id no seed knows keeps a provisional id instead of a null
    assert query(db, """select model_id, is_model_in_catalogue from marts.fct_api_prices
                        where openrouter_id = 'liquid/lfm-2.2-6b'""") == [("unresolved:lfm-2.2-6b", False)]
    # one open range per listed model of the latest snapshot (30 listed, the router without a fixed price left out)
    assert query(db, "select count(*) from marts.fct_api_prices where is_current") == [(29,)]


def test_grid_mart_holds_the_latest_export(offline_build):
    _, db = offline_build
    assert query(db, "select iso3, gco2_per_kwh from marts.fct_grid_intensity where area = 'World' and year = 2024") \
        == [(None, 474.6)]
    assert query(db, "select count(*), count(distinct area) from marts.fct_grid_intensity") == [(261, 34)]
    assert query(db, "select gco2_per_kwh from marts.fct_grid_intensity where iso3 = 'FRA' and year = 2025") != []


def test_build_file_holds_only_published_schemas(offline_build):
    _, db = offline_build
    schemas = {r[0] for r in query(db, "select distinct schema_name from duckdb_tables()")}
    assert "staging" not in schemas and "marts" in schemas


def test_empty_manifests_and_landing_build_empty_marts(tmp_path):
    """A fresh home (layout only, empty manifest.jsonl files) builds, with zero rows."""
    home = tmp_path / "warehouse"
    store = RawStore(home / "raw")
    lander = Lander(home / "landing", store, log=lambda m: None)
    for src in SOURCES:
        lander.ensure_layout(src)
    assert (home / "raw" / "openrouter" / "manifest.jsonl").read_bytes() == b""
    db = dbt_build(home, tmp_path, SELECT, timeout=600)
    assert query(db, "select count(*) from marts.fct_api_prices") == [(0,)]
    assert query(db, "select count(*) from marts.fct_grid_intensity") == [(0,)]
