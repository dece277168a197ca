"""`benchwh refresh --offline` end to end: publish, exports, self-containment, replay from raw."""
from __future__ import annotations

import json
import shutil

import duckdb
import pytest

from tests.helpers.pipeline import file_sha256, row_hashes, run_benchwh, table_counts

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def offline_home(offline_warehouse):
    return offline_warehouse, None


def test_publishes_prices_and_grid(offline_home):
    home, _ = offline_home
    counts = table_counts(home / "benchmarks.duckdb")
    assert counts["marts.fct_api_prices"] > 0
    assert counts["marts.fct_grid_intensity"] > 0


def test_published_file_is_self_contained(offline_home):
    home, _ = offline_home
    db = home / "benchmarks.duckdb"
    assert not (home / "benchmarks.duckdb.wal").exists()
    con = duckdb.connect(str(db), read_only=True)
    try:
        schemas = {r[0] for r in con.execute("SELECT DISTINCT schema_name FROM duckdb_tables()").fetchall()}
        views = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    finally:
        con.close()
    assert schemas <= {"marts", "site", "audit"}, schemas
    assert views == []
    # a copy elsewhere still answers: nothing points back at landing files
    copy = home.parent / "elsewhere.duckdb"
    shutil.copy(db, copy)
    assert table_counts(copy) == table_counts(db)


def test_exports_and_manifest(offline_home):
    home, _ = offline_home
    manifest = json.loads((home / "exports" / "manifest.json").read_text())
    counts = table_counts(home / "benchmarks.duckdb")
    exported = {t for t in counts if t.split(".")[0] in ("marts", "site")}
    assert set(manifest["tables"]) == exported
    for table, meta in manifest["tables"].items():
        parquet = home / "exports" / meta["file"]
        rows = duckdb.sql(f"SELECT count(*) FROM read_parquet('{parquet}')").fetchall()[0][0]
        assert rows == counts[table] == meta["rows"], table
    grid = manifest["sources"]["grid"]
    assert "CC BY 4.0" in grid["license"] and grid["attribution"] and grid["vintage"]
    assert manifest["code_revision"] and manifest["version"]


def test_quarantine_accounting_per_payload(offline_home):
    home, _ = offline_home
    ledgers = list((home / "landing").glob("*/_ledger/*.json"))
    assert ledgers
    for ledger in ledgers:
        outcome = json.loads(ledger.read_text())
        if outcome["status"] != "landed":
            continue
        for entity, parsed in outcome["parsed"].items():
            assert outcome["landed"][entity] + outcome["quarantined"][entity] == parsed, (ledger, entity)
        source = ledger.parent.parent.name
        qfile = home / "landing" / "_quarantine" / source / ledger.name.replace(".json", ".parquet")
        if qfile.exists():
            distinct = duckdb.sql(
                f"SELECT entity, count(DISTINCT record_index) FROM read_parquet('{qfile}') GROUP BY 1").fetchall()
            for entity, n in distinct:
                assert outcome["quarantined"][entity] == n


def test_measurements_refuse_a_second_row_with_the_same_key(offline_home, tmp_path):
    """The published table keeps its enforced primary key, one row per (source, source_run_id,
    sample_index): the key the `unique_key` data test reads from the catalogue on DuckDB (Spark,
    enforcing no keys, groups the rows instead)."""
    home, _ = offline_home
    db = tmp_path / "copy.duckdb"
    shutil.copyfile(home / "benchmarks.duckdb", db)
    con = duckdb.connect(str(db))
    try:
        keys = con.execute("SELECT constraint_column_names FROM duckdb_constraints() WHERE schema_name = 'marts' "
                           "AND table_name = 'fct_speed_measurements' AND constraint_type = 'PRIMARY KEY'").fetchall()
        assert keys == [(["source", "source_run_id", "sample_index"],)]
        with pytest.raises(duckdb.ConstraintException, match="[Dd]uplicate key"):
            con.execute("INSERT INTO marts.fct_speed_measurements SELECT * FROM marts.fct_speed_measurements LIMIT 1")
    finally:
        con.close()


