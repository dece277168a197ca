"""A dbt model error and a dbt test failure never damage the last good warehouse."""
from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from tests.helpers.faults import assert_failed_cleanly, published, site  # noqa: F401 (fixtures)
from tests.helpers.pipeline import file_sha256, run_benchwh

pytestmark = pytest.mark.slow


def test_dbt_model_error(published, site):
    home = published
    before = file_sha256(home / "benchmarks.duckdb")
    broken = home / "landing" / "grid" / "intensity" / "zz-broken.parquet"
    broken.write_bytes(b"this is not parquet")
    try:
        proc = run_benchwh(home, "refresh", "--no-fetch", BENCHWH_DEBUG="1")
    finally:
        broken.unlink()
    # BENCHWH_DEBUG=1: the failing step's traceback, then the same one line as without it
    assert "Traceback of the failing step" in proc.stderr
    assert_failed_cleanly(home, proc, before, "dbt", traceback_ok=True)
    last = proc.stderr.strip().splitlines()[-1]
    # the root cause from run_results.json, not dbt's "Runtime Error in model ..." wrapper line
    assert "parquet" in last.lower() and "Error in model" not in last, last
    # where to look next: the run id and the dbt log, which exists
    run_id, log = re.search(r"\(run ([0-9a-f-]{36}), log (\S+)\)", last).groups()
    assert Path(log).is_file() and run_id in Path(log).name
    assert not list((home / "build").iterdir()), "the failed build's files and target were left behind"


def test_dbt_test_failure(published, site):
    home = published
    before = file_sha256(home / "benchmarks.duckdb")
    folder = home / "landing" / "grid" / "intensity"
    latest = max((p for p in folder.glob("*.parquet") if not p.name.startswith("_")), key=lambda p: p.stat().st_mtime)
    bad = folder / "zz-implausible.parquet"
    duckdb.sql(f"""
        COPY (SELECT * REPLACE ('Testland' AS area, 5000.0 AS gco2_per_kwh) FROM read_parquet('{latest}') LIMIT 1)
        TO '{bad}' (FORMAT parquet)""")
    try:
        proc = run_benchwh(home, "refresh", "--no-fetch")
    finally:
        bad.unlink()
    assert_failed_cleanly(home, proc, before, "assert_grid_intensity_is_physical")
