"""Demo data is marked and replaced by live data; one freshness verdict and one count vocabulary."""
from __future__ import annotations

import json
import re

import duckdb
import pytest

from tests.helpers.faults import site  # noqa: F401 (fixture)
from tests.helpers.pipeline import run_benchwh

pytestmark = pytest.mark.slow

DEMO_LOCALSCORE_RUN = "900101"  # a synthetic LocalScore run of the offline recording


def test_an_offline_build_is_marked_demo_and_judged_as_of_its_recording(warehouse_copy):
    home = warehouse_copy
    manifest = json.loads((home / "exports" / "manifest.json").read_text())
    assert {"openrouter", "localscore", "runs"} <= set(manifest["demo_data"])
    assert manifest["sources"]["openrouter"]["demo"] is True

    status = run_benchwh(home, "status", "--json")
    report = json.loads(status.stdout)
    assert report["published"]["demo_data"] == manifest["demo_data"]
    listed = json.loads(run_benchwh(home, "sources", "list", "--json").stdout)["sources"]
    # the same verdict in both places, judged as of the recording (the blocking check passed too)
    for name in ("openrouter", "grid"):
        assert listed[name]["freshness"] == report["sources"][name]["freshness"] == "fresh"
        assert listed[name]["freshness_as_of"].startswith("recording ")
    text = run_benchwh(home, "status").stdout
    assert "holds DEMO data" in text and "1 versions" not in text
    assert "as of its recording" in text


def test_a_live_refresh_drops_the_demo_data_and_publishes_none_of_it(warehouse_copy, site):  # noqa: F811
    home = warehouse_copy
    _srv, _state, env = site
    proc = run_benchwh(home, "refresh", "--source", "openrouter", "--source", "grid", **env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "dropped" in proc.stderr and "demo payloads" in proc.stderr
    # counts: tables in the file and tables exported are told apart, dbt nodes by their kind
    assert "tables published (" in proc.stdout and "exported as Parquet" in proc.stdout
    assert " seeds built" in proc.stderr and "tests passed" in proc.stderr
    # progress, as plain lines (not a terminal): responses fetched, dbt nodes done of total
    assert re.search(r"openrouter: fetching: \d+ responses|dbt: (\d+)/\1 nodes done", proc.stderr)
    assert re.search(r"dbt: (\d+)/\1 nodes done", proc.stderr) and "loading the pipeline" in proc.stderr

    manifest = json.loads((home / "exports" / "manifest.json").read_text())
    assert manifest["demo_data"] == []
    con = duckdb.connect(str(home / "benchmarks.duckdb"), read_only=True)
    try:
        demo_rows = con.execute("SELECT count(*) FROM marts.fct_speed_measurements WHERE source_run_id = ?",
                                [DEMO_LOCALSCORE_RUN]).fetchone()[0]
        prices = con.execute("SELECT count(*) FROM marts.fct_api_prices").fetchone()[0]
    finally:
        con.close()
    assert demo_rows == 0 and prices > 0
    assert "holds DEMO data" not in run_benchwh(home, "status").stdout
