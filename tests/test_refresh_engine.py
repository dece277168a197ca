"""`--engine` / BENCHWH_ENGINE (issue 18): an unknown engine is one line and exit 2, before any
work; a Spark build's Parquet tables become the DuckDB build file with the types and keys of the
dbt contracts (publish/spark_build.py), so a Spark refresh publishes the usual file and exports."""
from __future__ import annotations

import json

import duckdb
import pytest

from publish.spark_build import assemble_duckdb, empty_landing_schemas, spark_tables, spark_type
from tests.helpers.pipeline import run_benchwh


@pytest.mark.parametrize("args, env", [(["--engine", "oracle"], {}), ([], {"BENCHWH_ENGINE": "oracle"})])
def test_an_unknown_engine_is_one_line(tmp_path, args, env):
    proc = run_benchwh(tmp_path / "home", "refresh", "--offline", *args, timeout=120, **env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "oracle" in lines[0] and "duckdb, spark" in lines[0], proc.stderr
    assert not (tmp_path / "home" / "landing").exists()


def test_bad_executor_settings_are_named(tmp_path):
    proc = run_benchwh(tmp_path / "home", "status", timeout=120, BENCHWH_EXECUTOR="threads",
                       BENCHWH_MAX_CONCURRENT="0")
    assert proc.returncode == 2
    assert "BENCHWH_EXECUTOR='threads'" in proc.stderr and "BENCHWH_MAX_CONCURRENT='0'" in proc.stderr


def _manifest(path):
    node = {
        "resource_type": "model", "schema": "marts", "name": "fct_x", "alias": "fct_x",
        "config": {"contract": {"enforced": True}},
        "constraints": [{"type": "primary_key", "columns": ["id"]}],
        "columns": {"id": {"name": "id", "data_type": "integer", "constraints": [{"type": "not_null"}]},
                    "price": {"name": "price", "data_type": "decimal(18, 6)", "constraints": []},
                    "at": {"name": "at", "data_type": "timestamp", "constraints": []}},
    }
    empty = {**node, "name": "fct_empty", "alias": "fct_empty"}
    path.write_text(json.dumps({"nodes": {"model.p.fct_x": node, "model.p.fct_empty": empty}}))


def test_spark_parquet_tables_become_the_duckdb_build(tmp_path):
    spark = tmp_path / "spark"
    folder = spark / "tables" / "marts.db" / "fct_x"
    folder.mkdir(parents=True)
    (spark / "tables" / "marts.db" / "fct_empty").mkdir()
    (spark / "tables" / "site.db" / "page").mkdir(parents=True)
    con = duckdb.connect()
    # as Spark writes them: wider types than the contract's, part files
    con.execute(f"COPY (SELECT 1::BIGINT AS id, 2.5::DOUBLE AS price, TIMESTAMP '2026-11-30 07:00' AS at) "
                f"TO '{folder}/part-00000.parquet' (FORMAT parquet)")
    con.execute(f"COPY (SELECT 'a' AS k) TO '{spark}/tables/site.db/page/part-00000.parquet' (FORMAT parquet)")
    con.close()
    manifest = tmp_path / "manifest.json"
    _manifest(manifest)
    assert sorted(spark_tables(spark)) == ["marts.fct_empty", "marts.fct_x", "site.page"]

    build = tmp_path / "build.duckdb"
    rows = assemble_duckdb(spark, build, manifest)
    assert rows == {"marts.fct_empty": 0, "marts.fct_x": 1, "site.page": 1}
    con = duckdb.connect(str(build), read_only=True)
    try:
        types = con.execute("SELECT column_name, data_type, is_nullable FROM information_schema.columns "
                            "WHERE table_name = 'fct_x' ORDER BY ordinal_position").fetchall()
        assert types == [("id", "INTEGER", "NO"), ("price", "DECIMAL(18,6)", "YES"), ("at", "TIMESTAMP", "YES")]
        keys = con.execute("SELECT constraint_column_names FROM duckdb_constraints() "
                           "WHERE table_name = 'fct_x' AND constraint_type = 'PRIMARY KEY'").fetchall()
        assert keys == [(["id"],)]
        assert con.execute("SELECT * FROM site.page").fetchall() == [("a",)]
    finally:
        con.close()


def test_landing_entities_without_data_are_declared_to_spark(tmp_path):
    """Spark skips `_schema.parquet`, so an entity with only its placeholder gets its columns passed."""
    con = duckdb.connect()
    for entity, with_data in (("grid/intensity", False), ("runs/runs", True), ("_quarantine/grid", False)):
        folder = tmp_path / "landing" / entity
        folder.mkdir(parents=True)
        select = ("select 'a'::varchar as area, 2024::bigint as year, 1.5::double as g, "
                  "timestamp '2024-01-01' as at, ['x']::varchar[] as tags, 1.25::decimal(9,2) as d limit 0")
        con.execute(f"copy ({select}) to '{folder / '_schema.parquet'}' (format parquet)")
        if with_data:
            con.execute(f"copy (select 1 as x) to '{folder / 'batch-1.parquet'}' (format parquet)")
    con.close()
    assert empty_landing_schemas(tmp_path) == {
        "grid.intensity": "`area` string, `year` bigint, `g` double, `at` timestamp, `tags` array<string>, "
                          "`d` decimal(9,2)"}
    with pytest.raises(ValueError, match="no Spark type"):
        spark_type("INTERVAL")
