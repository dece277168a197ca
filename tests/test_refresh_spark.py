"""`benchwh refresh --offline --engine spark` (issue 18), run by its path: the same job and checks
with dbt on Spark local mode publish exports whose Parquet files hold the rows of the DuckDB
publication of the same landing. Runs in `make test-spark`; skipped without pyspark, dbt-spark or
Java (`make spark` installs them)."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import duckdb
import pytest

from tests.helpers.pipeline import run_benchwh

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

missing = [name for name in ("pyspark", "dbt.adapters.spark") if importlib.util.find_spec(name.split(".")[0]) is None
           or (name == "dbt.adapters.spark" and importlib.util.find_spec(name) is None)]
if shutil.which("java") is None:
    missing.append("java")
if "type: spark" not in (Path(__file__).resolve().parent.parent / "dbt_project" / "profiles.yml").read_text():
    missing.append("the dbt profile's spark target")
if missing:
    pytest.skip(f"Spark not installed ({', '.join(missing)}): `make spark`", allow_module_level=True)


def export_rows(home, table: str) -> list[tuple]:
    con = duckdb.connect()
    try:
        rows = con.execute(f"SELECT * FROM read_parquet('{home / 'exports' / (table + '.parquet')}')").fetchall()
    finally:
        con.close()
    return sorted(rows, key=repr)


@pytest.fixture(scope="module")
def homes(offline_warehouse, tmp_path_factory):
    """The DuckDB side is the suite's shared offline refresh; the Spark side its own refresh."""
    home = tmp_path_factory.mktemp("engines") / "spark"
    proc = run_benchwh(home, "refresh", "--offline", "--engine", "spark", timeout=3000)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {"duckdb": (offline_warehouse, None), "spark": (home, proc)}


def test_a_spark_refresh_publishes_the_usual_file_and_exports(homes):
    home, proc = homes["spark"]
    assert "on spark" in proc.stderr and "spark:" in proc.stderr
    assert (home / "benchmarks.duckdb").exists()
    assert not list((home / "build").glob("*-spark")), "the Spark build folder stays behind"
    manifest = json.loads((home / "exports" / "manifest.json").read_text())
    want = json.loads((homes["duckdb"][0] / "exports" / "manifest.json").read_text())
    assert sorted(manifest["tables"]) == sorted(want["tables"])


def test_spark_exports_hold_the_rows_of_the_duckdb_exports(homes):
    duck, spark = homes["duckdb"][0], homes["spark"][0]
    tables = sorted(p.stem for p in (duck / "exports").glob("*.parquet"))
    assert tables and tables == sorted(p.stem for p in (spark / "exports").glob("*.parquet"))
    differ = [t for t in tables if export_rows(duck, t) != export_rows(spark, t)]
    assert not differ, f"{len(differ)} of {len(tables)} exports differ: {differ[:5]}"
