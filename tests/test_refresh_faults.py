"""Faults never damage the last good warehouse: sha256 unchanged, one-line reason, no .wal, no
abandoned build published, and the next good refresh cleans up and publishes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import duckdb
import pytest

from tests.loopback import LoopbackServer, Reply
from tests.pipeline_helpers import BENCHWH, benchwh_env, file_sha256, run_benchwh
from tests.test_refresh_live import Resource, recorded_body

pytestmark = pytest.mark.slow

SOURCES = ("--source", "openrouter", "--source", "grid")


@pytest.fixture(scope="module")
def site():
    """A loopback OpenRouter + grid whose /models answer the test can change."""
    state = {"models": Resource(recorded_body("openrouter"), '"m1"', "application/json")}
    with LoopbackServer() as srv:
        srv.route("/api/v1/models", lambda req: state["models"](req))
        srv.route("/data/grid.csv", Resource(recorded_body("grid"), '"g1"', "text/csv"))
        env = {"BENCHWH_OPENROUTER_URL": srv.url + "/api/v1", "BENCHWH_GRID_URL": srv.url + "/data/grid.csv"}
        yield srv, state, env


@pytest.fixture(scope="module")
def published(offline_warehouse, tmp_path_factory):
    """A private copy of the offline warehouse; the faults below share it, in order."""
    import shutil

    home = tmp_path_factory.mktemp("faults") / "warehouse"
    shutil.copytree(offline_warehouse, home, ignore=shutil.ignore_patterns("dagster", "*.lock"))
    return home


def assert_failed_cleanly(home, proc, sha_before, expect: str):
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("benchwh: refresh failed:"), proc.stderr[-2000:]
    assert expect in last, last
    assert "Traceback" not in proc.stderr
    assert file_sha256(home / "benchmarks.duckdb") == sha_before
    assert not (home / "benchmarks.duckdb.wal").exists()
    assert not list((home / "build").glob("*.duckdb")), "the abandoned build was left behind"


def models_payload(mutate) -> bytes:
    doc = json.loads(recorded_body("openrouter"))
    mutate(doc)
    return json.dumps(doc).encode()


@pytest.mark.parametrize("name, reply, expect", [
    ("5xx", Reply(503, b"down"), "503"),
    ("zero rows", Reply(200, models_payload(lambda d: d.update(data=[])), {"ETag": '"z"'}), "zero"),
    ("missing id", Reply(200, models_payload(lambda d: d["data"][0].pop("id")), {"ETag": '"x"'}), "id"),
])
def test_source_faults(published, site, name, reply, expect):
    srv, state, env = site
    home = published
    before = file_sha256(home / "benchmarks.duckdb")
    state["models"] = lambda req: reply
    try:
        proc = run_benchwh(home, "refresh", *SOURCES, **env)
    finally:
        state["models"] = Resource(recorded_body("openrouter"), '"m1"', "application/json")
    assert_failed_cleanly(home, proc, before, expect)


def test_dbt_model_error(published, site):
    home = published
    before = file_sha256(home / "benchmarks.duckdb")
    broken = home / "landing" / "grid" / "intensity" / "zz-broken.parquet"
    broken.write_bytes(b"this is not parquet")
    try:
        proc = run_benchwh(home, "refresh", "--no-fetch")
    finally:
        broken.unlink()
    assert_failed_cleanly(home, proc, before, "dbt")


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


def test_sigkill_mid_build_then_recovery(published, site):
    _, _, env = site
    home = published
    before = file_sha256(home / "benchmarks.duckdb")
    proc = subprocess.Popen([BENCHWH, "refresh", "--no-fetch"], env=benchwh_env(home, **env),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not list((home / "build").glob("*.duckdb")):
        time.sleep(0.05)
    assert list((home / "build").glob("*.duckdb")), "the build never started"
    time.sleep(1.0)  # let dbt write into it
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert file_sha256(home / "benchmarks.duckdb") == before
    assert not (home / "benchmarks.duckdb.wal").exists()
    assert list((home / "build").iterdir()), "expected the killed run's build to be left for cleanup"

    good = run_benchwh(home, "refresh", *SOURCES, **env)
    assert good.returncode == 0, good.stderr[-3000:]
    assert "cleaned" in good.stderr
    assert not list((home / "build").glob("*.duckdb"))
    assert file_sha256(home / "benchmarks.duckdb") != before


def test_stale_source_blocks_publish_when_its_fetch_lands_nothing(warehouse_copy):
    """Upstream changed shape: the payload is rejected, the last good prices are weeks old -> no publish."""
    home = warehouse_copy
    before = file_sha256(home / "benchmarks.duckdb")
    with LoopbackServer() as srv:
        srv.route("/api/v1/models", Reply(200, b'{"error": "moved to /v2"}', {"Content-Type": "application/json"}))
        proc = run_benchwh(home, "refresh", "--source", "openrouter", BENCHWH_OPENROUTER_URL=srv.url + "/api/v1")
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert "freshness" in last and "openrouter" in last, last
    assert file_sha256(home / "benchmarks.duckdb") == before