def test_openrouter_dynamic_prices_are_landed_as_no_fixed_price_not_published(offline_home):
    # OpenRouter's documented "-1" (the router sets the price): a known "no fixed price", landed
    # and counted, kept out of the price facts, not a quarantine failure
    home, _ = offline_home
    con = duckdb.connect(str(home / "benchmarks.duckdb"), read_only=True)
    try:
        in_marts = con.execute("SELECT count(*) FROM marts.fct_api_prices WHERE openrouter_id = 'openrouter/auto'").fetchone()[0]
        in_quarantine = con.execute(
            "SELECT count(*) FROM audit.quarantine WHERE source = 'openrouter' AND record LIKE '%openrouter/auto%'").fetchone()[0]
        landed = duckdb.connect().execute(
            "SELECT count(*), bool_or(has_fixed_price) FROM read_parquet(?, union_by_name=true) "
            "WHERE openrouter_id = 'openrouter/auto'",
            [str(home / "landing" / "openrouter" / "models" / "*.parquet")]).fetchone()
    finally:
        con.close()
    assert in_marts == 0
    assert in_quarantine == 0
    assert landed[0] > 0 and landed[1] is False


def test_rebuild_from_raw_alone_is_identical(offline_home, tmp_path):
    home, _ = offline_home
    before = row_hashes(home / "benchmarks.duckdb")
    clone = tmp_path / "warehouse"
    shutil.copytree(home / "raw", clone / "raw")  # raw only: no landing, no published file
    proc = run_benchwh(clone, "refresh", "--no-fetch")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert file_sha256(clone / "benchmarks.duckdb") is not None
    after = row_hashes(clone / "benchmarks.duckdb")
    assert after == before


def test_dbt_unit_tests_all_ran_in_the_ci_build(offline_home):
    """The CI build runs every dbt unit test (nightly builds skip them); the build passed, so they passed."""
    import re

    from orchestration.manifest import MANIFEST_PATH, prepare_manifest

    home, _ = offline_home
    prepare_manifest()
    manifest = json.loads(MANIFEST_PATH.read_text())
    declared = len(manifest.get("unit_tests", {}))
    log = max((home / "logs").glob("dbt-*.log"), key=lambda p: p.stat().st_mtime).read_text()
    ran = re.search(r"Finished running .*?(\d+) unit tests", log)
    assert declared > 0 and ran is not None
    assert int(ran.group(1)) == declared
    assert "ERROR=0" in log and not re.search(r"\bFAIL=[1-9]", log)


def test_status_reports_resolution_per_source_and_what_to_map(offline_home):
    """The resolution report (issue #15): shares resolved per speed source, the top unresolved
    names with their closest match and the alias line that would map each."""
    home, _ = offline_home
    proc = run_benchwh(home, "status", "--json")
    assert proc.returncode == 0, proc.stderr
    resolution = json.loads(proc.stdout)["resolution"]
    con = duckdb.connect(str(home / "benchmarks.duckdb"), read_only=True)
    try:
        expected = con.execute("""
            select source, count(distinct source_run_id) from marts.fct_speed_measurements group by 1""").fetchall()
        unresolved = con.execute("""
            select count(*) from audit.unresolved_names where kind in ('hardware', 'model', 'quant')""").fetchone()[0]
    finally:
        con.close()
    assert {(s["source"], s["n_runs"]) for s in resolution["shares"]} == set(expected)
    assert all(0 <= s["hardware_resolved_share"] <= 1 and 0 <= s["model_resolved_share"] <= 1 for s in resolution["shares"])
    top = resolution["top_unresolved"]
    assert len(top) == min(10, unresolved)
    assert [u["occurrences"] for u in top] == sorted((u["occurrences"] for u in top), reverse=True)
    for u in top:
        if u["closest_match"] and u["raw_name"] != "(missing)":
            seed = {"hardware": "hardware_aliases.csv", "model": "model_aliases.csv", "quant": "quantization_aliases.csv"}[u["kind"]]
            assert u["alias_line"].startswith(f'{seed}: "{u["raw_name"]}",{u["closest_match"]},')
    text = run_benchwh(home, "status")
    assert text.returncode == 0 and "resolved" in text.stdout and "hardware" in text.stdout


def test_publish_metadata_carries_the_resolution_report(offline_home):
    import dagster as dg

    home, _ = offline_home
    instance = dg.DagsterInstance.from_config(str(home / "dagster"))
    event = instance.get_latest_materialization_event(dg.AssetKey(["publish", "benchmarks_duckdb"]))
    metadata = event.asset_materialization.metadata
    shares = metadata["resolved_share_by_source"].value
    assert {s["source"] for s in shares} >= {"localscore", "runfile"}
    assert isinstance(metadata["top_unresolved_names"].value, list)
